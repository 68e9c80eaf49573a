//! `edit` end to end on real files, through the registry, on the local
//! backend and on a cat-based backend (the path every remote target takes).

use serde_json::{Value, json};
use tokio::process::Command;
use vigil::exec::ExecutionContext;
use vigil::exec::backend::CommandBackend;
use vigil::exec::transport::Transport;
use vigil::policy::gate::FixedApprover;
use vigil::tools::edit::{Edit, EditConfig};
use vigil::tools::paths::{PathPolicy, resolve_local};
use vigil::tools::{FailureClass, Tool, ToolRegistry, ToolRun};
use vigil_protocol::approval::ApprovalDecision;

/// Real `sh -c`, but claims a foreign filesystem so files go through `cat`.
struct Remoteish;
impl Transport for Remoteish {
    fn label(&self) -> String {
        "remoteish".into()
    }
    fn shell(&self, script: &str, _stdin: bool) -> Command {
        let mut c = Command::new("sh");
        c.arg("-c").arg(script);
        c
    }
}

fn quiet() -> EditConfig {
    EditConfig {
        confirm: false,
        ..Default::default()
    }
}

fn registry(ctx: ExecutionContext, config: EditConfig) -> ToolRegistry {
    let mut r = ToolRegistry::new();
    r.register(Edit::new(ctx, config));
    r
}

fn contexts() -> Vec<ExecutionContext> {
    vec![
        ExecutionContext::local(),
        ExecutionContext::new(CommandBackend::new(Remoteish)),
    ]
}

async fn call(r: &ToolRegistry, args: Value) -> ToolRun {
    r.execute("edit", &args.to_string()).await
}

fn result(run: &ToolRun) -> String {
    assert!(run.ok(), "{}", run.model_text);
    let v: Value = serde_json::from_str(&run.model_text).unwrap();
    v["result"].as_str().unwrap().to_string()
}

/// A folder inside the working tree (the build's own temporary folder):
/// what a view there reads is in the readable world, so it runs unasked.
fn tmp() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let base = resolve_local(dir.path()).unwrap();
    let s = base.to_str().unwrap().to_string();
    (dir, s)
}

#[tokio::test]
async fn view_numbers_lines_keeps_tabs_and_takes_ranges() {
    for ctx in contexts() {
        let (_d, base) = tmp();
        let p = format!("{base}/f.txt");
        std::fs::write(&p, "one\n\ttwo\nthree\nfour\n").unwrap();
        let r = registry(ctx, quiet());
        let out = result(&call(&r, json!({"command": "view", "path": p})).await);
        assert_eq!(
            out,
            "     1\tone\n     2\t\ttwo\n     3\tthree\n     4\tfour\n"
        );
        let out = result(
            &call(
                &r,
                json!({"command": "view", "path": p, "view_range": [2, 3]}),
            )
            .await,
        );
        assert_eq!(out, "     2\t\ttwo\n     3\tthree\n");
        let out = result(
            &call(
                &r,
                json!({"command": "view", "path": p, "view_range": [3, -1]}),
            )
            .await,
        );
        assert_eq!(out, "     3\tthree\n     4\tfour\n");
        let run = call(
            &r,
            json!({"command": "view", "path": p, "view_range": [5, 9]}),
        )
        .await;
        assert_eq!(run.class, Some(FailureClass::InvalidArguments));
        // Stringified range is repaired by validation, with a note.
        let run = call(
            &r,
            json!({"command": "view", "path": p, "view_range": "[1, 1]"}),
        )
        .await;
        assert!(run.model_text.contains("notes"), "{}", run.model_text);
        assert_eq!(result(&run), "     1\tone\n");
    }
}

#[tokio::test]
async fn view_lists_directories_two_levels_without_hidden() {
    for ctx in contexts() {
        let (_d, base) = tmp();
        std::fs::create_dir_all(format!("{base}/a/b/c")).unwrap();
        std::fs::create_dir_all(format!("{base}/.git")).unwrap();
        std::fs::write(format!("{base}/a/x.txt"), "").unwrap();
        std::fs::write(format!("{base}/a/b/c/deep.txt"), "").unwrap();
        std::fs::write(format!("{base}/.hidden"), "").unwrap();
        std::fs::write(format!("{base}/top.txt"), "").unwrap();
        let r = registry(ctx, quiet());
        let out = result(&call(&r, json!({"command": "view", "path": base})).await);
        let listed: Vec<&str> = out.lines().skip(1).collect();
        assert_eq!(listed, ["a/", "a/b/", "a/x.txt", "top.txt"], "{out}");
    }
}

#[tokio::test]
async fn create_refuses_to_overwrite_and_undo_removes() {
    for ctx in contexts() {
        let (_d, base) = tmp();
        let p = format!("{base}/new.conf");
        let r = registry(ctx, quiet());
        let run = call(
            &r,
            json!({"command": "create", "path": p, "file_text": "a\tb\n"}),
        )
        .await;
        result(&run);
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a\tb\n");
        let run = call(
            &r,
            json!({"command": "create", "path": p, "file_text": "other"}),
        )
        .await;
        assert!(
            run.model_text.contains("already exists"),
            "{}",
            run.model_text
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a\tb\n");
        result(&call(&r, json!({"command": "undo_edit", "path": p})).await);
        assert!(!std::path::Path::new(&p).exists());
        let run = call(&r, json!({"command": "undo_edit", "path": p})).await;
        assert!(
            run.model_text.contains("no edit to undo"),
            "{}",
            run.model_text
        );
    }
}

#[tokio::test]
async fn str_replace_needs_exactly_one_match() {
    for ctx in contexts() {
        let (_d, base) = tmp();
        let p = format!("{base}/c.yaml");
        std::fs::write(&p, "workers: 2\nport: 80\nworkers: 2\n\tindent\n").unwrap();
        let r = registry(ctx, quiet());
        let run = call(
            &r,
            json!({"command": "str_replace", "path": p,
                                  "old_str": "workers: 2", "new_str": "workers: 4"}),
        )
        .await;
        assert!(
            run.model_text.contains("occurs 2 times"),
            "{}",
            run.model_text
        );
        assert!(run.model_text.contains("lines 1, 3"), "{}", run.model_text);
        let run = call(
            &r,
            json!({"command": "str_replace", "path": p,
                                  "old_str": "nope", "new_str": "x"}),
        )
        .await;
        assert!(run.model_text.contains("no match"), "{}", run.model_text);
        let out = result(&call(&r, json!({"command": "str_replace", "path": p,
                                  "old_str": "port: 80\nworkers: 2", "new_str": "port: 8080\nworkers: 3"})).await);
        assert!(out.contains("     2\tport: 8080"), "{out}");
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "workers: 2\nport: 8080\nworkers: 3\n\tindent\n"
        );
        // Tabs in old/new text are matched and written as-is.
        result(
            &call(
                &r,
                json!({"command": "str_replace", "path": p,
                                "old_str": "\tindent", "new_str": "\t\tdeeper"}),
            )
            .await,
        );
        assert!(
            std::fs::read_to_string(&p)
                .unwrap()
                .ends_with("\t\tdeeper\n")
        );
        // Two levels of undo.
        result(&call(&r, json!({"command": "undo_edit", "path": p})).await);
        result(&call(&r, json!({"command": "undo_edit", "path": p})).await);
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "workers: 2\nport: 80\nworkers: 2\n\tindent\n"
        );
    }
}

#[tokio::test]
async fn insert_after_line_n_including_top_and_end() {
    for ctx in contexts() {
        let (_d, base) = tmp();
        let p = format!("{base}/i.txt");
        std::fs::write(&p, "a\nb").unwrap();
        let r = registry(ctx, quiet());
        result(
            &call(
                &r,
                json!({"command": "insert", "path": p, "insert_line": 0, "new_str": "top"}),
            )
            .await,
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "top\na\nb");
        result(
            &call(
                &r,
                json!({"command": "insert", "path": p, "insert_line": 1, "new_str": "x\ny\n"}),
            )
            .await,
        );
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "top\nx\ny\na\nb");
        result(
            &call(
                &r,
                json!({"command": "insert", "path": p, "insert_line": 5, "new_str": "end"}),
            )
            .await,
        );
        assert_eq!(
            std::fs::read_to_string(&p).unwrap(),
            "top\nx\ny\na\nb\nend\n"
        );
        let run = call(
            &r,
            json!({"command": "insert", "path": p, "insert_line": 99, "new_str": "z"}),
        )
        .await;
        assert_eq!(run.class, Some(FailureClass::InvalidArguments));
        for _ in 0..3 {
            result(&call(&r, json!({"command": "undo_edit", "path": p})).await);
        }
        assert_eq!(std::fs::read_to_string(&p).unwrap(), "a\nb");
    }
}

#[tokio::test]
async fn history_is_bounded() {
    let (_d, base) = tmp();
    let p = format!("{base}/h.txt");
    std::fs::write(&p, "0\n").unwrap();
    let r = registry(
        ExecutionContext::local(),
        EditConfig {
            history_per_path: 2,
            ..quiet()
        },
    );
    for i in 0..4 {
        result(
            &call(
                &r,
                json!({"command": "str_replace", "path": p,
                                "old_str": format!("{i}\n"), "new_str": format!("{}\n", i + 1)}),
            )
            .await,
        );
    }
    result(&call(&r, json!({"command": "undo_edit", "path": p})).await);
    result(&call(&r, json!({"command": "undo_edit", "path": p})).await);
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "2\n");
    let run = call(&r, json!({"command": "undo_edit", "path": p})).await;
    assert!(run.model_text.contains("no edit to undo"));
}

#[tokio::test]
async fn mutations_are_gated_and_paths_are_policed() {
    let (_d, base) = tmp();
    let p = format!("{base}/g.txt");
    std::fs::write(&p, "x\n").unwrap();
    let ctx = ExecutionContext::local();
    let e = Edit::new(ctx.clone(), EditConfig::default());
    assert!(e.gate(&json!({"command": "view", "path": p})).is_none());
    let g = e
        .gate(&json!({"command": "insert", "path": p}))
        .expect("gated");
    assert_eq!(g.action, format!("edit insert {p}"));
    // Fail closed without an operator.
    let r = registry(ctx.clone(), EditConfig::default());
    let run = call(
        &r,
        json!({"command": "insert", "path": p, "insert_line": 0, "new_str": "y"}),
    )
    .await;
    assert!(run.denied());
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "x\n");
    let mut r = registry(ctx.clone(), EditConfig::default());
    r.set_approver(std::sync::Arc::new(FixedApprover(
        ApprovalDecision::ApproveOnce,
    )));
    result(
        &call(
            &r,
            json!({"command": "insert", "path": p, "insert_line": 0, "new_str": "y"}),
        )
        .await,
    );
    // A view outside the readable places (a temporary folder of the
    // machine's) is gated: nobody there, nothing is read; approved, it is.
    let outside = tempfile::tempdir().unwrap();
    let o = format!("{}/o.txt", resolve_local(outside.path()).unwrap().display());
    std::fs::write(&o, "outside-bytes\n").unwrap();
    let e = Edit::new(ctx.clone(), quiet());
    let g = e
        .gate(&json!({"command": "view", "path": o}))
        .expect("gated");
    assert!(
        g.action.contains("outside the readable places"),
        "{}",
        g.action
    );
    let r = registry(ctx.clone(), quiet());
    let run = call(&r, json!({"command": "view", "path": o})).await;
    assert!(run.denied(), "{}", run.model_text);
    assert!(!run.model_text.contains("outside-bytes"));
    // So is an edit that changes nothing but shows the lines around it
    // (found by an attacker with edit_confirm = false).
    let same =
        json!({"command": "str_replace", "path": o, "old_str": "outside", "new_str": "outside"});
    let run = call(&r, same).await;
    assert!(run.denied(), "{}", run.model_text);
    assert!(!run.model_text.contains("outside-bytes"));
    let mut r = registry(ctx.clone(), quiet());
    r.set_approver(std::sync::Arc::new(FixedApprover(
        ApprovalDecision::ApproveOnce,
    )));
    assert!(
        result(&call(&r, json!({"command": "view", "path": o})).await).contains("outside-bytes")
    );
    // A file of the tree holding what looks like a secret: its view is
    // gated too, and nothing of it is shown without an operator.
    let (_t, tree) = tmp();
    let k = format!("{tree}/deploy.txt");
    std::fs::write(&k, "token: ghp_0123456789abcdefghijklmnopqrstuvwxyz\n").unwrap();
    let g = e
        .gate(&json!({"command": "view", "path": k}))
        .expect("gated");
    assert!(g.action.contains("looks like a secret"), "{}", g.action);
    let r = registry(ctx.clone(), quiet());
    let run = call(&r, json!({"command": "view", "path": k})).await;
    assert!(run.denied(), "{}", run.model_text);
    assert!(!run.model_text.contains("ghp_0123"));
    // Sensitive and out-of-root paths are refused.
    let r = registry(ctx.clone(), quiet());
    let run = call(&r, json!({"command": "view", "path": "/etc/passwd"})).await;
    assert_eq!(run.class, Some(FailureClass::PermissionDenied));
    let r = registry(
        ctx,
        EditConfig {
            paths: PathPolicy::allowing(&["/nonexistent-root"]),
            ..quiet()
        },
    );
    let run = call(&r, json!({"command": "view", "path": p})).await;
    assert_eq!(run.class, Some(FailureClass::PermissionDenied));
}
