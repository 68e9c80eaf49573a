//! Running one hook once: a command (in its own process group, killed at
//! its time limit, with the filtered tool environment: no API key, no
//! secrets; [`vigil_exec::process`] and [`vigil_exec::env`], as the
//! `[notify] command` runs) or an HTTP POST (reqwest, with a time limit).
//! It returns what came back and never interprets it.

use std::time::Duration;

use vigil_config::hooks::HookCommand;

/// What a command hook left behind.
#[derive(Debug, Clone)]
pub struct Exited {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

/// Run `command` with `input` on stdin; Err: it could not start or ran
/// past `timeout` (its process group is killed).
pub async fn command(
    command: &HookCommand,
    input: Vec<u8>,
    timeout: Duration,
) -> Result<Exited, String> {
    let argv = command.argv();
    let mut cmd = std::process::Command::new(&argv[0]);
    cmd.args(&argv[1..]);
    vigil_exec::env::apply_tool_env(&mut cmd);
    let out = vigil_exec::process::run(cmd.into(), Some(input), Some(timeout), None)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Exited {
        code: out.exit_code,
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    })
}

/// POST `input` (JSON) to `url`; Ok: the body of a 2xx answer.
pub async fn post(url: &str, input: Vec<u8>, timeout: Duration) -> Result<String, String> {
    let client = vigil_tools::http::client_builder()
        .timeout(timeout)
        .connect_timeout(timeout)
        .build()
        .map_err(|e| e.to_string())?;
    let answer = client
        .post(url)
        .header("content-type", "application/json")
        .body(input)
        .send()
        .await
        .map_err(|e| describe(&e, timeout))?;
    let status = answer.status();
    let body = answer.text().await.map_err(|e| describe(&e, timeout))?;
    if !status.is_success() {
        return Err(format!(
            "answered HTTP {status}: {}",
            super::decide::clip(&body)
        ));
    }
    Ok(body)
}

fn describe(e: &reqwest::Error, timeout: Duration) -> String {
    if e.is_timeout() {
        format!("no answer within {} s", timeout.as_secs())
    } else {
        format!("request failed: {e}")
    }
}
