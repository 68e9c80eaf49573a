//! The `vigil` binary: parses the command line, loads the configuration and
//! starts the console, a headless `exec`, a `resume`, the `sessions` list, or
//! a single `tool` call.

use std::process::ExitCode;

use clap::Parser;
use vigil::cli::args::Cli;
use vigil::cli::headless::exit;
use vigil::cli::run::run;
use vigil::config::{Config, Overrides};

fn main() -> ExitCode {
    // The sandbox helper runs before anything else: one thread, no runtime.
    if let Some(code) = vigil::exec::sandbox::helper::main_if_requested() {
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    keep_memory_private();
    let cli = Cli::parse();
    let loaded =
        Config::load(cli.config.as_deref()).and_then(|c| vigil::cli::check_config(&c).map(|()| c));
    let mut config = match loaded {
        Ok(c) => c,
        Err(e) => {
            eprintln!("vigil: {e}");
            return ExitCode::from(exit::USAGE as u8);
        }
    };
    config.apply(Overrides {
        base_url: cli.base_url.clone(),
        model: cli.model.clone(),
        api_key: cli.api_key.clone(),
        data_dir: cli.data_dir.clone(),
        tmux: cli.tmux.clone(),
        no_tmux: cli.no_tmux,
        tmux_socket: cli.tmux_socket.clone(),
    });
    // A target on the command line replaces the file's (either kind).
    if let Some(target) = cli.ssh.clone() {
        config.ssh.target = Some(target);
        config.container.name = None;
    }
    if let Some(name) = cli.container.clone() {
        config.container.name = Some(name);
        config.ssh.target = None;
    }
    vigil::redact::set_global(vigil::redact::Redactor::new(config.api_key()));
    let _log_guard = init_logging(&config, cli.verbose);
    if std::env::args().any(|a| a == "--api-key" || a.starts_with("--api-key=")) {
        let warning = "--api-key on the command line is visible to every user of this \
                       machine (ps, /proc/PID/cmdline); prefer VIGIL_API_KEY in the environment";
        eprintln!("vigil: {warning}");
        tracing::warn!("{warning}");
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("vigil: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = runtime.block_on(run(cli, config));
    // Do not wait for blocking reads (stdin) that may still be parked.
    runtime.shutdown_timeout(std::time::Duration::from_millis(200));
    ExitCode::from(code.clamp(0, 255) as u8)
}

/// vigil's own processes hold the model key (in their environment and
/// memory): mark this one not dumpable, so that a command of the same user
/// cannot read `/proc/<pid>/environ`, `mem` or `maps`, nor attach a
/// debugger, and a crash leaves no core file with the key in it. The
/// programs vigil starts are exec'd and dumpable again; root keeps access
/// (CAP_SYS_PTRACE). Best effort: a failure leaves the default.
fn keep_memory_private() {
    // SAFETY: prctl with constant arguments, on this process only.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
}

/// Log to `<data dir>/vigil.log`; `VIGIL_LOG` sets the filter, else `-v`
/// (debug) / `-vv` (trace), else `info`. Every line passes the redactor.
fn init_logging(
    config: &Config,
    verbose: u8,
) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = config.data_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::never(&dir, "vigil.log");
    let (writer, guard) = tracing_appender::non_blocking(appender);
    let level = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("VIGIL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(move || vigil::redact::RedactingWriter::new(writer.clone()))
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}
