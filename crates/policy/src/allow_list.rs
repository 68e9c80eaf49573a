//! The allow-list behind "low": the exact programs vigil lets run without a
//! fresh operator decision, each with the exact flags it may take. A flag or
//! program not listed here is not low; there is no list of dangerous flags
//! to forget. GNU long options may be abbreviated (`--num` for
//! `--numeric-sort`): an abbreviation is expanded before matching, and one
//! that fits no allowed option, or more than one, is not low.
//!
//! Chosen not to allow, and why:
//! - `sed` (`e`, `s///e`, `w` commands, `-i`/`--in-pl…`), `awk` (`system()`,
//!   `print | "sh"`), `perl`/`python`/shells: their programs run code.
//! - `find` (`-exec`, `-delete`, `-fprintf`, `-fls`), `xargs`, `env`,
//!   `timeout`, `nice`, `nohup`, `command`, `exec`, `sudo`: they run other
//!   programs or write; a wrapper hides what runs.
//! - `printenv`, `jq` (`env`, `$ENV`): they hand the environment to the model;
//!   so does reading `/proc/PID/environ` with an allowed reader (`cat`,
//!   `head`…), which is refused by name. vigil's own processes are not
//!   dumpable, so the kernel refuses their `environ` to a command anyway.
//! - another process's details (`/proc/PID/…`, any `cmdline`) and `ps`'s
//!   full formats (`-f`, `-F`, `-o args`): a command line can hold a
//!   password; `ps -e` lists names only.
//! - a device file other than `/dev/null`, `zero`, `full`, `random`,
//!   `urandom` and the standard streams as an operand: opening one can act
//!   (a watchdog arms, a pty is allocated); the sandbox refuses them too.
//! - `uniq` (a second operand is written), `tee`, `tree` (`-o`), `tar`,
//!   `curl`/`wget` (network, `-o`), `rg` (`--pre` runs a program), pagers
//!   (`less`, `more`, `man`: `!cmd`), `systemctl`, `make`.
//! - `sort` is allowed without `-o`, `-T`, `--compress-program` and
//!   `--files0-from`; `date` only with `+FORMAT` operands (an operand sets the
//!   clock); `hostname` only without operands (one sets the name).
//! - `git` only `status`, `log`, `show`, `diff` with reading flags (no
//!   `--output`, `--ext-diff`, no global `-c`/`-C` before the subcommand) and
//!   `branch` listing without operands. A hostile repository's own config
//!   (`core.fsmonitor`, textconv drivers, `core.pager`) can still run code in
//!   these: that is why what runs unasked runs in the Landlock sandbox.
//!
//! It never runs anything; [`check`] reads parsed words only.

/// What a program accepts besides flags.
#[derive(Debug, Clone, Copy)]
enum Operands {
    Any,
    None,
    Max(usize),
    /// Only `+FORMAT` operands (`date`).
    Format,
    /// A subcommand from this table comes first (`git`).
    Sub(&'static [Spec]),
}

/// One allowed program (or subcommand) and its allowed flags.
#[derive(Debug, Clone, Copy)]
pub struct Spec {
    name: &'static str,
    /// Short flags without a value.
    short: &'static str,
    /// Short flags that take a value (the rest of the cluster or the next word).
    short_val: &'static str,
    long: &'static [&'static str],
    long_val: &'static [&'static str],
    /// `-5` as a count (`head -5`, `git log -3`).
    numeric: bool,
    operands: Operands,
}

const fn spec(name: &'static str, short: &'static str, operands: Operands) -> Spec {
    Spec {
        name,
        short,
        short_val: "",
        long: &[],
        long_val: &[],
        numeric: false,
        operands,
    }
}

const HEAD_LONG: &[&str] = &["quiet", "silent", "verbose"];
const HEAD_VAL: &[&str] = &["lines", "bytes"];
const GREP_LONG: &[&str] = &[
    "ignore-case",
    "line-number",
    "invert-match",
    "count",
    "files-with-matches",
    "files-without-match",
    "extended-regexp",
    "fixed-strings",
    "word-regexp",
    "line-regexp",
    "no-filename",
    "with-filename",
    "only-matching",
    "quiet",
    "silent",
    "no-messages",
    "recursive",
    "dereference-recursive",
];
const GREP_VAL: &[&str] = &[
    "regexp",
    "after-context",
    "before-context",
    "context",
    "max-count",
    "include",
    "exclude",
    "exclude-dir",
];
const LOG_LONG: &[&str] = &[
    "oneline",
    "graph",
    "stat",
    "shortstat",
    "decorate",
    "all",
    "reverse",
    "name-only",
    "name-status",
    "no-merges",
    "first-parent",
    "patch",
    "no-color",
];
const LOG_VAL: &[&str] = &[
    "max-count",
    "since",
    "until",
    "author",
    "grep",
    "format",
    "pretty",
    "date",
];
const DIFF_LONG: &[&str] = &[
    "stat",
    "shortstat",
    "numstat",
    "cached",
    "staged",
    "name-only",
    "name-status",
    "no-color",
    "patch",
];

const GIT: &[Spec] = &[
    Spec {
        long: &["short", "branch", "porcelain", "long"],
        ..spec("status", "sb", Operands::Any)
    },
    Spec {
        short_val: "n",
        long: LOG_LONG,
        long_val: LOG_VAL,
        numeric: true,
        ..spec("log", "p", Operands::Any)
    },
    Spec {
        long: LOG_LONG,
        long_val: LOG_VAL,
        ..spec("show", "p", Operands::Any)
    },
    Spec {
        long: DIFF_LONG,
        ..spec("diff", "pw", Operands::Any)
    },
    Spec {
        long: &["list", "all", "remotes", "verbose"],
        ..spec("branch", "arv", Operands::None)
    },
];

const HEAD: Spec = Spec {
    short_val: "nc",
    long: HEAD_LONG,
    long_val: HEAD_VAL,
    numeric: true,
    ..spec("head", "qv", Operands::Any)
};
const GREP: Spec = Spec {
    short_val: "eABCm",
    long: GREP_LONG,
    long_val: GREP_VAL,
    ..spec("grep", "invclLEFwxhHoqsrR", Operands::Any)
};

/// The allowed programs.
const PROGRAMS: &[Spec] = &[
    Spec {
        long: &[
            "all",
            "almost-all",
            "human-readable",
            "directory",
            "classify",
            "reverse",
            "recursive",
            "inode",
        ],
        ..spec("ls", "aAlhdFrtS1inR", Operands::Any)
    },
    Spec {
        long: &["number", "show-all", "number-nonblank", "squeeze-blank"],
        ..spec("cat", "nAEbsTv", Operands::Any)
    },
    HEAD,
    Spec {
        name: "tail",
        ..HEAD
    },
    Spec {
        long: &["lines", "words", "bytes", "chars", "max-line-length"],
        ..spec("wc", "lwcmL", Operands::Any)
    },
    GREP,
    Spec {
        name: "egrep",
        ..GREP
    },
    Spec {
        name: "fgrep",
        ..GREP
    },
    spec("echo", "neE", Operands::Any),
    spec("printf", "", Operands::Any),
    spec("pwd", "LP", Operands::None),
    spec("whoami", "", Operands::None),
    spec("id", "unGgr", Operands::Max(1)),
    spec("uname", "asnrvmpio", Operands::None),
    spec("hostname", "fIisd", Operands::None),
    Spec {
        short_val: "d",
        long: &["utc", "rfc-2822"],
        long_val: &["date"],
        ..spec("date", "uR", Operands::Format)
    },
    Spec {
        long: &["human-readable", "inodes", "local", "all", "print-type"],
        ..spec("df", "hHTila", Operands::Any)
    },
    Spec {
        short_val: "d",
        long: &[
            "summarize",
            "human-readable",
            "total",
            "all",
            "one-file-system",
        ],
        long_val: &["max-depth"],
        ..spec("du", "shcaxbkm", Operands::Any)
    },
    Spec {
        long: &["human"],
        ..spec("free", "hmgkbwt", Operands::None)
    },
    spec("uptime", "ps", Operands::None),
    Spec {
        long: &["all"],
        ..spec("nproc", "", Operands::None)
    },
    spec("true", "", Operands::Any),
    spec("false", "", Operands::Any),
    Spec {
        short_val: "c",
        long: &["dereference", "terse"],
        long_val: &["format", "printf"],
        ..spec("stat", "Lft", Operands::Any)
    },
    Spec {
        long: &["brief", "mime", "mime-type", "mime-encoding", "dereference"],
        ..spec("file", "bLiz", Operands::Any)
    },
    Spec {
        short_val: "s",
        ..spec("basename", "az", Operands::Any)
    },
    spec("dirname", "z", Operands::Any),
    spec("realpath", "emsqz", Operands::Any),
    spec("readlink", "femnqsvz", Operands::Any),
    spec("which", "a", Operands::Any),
    Spec {
        short_val: "bcdf",
        long: &["only-delimited"],
        long_val: &["delimiter", "fields", "characters", "bytes"],
        ..spec("cut", "sz", Operands::Any)
    },
    spec("tr", "cdsC", Operands::Max(2)),
    Spec {
        short_val: "kt",
        long: &[
            "numeric-sort",
            "reverse",
            "unique",
            "ignore-case",
            "human-numeric-sort",
            "version-sort",
            "stable",
        ],
        long_val: &["key", "field-separator"],
        ..spec("sort", "nrufbhMVs", Operands::Any)
    },
    Spec {
        short_val: "sf",
        ..spec("seq", "w", Operands::Max(3))
    },
    // Waits and nothing else (the call's timeout and cancel still apply).
    spec("sleep", "", Operands::Max(1)),
    spec("md5sum", "bctw", Operands::Any),
    spec("sha256sum", "bctw", Operands::Any),
    Spec {
        short_val: "pCu",
        ..spec("ps", "eAlHw", Operands::None)
    },
    spec("git", "", Operands::Sub(GIT)),
];

/// Whether `words` (program first, all literal) may run without a fresh
/// operator decision; the error says which word is not allowed.
pub fn check(words: &[&str]) -> Result<(), String> {
    let Some((program, args)) = words.split_first() else {
        return Err("there is no command".into());
    };
    let spec = PROGRAMS
        .iter()
        .find(|s| s.name == *program)
        .ok_or_else(|| format!("`{program}` is not on vigil's list of read-only programs"))?;
    check_args(spec, program, args)?;
    match args.iter().find_map(|a| special_file(a)) {
        Some(why) => Err(why),
        None => Ok(()),
    }
}

/// Device files a low command may name (the sandbox opens no other).
const PLAIN_DEVICES: &[&str] = &[
    "/dev/null",
    "/dev/zero",
    "/dev/full",
    "/dev/random",
    "/dev/urandom",
    "/dev/stdin",
    "/dev/stdout",
    "/dev/stderr",
];

/// What of `/proc` a low command may read: the machine's own figures and
/// the reader's own status. Everything else there is other processes'
/// details (command lines, open files, mappings) or leads to them.
pub(crate) const PROC_READABLE: &[&str] = &[
    "/proc/cpuinfo",
    "/proc/meminfo",
    "/proc/loadavg",
    "/proc/uptime",
    "/proc/version",
    "/proc/stat",
    "/proc/swaps",
    "/proc/filesystems",
    "/proc/self/status",
    "/proc/self/limits",
];

/// Why a path (its `parts`, `.` dropped) reaches into `/proc` beyond
/// [`PROC_READABLE`]: `..` is applied first (`/proc/self/../1` is process
/// 1), `/proc` itself is a folder a recursive reader walks, and a relative
/// path naming a process folder (`proc/1`, `../self`) is judged the same.
fn in_proc(word: &str, path: &str, parts: &[&str]) -> Option<String> {
    let mut normal: Vec<&str> = Vec::new();
    let mut above = false;
    for p in parts {
        match *p {
            ".." if normal.pop().is_none() => above = true,
            ".." => {}
            p => normal.push(p),
        }
    }
    let pid = |p: &str| !p.is_empty() && p.bytes().all(|b| b.is_ascii_digit());
    let process = |p: &str| pid(p) || p == "self" || p == "thread-self";
    let absolute = path.starts_with('/');
    let reaches = if absolute {
        normal.first() == Some(&"proc")
    } else {
        // Relative: a `proc` folder with a process in it, or climbing out
        // of the working folder into one (`../1`, `../self`).
        normal.windows(2).any(|w| w[0] == "proc" && process(w[1]))
            || (above && normal.first().is_some_and(|p| process(p)))
    };
    let full = format!("/{}", normal.join("/"));
    (reaches && !(absolute && PROC_READABLE.contains(&full.as_str()))).then(|| {
        format!(
            "`{word}` reaches into /proc, where other processes' details are (what they run, \
             their files); only the machine's figures are read unasked"
        )
    })
}

/// Why `word` (an operand, or a flag's value after `=`) names a file that a
/// reader must not be trusted with: a process's environment
/// (`/proc/PID/environ`, or `environ` relative to a `/proc` folder) or a
/// device other than [`PLAIN_DEVICES`] (opening one can act).
pub(crate) fn special_file(word: &str) -> Option<String> {
    let path = word.rsplit_once('=').map_or(word, |(_, v)| v);
    let parts: Vec<&str> = path
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    if parts.last() == Some(&"environ") {
        return Some(format!(
            "`{word}` is a process's environment, which can hold secrets (asked like `printenv`)"
        ));
    }
    if parts.last() == Some(&"cmdline") {
        return Some(format!(
            "`{word}` is a process's command line, which can hold secrets (a password argument)"
        ));
    }
    if let Some(why) = in_proc(word, path, &parts) {
        return Some(why);
    }
    let normal = format!("/{}", parts.join("/"));
    // `/dev` itself is a folder to list; what is beneath it may be a device.
    let device = (path.starts_with('/') && parts.len() > 1 && parts[0] == "dev")
        || parts.windows(3).any(|w| w[..2] == ["root", "dev"]);
    let plain = PLAIN_DEVICES.contains(&normal.as_str()) || normal.starts_with("/dev/fd/");
    (device && !plain).then(|| format!("`{word}` is a device file: opening one can act"))
}

/// Whether `program` is on the allow-list at all.
pub fn is_listed(program: &str) -> bool {
    PROGRAMS.iter().any(|s| s.name == program)
}

fn check_args(spec: &Spec, program: &str, args: &[&str]) -> Result<(), String> {
    if let Operands::Sub(subs) = spec.operands {
        let Some((sub, rest)) = args.split_first() else {
            return Err(format!("`{program}` without a subcommand is not allowed"));
        };
        let found = subs.iter().find(|s| s.name == *sub).ok_or_else(|| {
            format!("`{program} {sub}` is not on vigil's list of read-only commands")
        })?;
        return check_args(found, &format!("{program} {sub}"), rest);
    }
    let operands = options(spec, program, args)?;
    let bad = |why: &str| Err(format!("`{program}` {why}"));
    match spec.operands {
        Operands::Any | Operands::Sub(_) => Ok(()),
        Operands::None if operands.is_empty() => Ok(()),
        Operands::None => bad("takes no operands here"),
        Operands::Max(n) if operands.len() <= n => Ok(()),
        Operands::Max(n) => bad(&format!("takes at most {n} operands here")),
        Operands::Format if operands.iter().all(|o| o.starts_with('+')) => Ok(()),
        Operands::Format => bad("only takes +FORMAT operands here (an operand sets the clock)"),
    }
}

/// Check every option; return the operands.
fn options<'a>(spec: &Spec, program: &str, args: &[&'a str]) -> Result<Vec<&'a str>, String> {
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i];
        i += 1;
        if arg == "--" {
            operands.extend_from_slice(&args[i..]);
            break;
        }
        if let Some(long) = arg.strip_prefix("--") {
            let (name, has_value) = match long.split_once('=') {
                Some((n, _)) => (n, true),
                None => (long, false),
            };
            match expand(spec, name) {
                Some((_, true)) if !has_value && i >= args.len() => {
                    return Err(format!("`{program} --{name}` needs a value"));
                }
                Some((_, true)) if !has_value => i += 1,
                Some((_, false)) if has_value => {
                    return Err(format!("`{program} --{name}` takes no value"));
                }
                Some(_) => {}
                None => return Err(format!("`{program}` flag `--{name}` is not allowed")),
            }
            continue;
        }
        match arg.strip_prefix('-') {
            Some(cluster) if !cluster.is_empty() => {
                if spec.numeric && cluster.chars().all(|c| c.is_ascii_digit()) {
                    continue;
                }
                i += short_cluster(spec, program, cluster)?;
                if i > args.len() {
                    return Err(format!("`{program} {arg}` needs a value"));
                }
            }
            _ => operands.push(arg),
        }
    }
    Ok(operands)
}

/// Check `-abc`; returns how many following words it consumed as a value.
fn short_cluster(spec: &Spec, program: &str, cluster: &str) -> Result<usize, String> {
    for (at, c) in cluster.char_indices() {
        if spec.short_val.contains(c) {
            let rest = &cluster[at + c.len_utf8()..];
            return Ok(usize::from(rest.is_empty()));
        }
        if !c.is_ascii_alphanumeric() || !spec.short.contains(c) {
            return Err(format!("`{program}` flag `-{c}` is not allowed"));
        }
    }
    Ok(0)
}

/// The allowed long option `name` abbreviates (exactly one), and whether it
/// takes a value.
fn expand(spec: &Spec, name: &str) -> Option<(&'static str, bool)> {
    if name.is_empty() {
        return None;
    }
    let all = spec
        .long
        .iter()
        .map(|o| (*o, false))
        .chain(spec.long_val.iter().map(|o| (*o, true)));
    let mut found = None;
    for (option, takes) in all {
        if option == name {
            return Some((option, takes));
        }
        if option.starts_with(name) {
            if found.is_some() {
                return None;
            }
            found = Some((option, takes));
        }
    }
    found
}

#[cfg(test)]
#[path = "allow_list_tests.rs"]
mod tests;
