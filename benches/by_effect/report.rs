//! The by_effect bench's report of one corpus × mode: the asked share of
//! the commands whose program is installed here (the headline), of all,
//! the "not installed" count kept apart, the classes still asked, and for
//! the agent corpus the asked share of its read/build/test commands and
//! every `# writes` command run unasked (a miss, reported loudly).

use std::collections::BTreeMap;

use crate::corpus::{Cmd, Corpus, installed};
use crate::{Mode, Seen, Verdict};

/// The figures of one corpus × mode, printed; returns the summary row.
pub fn report(corpus: Corpus, mode: Mode, commands: &[Cmd], seen: &Seen) -> String {
    seen.tally.line("by_effect", commands.len());
    let missing: Vec<bool> = commands
        .iter()
        .zip(&seen.verdicts)
        .map(|(c, v)| !installed(&c.text) || matches!(v, Verdict::Unasked(Some(127))))
        .collect();
    let not_installed = missing.iter().filter(|m| **m).count();
    let here = commands.len() - not_installed;
    let asked = |keep: &dyn Fn(usize) -> bool| {
        let n = (0..commands.len()).filter(|i| keep(*i)).count();
        let k = (0..commands.len())
            .filter(|i| keep(*i) && matches!(seen.verdicts[*i], Verdict::Asked(..)))
            .count();
        (k, n, 100.0 * k as f64 / n.max(1) as f64)
    };
    let (k_here, n_here, p_here) = asked(&|i| !missing[i]);
    let (k_all, n_all, p_all) = asked(&|_| true);
    println!(
        "  HEADLINE asked of the {here} whose program is installed here: {p_here:.1} % ({k_here} / {n_here})"
    );
    println!(
        "  asked of all: {p_all:.1} % ({k_all} / {n_all}); not installed here (counted apart): {not_installed}"
    );
    let mut classes: BTreeMap<&str, usize> = BTreeMap::new();
    for (i, v) in seen.verdicts.iter().enumerate() {
        if let Verdict::Asked(class, _) = v
            && !missing[i]
        {
            *classes.entry(class).or_default() += 1;
        }
    }
    let mut classes: Vec<(&str, usize)> = classes.into_iter().collect();
    classes.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    println!("  still asked (installed programs), by class:");
    for (class, count) in classes.iter().take(16) {
        println!("    {count:>5}  {class}");
    }
    let top: Vec<String> = classes
        .iter()
        .take(4)
        .map(|(c, n)| format!("{c} {n}"))
        .collect();
    let mut agent = String::from("– | –");
    if corpus == Corpus::Agent {
        let reads = |i: usize| !commands[i].writes && !missing[i];
        let (k_r, n_r, p_r) = asked(&reads);
        let verdict = if p_r <= 20.0 { "met" } else { "NOT met" };
        println!(
            "  read/build/test commands (installed): asked {p_r:.1} % ({k_r} / {n_r}) — target ≤ 20 %: {verdict}"
        );
        for (i, c) in commands.iter().enumerate() {
            if let (false, Verdict::Asked(class, why)) = (c.writes, &seen.verdicts[i]) {
                let note = if missing[i] { " (not installed)" } else { "" };
                println!("    asked: {:<50} {class}{note}", c.text);
                let why: String = why.chars().take(300).collect();
                println!("           why: {why}");
            }
        }
        let writes: Vec<usize> = (0..commands.len())
            .filter(|i| commands[*i].writes)
            .collect();
        let mut misses = 0;
        for &i in &writes {
            match &seen.verdicts[i] {
                Verdict::Asked(..) | Verdict::Denied => {}
                Verdict::Unasked(code) => {
                    misses += 1;
                    println!(
                        "  !!! MISS: `# writes` command run UNASKED (exit {code:?}): {}",
                        commands[i].text
                    );
                }
            }
        }
        let denied = writes
            .iter()
            .filter(|i| matches!(seen.verdicts[**i], Verdict::Denied))
            .count();
        println!(
            "  `# writes` commands: {} — asked {}, refused outright {denied}, MISSED (run unasked) {misses}{}",
            writes.len(),
            writes.len() - misses - denied,
            if misses == 0 { "" } else { "  <<< FAILURE" }
        );
        agent = format!("{p_r:.1} % ({k_r}/{n_r}) | {misses} of {}", writes.len());
    }
    format!(
        "| {} | {} | **{p_here:.1} %** ({k_here}/{n_here}) | {p_all:.1} % ({k_all}/{n_all}) | {not_installed} | {agent} | {} |",
        corpus.name(),
        mode.name(),
        top.join(", ")
    )
}
