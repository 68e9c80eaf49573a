//! End-to-end: an agent on "another machine" reached through ssh's own
//! socket forwarding, not a new network protocol. A real sshd on 127.0.0.1
//! (the same user, so the agent's peer check lets the forwarded connection
//! in): `vigil ps user@host:port` lists the agent there, `vigil attach
//! user@host:port:ID` attaches through the ControlMaster and approves, and
//! leaving closes the forwarding and the master.

use super::common;
use super::console_support as support;

use std::time::Duration;

use common::sshd::{Sshd, processes};
use support::{BASE_CONFIG, Console};

const WAIT: Duration = Duration::from_secs(40);

#[test]
fn ps_and_attach_reach_an_agent_through_ssh() {
    let s = Sshd::start().unwrap_or_else(|why| panic!("cannot start a real sshd: {why}"));
    let config = format!("{BASE_CONFIG}{}", s.config_toml(&s.client_key));
    let c = Console::start("attach-ssh", &config, "", "");
    c.send("gate-me");
    c.wait("approvals (1)");
    // How the "remote" side runs vigil: this build, this test's runtime,
    // config and data folders (its log too stays in the test's folder).
    let remote_vigil = format!(
        "env VIGIL_RUNTIME_DIR={} XDG_CONFIG_HOME={} VIGIL_DATA_DIR={} {}",
        c.tmux.runtime_dir().display(),
        c.dir.path().join("xdg").display(),
        c.dir.path().join("data").display(),
        common::vigil_bin().display()
    );
    let (code, out, err) = c.run(&["ps", "--remote-vigil", &remote_vigil, &s.target()]);
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.contains(&format!("on {}:", s.target())), "{out}");
    let id = out
        .lines()
        .nth(2)
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no agent listed:\n{out}"))
        .to_string();
    assert!(out.contains("waiting"), "{out}");

    c.open(
        "remote",
        &format!("attach --remote-vigil '{remote_vigil}' {}:{id}", s.target()),
    );
    c.tmux.wait_text("remote", "approvals (1)", WAIT);
    c.tmux.answer("remote", "y");
    c.tmux.wait_text("remote", "TOOL SAID", WAIT);
    c.wait("TOOL SAID");
    assert!(c.work().join("gated-ran").exists(), "the approved call ran");
    let masters = || {
        let port = format!("-p {}", s.port);
        processes(|a| a.contains("ControlMaster=yes") && a.contains(&port))
    };
    assert_eq!(masters().len(), 1, "one master for the attach");
    // Leaving closes the forwarding and the master.
    c.tmux.keys("remote", &["C-c"]);
    c.tmux.wait_exit("remote", WAIT);
    let gone = common::eventually(Duration::from_secs(60), || {
        masters().is_empty().then_some(())
    });
    assert!(gone.is_some(), "ssh master left: {:?}", masters());
    // A session that is not there says so and how to list them.
    let (code, _, err) = c.run(&[
        "attach",
        "--remote-vigil",
        &remote_vigil,
        &format!("{}:no-such-session", s.target()),
    ]);
    assert_ne!(code, Some(0));
    assert!(
        err.contains("has no running agent for session no-such-session"),
        "{err}"
    );
}
