use tokio::io::{AsyncBufReadExt, BufReader};

use super::*;
use crate::approval::{ApprovalBroker, Policy};
use crate::server::hub::Identity;
use crate::server::journal::{Journal, Limits};
use vigil_protocol::{AgentEvent, OutputStream};

fn hub(
    limits: Limits,
) -> (
    Arc<Hub>,
    mpsc::UnboundedReceiver<vigil_protocol::AgentCommand>,
) {
    let (tx, _) = mpsc::unbounded_channel();
    let broker = Arc::new(ApprovalBroker::new(tx, "local".into(), Policy::Ask));
    let (cmd_tx, cmd_rx) = mpsc::unbounded_channel();
    let hub = Hub::new(
        Identity::default(),
        Journal::new(limits),
        broker,
        cmd_tx,
        None,
        Default::default(),
    );
    (hub, cmd_rx)
}

/// Every message a client reads until the connection ends.
async fn read_all(r: tokio::net::unix::OwnedReadHalf) -> Vec<ServerMsg> {
    let mut lines = BufReader::new(r).lines();
    let mut out = Vec::new();
    while let Ok(Some(line)) = lines.next_line().await {
        out.push(serde_json::from_str(&line).expect("a protocol line"));
    }
    out
}

#[tokio::test]
async fn a_client_that_reads_nothing_for_a_while_loses_output_only_and_says_so() {
    let limits = Limits {
        per_call: 64 << 10,
        total: 256 << 10,
        merge_bytes: 16 << 10,
        merge_pieces: 64,
    };
    let (hub, _commands) = hub(limits);
    let (client, server) = tokio::net::UnixStream::pair().unwrap();
    let (_server_rd, server_wr) = server.into_split();
    let (_ctl_tx, ctl_rx) = mpsc::channel(4);
    let writer = tokio::spawn(run(hub.clone(), server_wr, ctl_rx, Role::Watch, 0));
    // 20 MB of output and 200 notices while the client reads nothing.
    let chunk = "0123456789abcdef".repeat(64 * 10) + "\n";
    for i in 0..2000 {
        hub.record(AgentEvent::ToolOutput {
            call_id: "c1".into(),
            stream: OutputStream::Stdout,
            text: chunk.clone(),
        });
        if i % 10 == 0 {
            hub.record(AgentEvent::Notice {
                text: format!("lossless {i}"),
            });
        }
        tokio::task::yield_now().await;
    }
    assert!(hub.journal().output_bytes() <= 64 << 10);
    hub.close("done".into());
    let (client_rd, _client_wr) = client.into_split();
    let got = read_all(client_rd).await;
    assert!(writer.await.unwrap().is_ok());
    let notices = got
        .iter()
        .filter(|m| {
            matches!(
                m,
                ServerMsg::Event {
                    event: AgentEvent::Notice { .. },
                    ..
                }
            )
        })
        .count();
    assert_eq!(notices, 200, "every lossless event arrived");
    let output: usize = got
        .iter()
        .map(|m| match m {
            ServerMsg::Event {
                event: AgentEvent::ToolOutput { text, .. },
                ..
            } => text.len(),
            _ => 0,
        })
        .sum();
    assert!(
        output < chunk.len() * 2000,
        "output was dropped for this client"
    );
    let marker = got.iter().any(|m| {
        matches!(m, ServerMsg::Event { event: AgentEvent::ToolInfo { text, .. }, .. }
            if text.contains("not shown"))
    });
    assert!(marker, "the client is told output was not shown");
    assert!(matches!(got.last(), Some(ServerMsg::Bye { reason }) if reason == "done"));
    let seqs: Vec<u64> = got
        .iter()
        .filter_map(|m| match m {
            ServerMsg::Event { seq, .. } | ServerMsg::Live { seq } => Some(*seq),
            _ => None,
        })
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] <= w[1]), "never reordered");
}
