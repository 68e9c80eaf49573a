//! The diff review card's data end to end: a gated `write_file` or `edit`
//! through the registry and the real approval broker puts what it would
//! change (read from the real file before asking) on the approval request,
//! and the file is untouched until the operator approves.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;
use vigil::agent::approval::{ApprovalBroker, Policy};
use vigil::exec::ExecutionContext;
use vigil::tools::ToolRegistry;
use vigil::tools::edit::{Edit, EditConfig};
use vigil::tools::files::WriteFile;
use vigil::tools::paths::resolve_local;
use vigil_protocol::AgentEvent;
use vigil_protocol::approval::ApprovalDecision;
use vigil_protocol::approval::FileChange;

/// Run one gated call; answer its approval with `answer` and return the
/// change the request carried and whether the call succeeded.
async fn ask(tool: &str, args: Value, answer: ApprovalDecision) -> (Option<FileChange>, bool) {
    let (tx, mut rx) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::Ask));
    let mut r = ToolRegistry::new();
    r.register(WriteFile::new(ExecutionContext::local(), true));
    r.register(Edit::new(ExecutionContext::local(), EditConfig::default()));
    r.set_approver(broker.clone());
    let call = tokio::spawn({
        let args = args.to_string();
        let tool = tool.to_string();
        async move { r.execute(&tool, &args).await }
    });
    let request = loop {
        match rx.recv().await.expect("the broker asks") {
            AgentEvent::ApprovalRequested { request } => break request,
            _ => continue,
        }
    };
    let seen = request.change.clone();
    assert!(broker.resolve(request.id, answer));
    let run = call.await.expect("call task");
    (seen, run.ok())
}

fn tmp() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let base = resolve_local(dir.path()).unwrap();
    let s = base.to_str().unwrap().to_string();
    (dir, s)
}

#[tokio::test]
async fn str_replace_shows_before_and_after_and_waits_for_the_operator() {
    let (_d, base) = tmp();
    let p = format!("{base}/app.conf");
    std::fs::write(&p, "port = 80\nworkers = 2\n").unwrap();
    let args = json!({"command": "str_replace", "path": p, "old_str": "workers = 2", "new_str": "workers = 8"});
    let (change, ok) = ask("edit", args, ApprovalDecision::Deny).await;
    assert_eq!(
        change,
        Some(FileChange::Modify {
            path: p.clone(),
            before: "port = 80\nworkers = 2\n".into(),
            after: "port = 80\nworkers = 8\n".into(),
        })
    );
    assert!(!ok);
    assert_eq!(
        std::fs::read_to_string(&p).unwrap(),
        "port = 80\nworkers = 2\n"
    );
}

#[tokio::test]
async fn insert_and_a_failing_edit_say_what_would_happen() {
    let (_d, base) = tmp();
    let p = format!("{base}/list.txt");
    std::fs::write(&p, "a\nc\n").unwrap();
    let args = json!({"command": "insert", "path": p, "insert_line": 1, "new_str": "b"});
    let (change, ok) = ask("edit", args, ApprovalDecision::ApproveOnce).await;
    let Some(FileChange::Modify { after, .. }) = change else {
        panic!("{change:?}")
    };
    assert_eq!(after, "a\nb\nc\n");
    assert!(ok);
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "a\nb\nc\n");
    let args = json!({"command": "str_replace", "path": p, "old_str": "zzz", "new_str": "y"});
    let (change, _) = ask("edit", args, ApprovalDecision::Deny).await;
    let Some(FileChange::Opaque { why, .. }) = change else {
        panic!("{change:?}")
    };
    assert!(
        why.contains("would fail") && why.contains("no match"),
        "{why}"
    );
}

#[tokio::test]
async fn write_file_new_existing_and_binary() {
    let (_d, base) = tmp();
    let new = format!("{base}/motd");
    let args = json!({"path": new, "content": "hello\n"});
    let (change, ok) = ask("write_file", args, ApprovalDecision::ApproveOnce).await;
    assert_eq!(
        change,
        Some(FileChange::Create {
            path: new.clone(),
            content: "hello\n".into()
        })
    );
    assert!(ok);
    let args = json!({"path": new, "content": "bye\n"});
    let (change, _) = ask("write_file", args, ApprovalDecision::Deny).await;
    assert!(
        matches!(&change, Some(FileChange::Modify { before, after, .. }) if before == "hello\n" && after == "bye\n"),
        "{change:?}"
    );
    let bin = format!("{base}/blob");
    std::fs::write(&bin, [0x7f, b'E', b'L', b'F', 0xff, 0]).unwrap();
    let args = json!({"path": bin, "content": "text"});
    let (change, _) = ask("write_file", args, ApprovalDecision::Deny).await;
    let Some(FileChange::Opaque { why, .. }) = change else {
        panic!("{change:?}")
    };
    assert!(why.contains("binary (6 bytes)"), "{why}");
    assert_eq!(std::fs::read(&bin).unwrap().len(), 6, "untouched");
}
