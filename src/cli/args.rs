//! The command line: what `vigil` accepts (clap), as plain data for the run
//! modes. It parses and never runs anything.

use std::path::PathBuf;

use clap::{CommandFactory, FromArgMatches, Parser, Subcommand};

use crate::cli::headless::exit;

#[derive(Parser, Debug)]
#[command(
    name = "vigil",
    version,
    about = "Supervise an AI agent that runs commands on real machines"
)]
pub struct Cli {
    /// Config file (default: the platform config dir's vigil/config.toml).
    #[arg(long, global = true, value_name = "PATH")]
    pub config: Option<PathBuf>,
    /// Base URL of an OpenAI-compatible API, e.g. http://127.0.0.1:11434/v1.
    #[arg(long, global = true, env = "VIGIL_BASE_URL", value_name = "URL")]
    pub base_url: Option<String>,
    /// Model name.
    #[arg(long, global = true, env = "VIGIL_MODEL")]
    pub model: Option<String>,
    /// API key (prefer the environment variable).
    #[arg(long, global = true, env = "VIGIL_API_KEY", hide_env_values = true)]
    pub api_key: Option<String>,
    /// Where sessions, spill files and the log go.
    #[arg(long, global = true, env = "VIGIL_DATA_DIR", value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
    /// Use the built-in scripted model (no server, no key needed).
    #[arg(long, global = true)]
    pub demo: bool,
    /// Approve every gated tool call without asking.
    #[arg(long, global = true)]
    pub auto_approve: bool,
    /// Run commands in a managed tmux pane (optionally naming its session).
    #[arg(long, global = true, value_name = "SESSION", num_args = 0..=1, conflicts_with = "no_tmux")]
    pub tmux: Option<Option<String>>,
    /// Run commands as plain local processes, even when tmux is installed.
    #[arg(long, global = true)]
    pub no_tmux: bool,
    /// vigil's private tmux server (socket name or path).
    #[arg(long, global = true, env = "VIGIL_TMUX_SOCKET", value_name = "NAME")]
    pub tmux_socket: Option<String>,
    /// More detail in the log file (-v debug, -vv trace); VIGIL_LOG wins.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Run commands on this SSH target (`user@host[:port]`) instead of here.
    #[arg(
        long,
        global = true,
        value_name = "USER@HOST[:PORT]",
        conflicts_with = "container"
    )]
    pub ssh: Option<String>,
    /// Run commands inside this running container (podman or docker).
    #[arg(long, global = true, value_name = "NAME")]
    pub container: Option<String>,
    /// No colours in the console (NO_COLOR=1 does the same).
    #[arg(long, global = true)]
    pub no_color: bool,
    #[command(subcommand)]
    pub command: Option<Command>,
}

/// The flags of every subcommand (clap `global`), by id.
const GLOBALS: [&str; 14] = [
    "config",
    "base_url",
    "model",
    "api_key",
    "data_dir",
    "demo",
    "auto_approve",
    "tmux",
    "no_tmux",
    "tmux_socket",
    "verbose",
    "ssh",
    "container",
    "no_color",
];

/// The global flags a command that runs no model still reads: the target
/// it runs tools on (`vigil tool`).
const TARGET: &[&str] = &[
    "config",
    "data_dir",
    "auto_approve",
    "tmux",
    "no_tmux",
    "tmux_socket",
    "ssh",
    "container",
    "verbose",
];

/// The subcommands that start no agent (by their path of names), with the
/// global flags they read: their help lists only those (and their own).
/// The others (the console, `exec`, `resume`, `__agent`) read them all.
const CLIENTS: [(&[&str], &[&str]); 13] = [
    (&["ps"], &["config", "verbose"]),
    (&["attach"], &["config", "verbose", "no_color"]),
    (&["stop"], &["config", "verbose"]),
    (&["sessions"], &["config", "data_dir", "verbose"]),
    (&["audit"], &["config", "data_dir", "verbose"]),
    (&["audit", "verify"], &["config", "data_dir", "verbose"]),
    (&["audit", "export"], &["config", "data_dir", "verbose"]),
    (
        &["policy"],
        &["config", "data_dir", "auto_approve", "verbose"],
    ),
    (&["policy", "check"], &["config", "auto_approve", "verbose"]),
    (
        &["policy", "replay"],
        &["config", "data_dir", "auto_approve", "verbose"],
    ),
    (&["tool"], TARGET),
    (&["tool", "list"], TARGET),
    (&["tool", "call"], TARGET),
];

impl Cli {
    /// The command line as clap describes it, with the flags a client
    /// subcommand does not read left out of its help.
    pub fn described() -> clap::Command {
        let mut cmd = Cli::command();
        // A subcommand's own copy of a global flag, hidden, takes the place
        // clap would give the global one (the value still reaches `Cli`).
        let hidden: Vec<clap::Arg> = cmd
            .get_arguments()
            .filter(|a| GLOBALS.contains(&a.get_id().as_str()))
            .map(|a| a.clone().global(false).hide(true))
            .collect();
        for (path, reads) in CLIENTS {
            let unread: Vec<clap::Arg> = hidden
                .iter()
                .filter(|a| !reads.contains(&a.get_id().as_str()))
                .cloned()
                .collect();
            cmd = with_args(cmd, path, &unread);
        }
        cmd
    }

    /// Parse the process's arguments (exits with clap's message on a
    /// mistake, and for `--help`).
    pub fn parse_args() -> Cli {
        let matches = Cli::described().get_matches();
        Cli::from_arg_matches(&matches).unwrap_or_else(|e| e.exit())
    }
}

/// `cmd` with `args` added to its subcommand at `path` (names, outermost
/// first).
fn with_args(cmd: clap::Command, path: &[&str], args: &[clap::Arg]) -> clap::Command {
    match path {
        [] => args.iter().fold(cmd, |c, a| c.arg(a.clone())),
        [first, rest @ ..] => cmd.mut_subcommand(*first, |sub| with_args(sub, rest, args)),
    }
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Run one task headless: print assistant text and tool events as lines.
    #[command(after_help = exit::TABLE)]
    Exec {
        /// What to ask the agent.
        prompt: String,
        /// Print every event as one JSON object per line (the AgentEvent
        /// serde form, tagged by "type").
        #[arg(long)]
        json: bool,
        /// Continue a recorded session (an id from `vigil sessions`, or "last").
        #[arg(long, value_name = "ID")]
        resume: Option<String>,
        /// With --resume: let the session rules read from its log approve
        /// (without it they approve nothing: the log is only a file).
        #[arg(long, requires = "resume")]
        trust_session_rules: bool,
    },
    /// Resume a recorded session: its conversation, tool history and standing
    /// approvals. In the console, or headless with --exec.
    #[command(after_help = exit::TABLE)]
    Resume {
        /// The session id (see `vigil sessions`).
        id: Option<String>,
        /// Resume the most recent session.
        #[arg(long, conflicts_with = "id")]
        last: bool,
        /// Run this prompt headless (like `vigil exec`) instead of the console.
        #[arg(long, value_name = "PROMPT")]
        exec: Option<String>,
        /// With --exec: one JSON event per line.
        #[arg(long, requires = "exec")]
        json: bool,
        /// With --exec: let the session rules read from the log approve
        /// (the console asks the operator instead).
        #[arg(long, requires = "exec")]
        trust_session_rules: bool,
    },
    /// List recorded sessions: id, start time, model, turns, last message.
    Sessions,
    /// Attach a console to a running agent (see `vigil ps`), here or on
    /// another machine through ssh (`user@host[:port]:ID`).
    Attach {
        /// The session id of the agent (with a single agent running, it
        /// may be left out), or `user@host[:port]:ID` for one reached
        /// through ssh (with the `[ssh]` identity and options).
        id: Option<String>,
        /// The most recently started running agent.
        #[arg(long, conflicts_with = "id")]
        last: bool,
        /// Read-only: see everything, approve and type nothing.
        #[arg(long)]
        watch: bool,
        /// How to run vigil on the remote machine (a shell command).
        #[arg(long, value_name = "CMD", default_value = "vigil")]
        remote_vigil: String,
    },
    /// List the running agents: id, model, target, state, approvals
    /// waiting, consoles attached, age (and sockets left by dead agents).
    Ps {
        /// One JSON object: the running agents and the stale sockets.
        #[arg(long)]
        json: bool,
        /// Remove the sockets left by dead agents (only those whose session
        /// lock is free: their agent is gone for sure). Their sessions stay
        /// recorded: `vigil resume ID` starts them again.
        #[arg(long, conflicts_with = "target")]
        prune: bool,
        /// List the agents of another machine, through ssh
        /// (`user@host[:port]`, with the `[ssh]` identity and options).
        #[arg(value_name = "USER@HOST[:PORT]")]
        target: Option<String>,
        /// How to run vigil on the remote machine (a shell command).
        #[arg(long, value_name = "CMD", default_value = "vigil")]
        remote_vigil: String,
    },
    /// Stop a running agent: it ends its turn, closes its connections and
    /// exits. The tmux sessions it created on this machine go with it
    /// (unless --keep); remote ones are kept unless --remove-remote.
    Stop {
        /// The session id of the agent (see `vigil ps`).
        id: String,
        /// Also remove the managed tmux sessions it left on a remote target.
        #[arg(long, conflicts_with = "keep")]
        remove_remote: bool,
        /// Keep the tmux sessions it created on this machine.
        #[arg(long)]
        keep: bool,
    },
    /// Inspect or call the registered tools directly.
    Tool {
        #[command(subcommand)]
        action: ToolAction,
    },
    /// How the approval policy decides: check a command, or replay a session.
    Policy {
        #[command(subcommand)]
        action: PolicyAction,
    },
    /// The decision record of a session (who or what decided each call):
    /// verify its hash chain, or export it as JSON lines (docs/audit.md).
    Audit {
        #[command(subcommand)]
        action: AuditAction,
    },
    /// Run the agent as its own process, for consoles to attach to over
    /// its Unix socket (started by the console; see docs/protocol.md).
    #[command(name = "__agent", hide = true)]
    Agent {
        /// Resume this recorded session (an id).
        #[arg(long, value_name = "ID")]
        resume: Option<String>,
    },
}

#[derive(Subcommand, Debug)]
pub enum PolicyAction {
    /// Print the decision for a command, the rule that made it, how the
    /// parser reads it and whether it would run sandboxed:
    /// `vigil policy check -- git status -s`.
    Check {
        /// Also run the command in a throwaway copy-on-write view of this
        /// machine and print its effects (files, output, refused network
        /// attempts, leftover processes); nothing reaches the real system.
        #[arg(long)]
        preview: bool,
        /// The preview's wall-clock limit, in seconds.
        #[arg(long, default_value_t = 10, requires = "preview", value_parser = clap::value_parser!(u64).range(1..=3600))]
        time_limit: u64,
        /// The size of the preview's writable layer, in MB.
        #[arg(long, default_value_t = 256, requires = "preview", value_parser = clap::value_parser!(u64).range(1..=65536))]
        size_limit: u64,
        /// The command: one argument is a command line; several are the
        /// words of one command, quoted so each stays a word.
        #[arg(required = true, trailing_var_arg = true, allow_hyphen_values = true)]
        command: Vec<String>,
    },
    /// Run every gated call of a recorded session through the current
    /// policy and print what would have run unasked.
    Replay {
        /// The session id (see `vigil sessions`), or "last".
        session: String,
    },
}

#[derive(Subcommand, Debug)]
pub enum AuditAction {
    /// Check the record against its hash chain and its head: exit 0 when
    /// it verifies, 1 naming the first entry changed, deleted, moved or
    /// cut off.
    Verify {
        /// The session id (see `vigil sessions`), or "last".
        session: String,
    },
    /// Verify the record, then print exactly the lines verified, one JSON
    /// object per line. A record that does not verify is not printed (exit
    /// 1) unless `--unverified` is given.
    Export {
        /// The session id (see `vigil sessions`), or "last".
        session: String,
        /// Print the file's bytes as they are even on a terminal (by
        /// default, on a terminal, characters a terminal would act on are
        /// written as `\uXXXX` escapes: the same JSON values).
        #[arg(long, alias = "json")]
        raw: bool,
        /// Print a record that does not verify (still exit 1, saying why).
        #[arg(long)]
        unverified: bool,
    },
}

#[derive(Subcommand, Debug)]
pub enum ToolAction {
    /// Print every registered tool: name, what it does, its arguments.
    List {
        /// Print the full definitions (JSON schema) instead.
        #[arg(long)]
        json: bool,
    },
    /// Run one tool through validation, approval and the envelope.
    Call {
        name: String,
        /// The arguments as a JSON object.
        #[arg(default_value = "{}")]
        arguments: String,
    },
}

/// What `vigil exec` (or `resume --exec`) runs.
pub struct ExecArgs {
    pub prompt: String,
    pub json: bool,
    pub resume: Option<String>,
    pub trust_session_rules: bool,
}
