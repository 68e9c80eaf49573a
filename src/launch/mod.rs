//! Starting and reaching agent processes: [`spawn`] starts a session's
//! agent in its own session and waits for its ready line, [`agentlogs`]
//! keeps their logs pruned, [`remote`] reaches agents on another machine
//! through ssh. It never talks the protocol itself (that is
//! `vigil_client`) and never renders.

pub mod agentlogs;
pub mod remote;
pub mod spawn;
