use super::*;

fn notice(text: &str) -> AgentEvent {
    AgentEvent::Notice { text: text.into() }
}

fn out(call: &str, text: &str) -> AgentEvent {
    AgentEvent::ToolOutput {
        call_id: call.into(),
        stream: OutputStream::Stdout,
        text: text.into(),
    }
}

/// Every line of a batch, parsed back.
fn parsed(batch: &Batch) -> Vec<(u64, AgentEvent)> {
    batch
        .lines
        .iter()
        .map(|l| {
            assert!(l.as_str().ends_with('\n'));
            match serde_json::from_str::<ServerMsg>(l.as_str()).expect("a protocol line") {
                ServerMsg::Event { seq, event } => (seq, event),
                other => panic!("not an event: {other:?}"),
            }
        })
        .collect()
}

fn output_of(events: &[(u64, AgentEvent)], call: &str) -> String {
    events
        .iter()
        .filter_map(|(_, e)| match e {
            AgentEvent::ToolOutput { call_id, text, .. } if call_id == call => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

#[test]
fn events_are_numbered_and_a_reader_gets_only_newer_ones() {
    let mut j = Journal::default();
    for i in 1..=5 {
        assert_eq!(j.append(notice(&format!("n{i}"))), i);
    }
    let all = parsed(&j.read_after(0, 100, usize::MAX));
    assert_eq!(all.len(), 5);
    assert_eq!(all[0], (1, notice("n1")));
    let newer = j.read_after(3, 100, usize::MAX);
    assert_eq!(parsed(&newer), vec![(4, notice("n4")), (5, notice("n5"))]);
    assert_eq!(newer.upto, 5);
    // A batch limit: the cursor says how far it got.
    let first = j.read_after(0, 2, usize::MAX);
    assert_eq!(first.lines.len(), 2);
    assert_eq!(first.upto, 2);
    assert!(j.read_after(5, 100, usize::MAX).lines.is_empty());
}

#[test]
fn output_deltas_merge_and_a_reader_in_the_middle_gets_the_rest() {
    let mut j = Journal::default();
    j.append(out("c1", "a\n"));
    let mid = j.append(out("c1", "b\n"));
    j.append(out("c1", "c\n"));
    assert_eq!(j.len(), 1, "three deltas of one call merge into one entry");
    let all = parsed(&j.read_after(0, 100, usize::MAX));
    assert_eq!(all.len(), 1);
    assert_eq!(all[0].0, 3, "the merged entry carries its newest seq");
    assert_eq!(output_of(&all, "c1"), "a\nb\nc\n");
    let rest = parsed(&j.read_after(mid, 100, usize::MAX));
    assert_eq!(
        output_of(&rest, "c1"),
        "c\n",
        "nothing the reader had twice"
    );
    // Another event in between starts a new entry: order is kept.
    j.append(notice("between"));
    j.append(out("c1", "d\n"));
    let all = parsed(&j.read_after(0, 100, usize::MAX));
    assert_eq!(all.len(), 3);
    assert_eq!(all[1].1, notice("between"));
}

#[test]
fn a_flood_keeps_the_newest_output_of_a_call_and_every_lossless_event() {
    let limits = Limits {
        per_call: 1000,
        total: 4000,
        merge_bytes: 100,
        merge_pieces: 8,
    };
    let mut j = Journal::new(limits);
    j.append(AgentEvent::ToolStarted {
        call_id: "c1".into(),
        name: "run_shell".into(),
        summary: "seq".into(),
    });
    let mut all_text = String::new();
    for i in 0..10_000 {
        let line = format!("{i}\n");
        all_text.push_str(&line);
        j.append(out("c1", &line));
        if i % 1000 == 0 {
            j.append(notice(&format!("mark {i}")));
        }
    }
    assert!(j.output_bytes() <= 1000 + 100, "{}", j.output_bytes());
    assert!(j.len() < 60, "entries are bounded too: {}", j.len());
    let events = parsed(&j.read_after(0, usize::MAX, usize::MAX));
    let marks = events
        .iter()
        .filter(|(_, e)| matches!(e, AgentEvent::Notice { .. }))
        .count();
    assert_eq!(marks, 10, "no lossless event is dropped");
    let kept = output_of(&events, "c1");
    assert!(all_text.ends_with(&kept), "the newest output is kept");
    assert!(kept.ends_with("9999\n"));
    let markers: Vec<&String> = events
        .iter()
        .filter_map(|(_, e)| match e {
            AgentEvent::ToolInfo { text, .. } => Some(text),
            _ => None,
        })
        .collect();
    assert_eq!(markers.len(), 1, "one marker per call: {markers:?}");
    let dropped = all_text.len() - kept.len();
    assert!(
        markers[0].contains(&format!("{dropped} bytes")),
        "{markers:?}"
    );
    // Seqs never go backwards.
    assert!(events.windows(2).all(|w| w[0].0 < w[1].0));
}

#[test]
fn the_total_bound_drops_the_oldest_calls_output_first() {
    let limits = Limits {
        per_call: 1000,
        total: 2500,
        merge_bytes: 100,
        merge_pieces: 8,
    };
    let mut j = Journal::new(limits);
    for call in ["c1", "c2", "c3", "c4"] {
        for _ in 0..20 {
            j.append(out(call, &"x".repeat(49)));
            j.append(notice("keep the entries apart"));
        }
    }
    assert!(j.output_bytes() <= 2500, "{}", j.output_bytes());
    let events = parsed(&j.read_after(0, usize::MAX, usize::MAX));
    assert_eq!(
        output_of(&events, "c1"),
        "",
        "the oldest call lost its output"
    );
    assert_eq!(
        output_of(&events, "c4").len(),
        49 * 20,
        "the newest kept all"
    );
}

#[test]
fn the_event_line_is_the_protocol_form() {
    let line = event_line(7, &notice("hi"));
    assert_eq!(
        line,
        "{\"type\":\"event\",\"seq\":7,\"event\":{\"type\":\"notice\",\"text\":\"hi\"}}\n"
    );
}
