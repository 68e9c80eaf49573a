//! What the agent tells the world outside the console: the tap on the
//! event stream every watcher hangs on ([`relay`]), the operator's
//! `[notify] command` for a waiting approval ([`notify`]) and OpenTelemetry
//! spans ([`otel`]). A watcher never delays an event and never decides.

pub mod notify;
pub mod otel;
pub mod relay;
