//! Tests of the json-tags protocol: parsing, encoding, the stream filter.
use super::*;

fn ids() -> impl FnMut() -> String {
    let mut n = 0;
    move || {
        n += 1;
        format!("c{n}")
    }
}

fn parse(text: &str, multiple: bool) -> Parsed {
    parse_reply(text, Some("stop"), multiple, &mut ids())
}

fn tools() -> Vec<ToolDefinition> {
    vec![ToolDefinition::function(
        "read_file",
        "Read a file.",
        json!({"type": "object", "properties": {"path": {"type": "string"}},
               "required": ["path"]}),
    )]
}

#[test]
fn blocks_become_calls_and_leave_the_text() {
    let p = parse(
        "Reading.\n<json>\n{\"tool_name\": \"read_file\", \"tool_input\": {\"path\": \"/a\"}}\n</json>\nthen <json>{\"tool_name\": \"x\"}</json>",
        false,
    );
    let Parsed::Calls { text, calls } = p else {
        panic!("{p:?}")
    };
    assert_eq!(text, "Reading.\n\nthen");
    assert_eq!(calls.len(), 1, "one call per reply");
    assert_eq!(calls[0].function.name, "read_file");
    assert_eq!(calls[0].function.arguments, r#"{"path":"/a"}"#);
    let Parsed::Calls { calls, .. } = parse(
        "<json>{\"tool_name\": \"a\"}</json><json>{\"tool_name\": \"b\", \"tool_input\": \"{\\\"k\\\": 1}\"}</json>",
        true,
    ) else {
        panic!()
    };
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].function.arguments, "{}");
    assert_eq!(calls[1].function.arguments, r#"{"k":1}"#);
    assert_ne!(calls[0].id, calls[1].id);
}

#[test]
fn cut_off_and_malformed_blocks_are_recognised() {
    assert_eq!(
        parse_reply(
            "Sure.\n<json>\n{\"tool_name\": \"re",
            Some("length"),
            false,
            &mut ids()
        ),
        Parsed::CutOff
    );
    // Finished by itself without the close tag: not "cut off".
    match parse("Sure.\n<json>\n{\"tool_name\": \"re", false) {
        Parsed::Malformed { problem, .. } => {
            assert!(problem.contains("not closed"), "{problem}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        parse_reply("Sure. <js", Some("length"), false, &mut ids()),
        Parsed::CutOff
    );
    let cases = [
        ("<json>{nope</json>", "not valid JSON"),
        ("<json>[1]</json>", "one JSON object"),
        ("<json>{\"name\": \"a\"}</json>", "`tool_name` is missing"),
        (
            "<json>{\"tool_name\": \"a\", \"tool_input\": 3}</json>",
            "must be a JSON object",
        ),
        (
            "<json>{\"tool_name\": \"a\", \"args\": {}}</json>",
            "unknown key `args`",
        ),
        (
            "<json>{\"tool_name\": \"a\", \"tool_output\": \"x\"}</json>",
            "never write it",
        ),
    ];
    for (text, want) in cases {
        match parse(text, false) {
            Parsed::Malformed { problem, .. } => assert!(problem.contains(want), "{problem}"),
            other => panic!("{text}: {other:?}"),
        }
    }
}

#[test]
fn malformed_answer_lists_keys_and_a_literal_example() {
    let m = malformed_message(
        "the key `tool_name` is missing",
        Some("read_file"),
        &tools(),
    );
    assert!(
        m.contains("- tool_name (string, required): one of read_file"),
        "{m}"
    );
    assert!(m.contains("- tool_input (object, required)"), "{m}");
    assert!(
        m.contains(
            "<json>\n{\"tool_input\":{\"path\":\"<path>\"},\"tool_name\":\"read_file\"}\n</json>"
        ),
        "{m}"
    );
}

#[test]
fn results_are_escaped_and_cannot_close_their_block() {
    let r = render_result("t", &json!({}), "a \"q\"\nb\t\u{1}</json>");
    assert_eq!(r.matches("</json>").count(), 1);
    assert!(
        r.contains(r#""tool_output":"a \"q\"\nb\t\u0001<\/json>""#),
        "{r}"
    );
    let start = r.find('{').unwrap();
    let end = r.rfind('}').unwrap();
    let v: Value = serde_json::from_str(&r[start..=end]).unwrap();
    assert_eq!(v["tool_output"], "a \"q\"\nb\t\u{1}</json>");
}

#[test]
fn conversations_are_encoded_for_a_text_only_model() {
    let call = ToolCall {
        id: "c1".into(),
        kind: "function".into(),
        function: FunctionCall {
            name: "read_file".into(),
            arguments: r#"{"path":"/a"}"#.into(),
        },
    };
    let msgs = vec![
        ChatMessage::system("Be careful."),
        ChatMessage::user("read /a"),
        ChatMessage::assistant("Reading.", vec![call]),
        ChatMessage::tool("c1", "{\"result\":\"hi\"}"),
    ];
    let out = encode_messages(&msgs, &tools(), false);
    assert_eq!(out.len(), 4);
    assert!(out[0].content.starts_with("Be careful.\n\n# Tools"));
    assert!(out[0].content.contains("## read_file\nRead a file."));
    assert!(out[2].tool_calls.is_empty());
    assert!(out[2].content.starts_with("Reading.\n<json>\n"));
    assert_eq!(out[3].role, Role::User);
    assert!(
        out[3]
            .content
            .contains(r#""tool_output":"{\"result\":\"hi\"}""#)
    );
    assert!(out.iter().all(|m| m.role != Role::Tool));
}

#[test]
fn a_forgotten_close_tag_or_prose_after_the_tag_is_no_cut_off() {
    let Parsed::Calls { text, calls } = parse(
        "Reading.\n<json>{\"tool_name\": \"read_file\", \"tool_input\": {\"path\": \"/a\"}}",
        false,
    ) else {
        panic!()
    };
    assert_eq!(text, "Reading.");
    assert_eq!(calls[0].function.arguments, r#"{"path":"/a"}"#);
    let Parsed::Calls { text, calls } = parse("<json> Hello! How can I help?", false) else {
        panic!()
    };
    assert!(calls.is_empty());
    assert_eq!(text, "Hello! How can I help?");
}

#[test]
fn a_reply_starting_with_the_tag_is_not_invisible() {
    let mut f = TextFilter::default();
    assert_eq!(f.push("<json>"), "");
    assert_eq!(f.push(" Hello"), "<json> Hello");
    assert_eq!(f.push(" there"), " there");
    let mut f = TextFilter::default();
    assert_eq!(f.push("<json>{\"tool_name\": \"a\", "), "");
    assert_eq!(f.finish(), "<json>{\"tool_name\": \"a\", ");
    assert_eq!(
        bounded(&"x".repeat(5000), 10).len(),
        10 + "… [vigil: 4990 more characters left out]".len()
    );
}

#[test]
fn the_stream_filter_hides_blocks_split_across_deltas() {
    let mut f = TextFilter::default();
    let mut shown = String::new();
    for d in ["Hi <j", "son>{\"tool_name\"", ": 1}</js", "on> bye <", "b>"] {
        shown.push_str(&f.push(d));
    }
    shown.push_str(&f.finish());
    assert_eq!(shown, "Hi  bye <b>");
}
