//! Issue 35: what a command that runs unasked may read is an allow-list.
//!
//! Stores nobody lists (a hub token, a history with an exported key, a
//! Kerberos ticket cache in /tmp, the X11 cookie, RubyGems and rclone
//! credentials, a cloud config, a browser cookie database, a `.env` outside
//! the tree opened under a computed name, a root-only file under /etc, an
//! environment variable of an unknown name) through the real `vigil exec`
//! against the scripted model, under `by_effect` (plain and in a managed
//! tmux pane), `auto_low`, and `ask` with a policy `allow` rule for the
//! program: none of their bytes (nor their base64) reaches the model. As
//! root and as an ordinary user (uid 65534 through `setpriv`). Each row has
//! a control that reads it without vigil, and one run with `approve_all`
//! shows the harness sees a leak when there is one.
//!
//! Two runs vigil makes unasked after a trial have their own rows: a
//! pane's variable set by a start-up file under the pane's shell replay
//! ([`pane`]), and a build run for real inside its outputs that does more
//! than its trial did ([`outputs`]).

mod bounds;
#[path = "../common/mod.rs"]
mod common;
mod outputs;
mod pane;
mod property;
mod world;

use base64::Engine;

use world::{MARKER, NOBODY, World, config, leaked, scripted};
/// Run every read of `world` in `mode`; the rows that let something out.
async fn through_vigil(world: &World, mode: &str, tmux: bool) -> Vec<String> {
    let reads = world.reads();
    let commands: Vec<String> = reads.iter().map(|(_, c)| c.clone()).collect();
    let server = scripted(&commands).await;
    let tmux_server = common::Server {
        socket: common::socket(),
    };
    let cfg = config(mode, tmux);
    let mut failures = Vec::new();
    for (i, (class, command)) in reads.iter().enumerate() {
        let before = server.requests().len();
        let out = world.exec(&server, i, &cfg, &tmux_server.socket);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if stdout.contains(MARKER) || server.requests().len() == before {
            failures.push(format!(
                "[{class}] {command} ({mode}): exit {:?}\n{stdout}\n{}",
                out.status.code(),
                String::from_utf8_lossy(&out.stderr)
            ));
        }
    }
    if let Some(sent) = leaked(&server) {
        failures.push(format!("({mode}) a store reached the model: {sent}"));
    }
    failures
}

/// Every row's control: read without vigil, the store is there.
fn controls_hold(world: &World) {
    for (class, command) in world.reads() {
        let out = world.plain(&command);
        let text = String::from_utf8_lossy(&out.stdout);
        let seen = text.contains(MARKER)
            || text.contains(
                &base64::engine::general_purpose::STANDARD
                    .encode(format!("export AWS_SECRET_ACCESS_KEY={MARKER}\n").as_bytes())[..20],
            );
        assert!(
            seen,
            "[{class}] the control cannot read it: {command}: {text}"
        );
    }
}

fn run_modes(uid: Option<u32>, modes: &[(&str, bool)]) {
    let world = World::new(uid);
    controls_hold(&world);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let mut failures = Vec::new();
    for (mode, tmux) in modes {
        failures.extend(rt.block_on(through_vigil(&world, mode, *tmux)));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n---\n"));
}

#[test]
fn no_unlisted_store_reaches_the_model_as_root() {
    run_modes(
        None,
        &[
            ("by_effect", false),
            ("by_effect", true),
            ("auto_low", false),
            ("allow rule", false),
        ],
    );
}

#[test]
fn no_unlisted_store_reaches_the_model_as_an_ordinary_user() {
    run_modes(
        Some(NOBODY),
        &[
            ("by_effect", false),
            ("auto_low", false),
            ("allow rule", false),
        ],
    );
}

#[test]
fn the_harness_sees_a_store_that_gets_through() {
    let world = World::new(None);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let command = world.fill("cat ~/.config/hub");
    let server = rt.block_on(scripted(std::slice::from_ref(&command)));
    let socket = common::socket();
    let out = world.exec(&server, 0, &config("approve_all", false), &socket);
    assert!(out.status.success(), "{out:?}");
    assert!(leaked(&server).is_some(), "the harness missed a leak");
}
