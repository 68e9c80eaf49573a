//! The `vigil` binary: parses the command line, loads the configuration and
//! starts the console, a headless `exec`, a `resume`, the `sessions` list, or
//! a single `tool` call.

use std::process::ExitCode;

use vigil::cli::args::Cli;
use vigil::cli::headless::exit;
use vigil::cli::run::run;
use vigil::config::{Config, Overrides};

fn main() -> ExitCode {
    unblock_signals();
    // The sandbox helper runs before anything else: one thread, no runtime.
    if let Some(code) = vigil::exec::sandbox::helper::main_if_requested() {
        return ExitCode::from(code.clamp(0, 255) as u8);
    }
    keep_memory_private();
    hide_api_key_from_argv();
    let cli = Cli::parse_args();
    let loaded = vigil::startup::configload::load(cli.config.as_deref());
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
    vigil::agent::record::redact::set_global(vigil::agent::record::redact::Redactor::new(
        config.api_key(),
    ));
    let _log_guard = init_logging(&config, cli.verbose);
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
    // A throwaway view given up on as the runtime stopped is ending its
    // processes: leave after it (bounded by its grace).
    vigil::exec::stopping::settle();
    ExitCode::from(code.clamp(0, 255) as u8)
}

/// vigil's own processes hold the model key (in their environment and
/// memory): mark this one not dumpable, so that a command of the same user
/// cannot read `/proc/<pid>/environ`, `mem` or `maps`, nor attach a
/// debugger, and a crash leaves no core file with the key in it. The
/// programs vigil starts are exec'd and dumpable again; root keeps access
/// (CAP_SYS_PTRACE). Best effort: a failure leaves the default.
/// A key given with `--api-key` is in `/proc/PID/cmdline`, which `ps`
/// shows to every user and to every command vigil runs (a low `ps -f`
/// would hand it to the model). Start again at once with the key moved to
/// `VIGIL_API_KEY` (the environment is private: vigil is not dumpable) and
/// the flag gone. Only words before a `--` count; on failure vigil goes on
/// and warns.
fn hide_api_key_from_argv() {
    use std::os::unix::process::CommandExt;
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    let end = args.iter().position(|a| a == "--").unwrap_or(args.len());
    let mut key = None;
    let mut kept = Vec::with_capacity(args.len());
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        if i < end && key.is_none() {
            if a == "--api-key" && i + 1 < end {
                key = Some(args[i + 1].clone());
                i += 2;
                continue;
            }
            if let Some(v) = a.to_str().and_then(|s| s.strip_prefix("--api-key=")) {
                key = Some(v.into());
                i += 1;
                continue;
            }
        }
        kept.push(a.clone());
        i += 1;
    }
    let Some(key) = key else { return };
    eprintln!(
        "vigil: --api-key on the command line is visible to every user of this machine (ps); \
         moved to the environment, restarting without it (prefer VIGIL_API_KEY)"
    );
    let err = std::process::Command::new("/proc/self/exe")
        .arg0(&kept[0])
        .args(&kept[1..])
        .env("VIGIL_API_KEY", key)
        .exec();
    eprintln!("vigil: could not restart without --api-key ({err}); it stays visible in ps");
}

/// Take no blocked signals from the parent: a signal mask is inherited
/// across exec (through tmux too), and a parent that blocked SIGWINCH (a
/// profiler, a CI runner) left the console blind to every resize. Done
/// first, on the only thread, so every thread started later has it.
fn unblock_signals() {
    // SAFETY: an empty set built by sigemptyset, applied to this thread
    // before any other thread exists.
    unsafe {
        let mut none: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut none);
        libc::pthread_sigmask(libc::SIG_SETMASK, &none, std::ptr::null_mut());
    }
}

fn keep_memory_private() {
    // SAFETY: prctl with constant arguments, on this process only.
    unsafe { libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) };
}

/// Lines the log's writer thread may be behind before new ones are dropped.
/// The crate's default (128 000) is allocated and filled at every start:
/// about 5 ms in a debug build, for every `vigil` command that logs.
const LOG_LINES_BUFFERED: usize = 16_384;

/// Log to `<data dir>/vigil.log`; `VIGIL_LOG` sets the filter, else `-v`
/// (debug) / `-vv` (trace), else `info`. Every line passes the redactor.
fn init_logging(
    config: &Config,
    verbose: u8,
) -> Option<tracing_appender::non_blocking::WorkerGuard> {
    let dir = config.data_dir();
    std::fs::create_dir_all(&dir).ok()?;
    let appender = tracing_appender::rolling::never(&dir, "vigil.log");
    let (writer, guard) = tracing_appender::non_blocking::NonBlockingBuilder::default()
        .buffered_lines_limit(LOG_LINES_BUFFERED)
        .finish(appender);
    let level = match verbose {
        0 => "info",
        1 => "debug",
        _ => "trace",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("VIGIL_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(level));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(move || vigil::agent::record::redact::RedactingWriter::new(writer.clone()))
        .with_ansi(false)
        .try_init()
        .ok()?;
    Some(guard)
}
