//! Tool results pass through `serve` as MCP content: each content type, `structuredContent`,
//! `isError` and `_meta` compared with what the same server answers directly (the official
//! Python SDK on both sides, `tests/fixtures/mcp/content.py`); and what the model and a code
//! cell read of non-text content (its size, never its data).

use std::sync::OnceLock;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::{Mode, Reply};

use super::{Run, argv, config_file, sdk_script, test_server, through_serve};

/// The `--content` tools of `testserver.mjs`.
const TOOLS: [&str; 8] = [
    "image",
    "audio",
    "resource_link",
    "embedded_text",
    "embedded_blob",
    "mixed",
    "structured",
    "failing",
];

/// Each of [`TOOLS`] called on the test server directly and through `serve --mode MODE` (over
/// stdio, or HTTP): `{tool: {direct, through}}` as the Python SDK parsed the results.
fn compare(mode: &str, http: bool) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let upstream = test_server(&["--content", "--name", "test"]);
    let config = config_file(dir.path(), json!({"test": upstream}));
    let mut client = sdk_script("content.py");
    client
        .args(["--upstream", &argv(&upstream)])
        .args(["--tools", &TOOLS.join(",")]);
    through_serve(client, &config, mode, &[], http)
}

/// Through `tool_call` in tools mode over stdio, computed once for the tests below.
fn through_tool_call() -> &'static Value {
    static OUT: OnceLock<Value> = OnceLock::new();
    OUT.get_or_init(|| compare("tools", false))
}

/// The client got `tool`'s content blocks, structured content and error flag exactly as the
/// server sent them, the server's `_meta` entries kept, and (for a result) the resolved tool
/// named under `_meta["toolsearch/tool"]`.
fn assert_passed_through(out: &Value, tool: &str) {
    let direct = &out[tool]["direct"];
    let through = &out[tool]["through"];
    assert!(
        direct["content"].as_array().is_some_and(|c| !c.is_empty()),
        "{tool}: {direct}"
    );
    for key in ["content", "structuredContent", "isError"] {
        assert_eq!(through.get(key), direct.get(key), "{tool}: {key}");
    }
    if let Some(meta) = direct["_meta"].as_object() {
        for (key, value) in meta {
            assert_eq!(&through["_meta"][key], value, "{tool}: _meta {key}");
        }
    }
    if direct["isError"] != true {
        assert_eq!(
            through["_meta"]["toolsearch/tool"],
            json!({"id": format!("mcp:test:{tool}"), "name": tool, "source": "mcp"}),
            "{tool}"
        );
    }
}

fn kinds(out: &Value, tool: &str) -> Vec<String> {
    out[tool]["through"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .map(|block| block["type"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn tool_call_passes_an_image_through() {
    let out = through_tool_call();
    assert_passed_through(out, "image");
    assert_eq!(kinds(out, "image"), ["image"]);
    assert_eq!(
        out["image"]["through"]["content"][0]["mimeType"],
        "image/png"
    );
}

#[test]
fn tool_call_passes_audio_through() {
    let out = through_tool_call();
    assert_passed_through(out, "audio");
    assert_eq!(kinds(out, "audio"), ["audio"]);
}

#[test]
fn tool_call_passes_a_resource_link_through() {
    let out = through_tool_call();
    assert_passed_through(out, "resource_link");
    assert_eq!(kinds(out, "resource_link"), ["text", "resource_link"]);
    assert_eq!(
        out["resource_link"]["through"]["content"][1]["uri"],
        "file:///srv/reports/q3.txt"
    );
}

#[test]
fn tool_call_passes_embedded_resources_through_text_and_blob() {
    let out = through_tool_call();
    assert_passed_through(out, "embedded_text");
    assert_passed_through(out, "embedded_blob");
    assert_eq!(
        out["embedded_text"]["through"]["content"][0]["resource"]["text"],
        "# Today\nship it"
    );
    assert_eq!(
        out["embedded_blob"]["through"]["content"][0]["resource"]["blob"],
        "AAECA/7/"
    );
}

#[test]
fn tool_call_passes_mixed_content_through_in_order_with_annotations() {
    let out = through_tool_call();
    assert_passed_through(out, "mixed");
    assert_eq!(
        kinds(out, "mixed"),
        [
            "text",
            "image",
            "text",
            "audio",
            "resource_link",
            "resource"
        ]
    );
    assert_eq!(
        out["mixed"]["through"]["content"][1]["annotations"],
        json!({"audience": ["user"], "priority": 0.5})
    );
}

#[test]
fn tool_call_passes_structured_content_and_meta_through() {
    let out = through_tool_call();
    assert_passed_through(out, "structured");
    assert_eq!(
        out["structured"]["through"]["structuredContent"],
        json!({"city": "Lisbon", "temperature": 21.5, "unit": "C"})
    );
    assert_eq!(
        out["structured"]["through"]["_meta"]["example.com/trace"],
        "t-42"
    );
}

#[test]
fn tool_call_passes_an_error_result_through_as_sent() {
    let out = through_tool_call();
    assert_passed_through(out, "failing");
    let through = &out["failing"]["through"];
    assert_eq!(through["isError"], true);
    assert_eq!(through["content"][0]["text"], "the disk is full");
    assert_eq!(through["structuredContent"], json!({"errno": 28}));
}

#[test]
fn direct_mode_over_http_passes_every_content_type_through() {
    let out = compare("direct", true);
    for tool in TOOLS {
        assert_passed_through(&out, tool);
    }
}

#[test]
fn the_model_and_code_cells_read_non_text_content_by_size_without_its_data() {
    let run = Run::new(
        json!({"test": test_server(&["--content", "--name", "test"])}),
        Mode::Code,
    );
    // What a provider's model reads of a call (tools mode's tool_call, the agent loop).
    let reply = run.call("mcp:test:mixed", json!({}));
    let Reply::Done(_) = &reply else {
        panic!("{reply:?}")
    };
    let body = reply.body();
    assert_eq!(body["result"]["text"], "first\nsecond");
    assert_eq!(
        body["result"]["details"]["content"],
        json!([
            {"type": "image", "mimeType": "image/png", "bytes": 70,
             "annotations": {"audience": ["user"], "priority": 0.5}},
            {"type": "audio", "mimeType": "audio/wav", "bytes": 16},
            {"type": "resource_link", "uri": "file:///srv/reports/q3.txt", "name": "q3.txt",
             "description": "The Q3 report", "mimeType": "text/plain"},
            {"type": "resource", "resource": {"uri": "test://bytes/six",
             "mimeType": "application/octet-stream", "bytes": 6}},
        ])
    );
    let text = reply.text();
    assert!(
        !text.contains("iVBORw0KGgo") && !text.contains("AAECA"),
        "{text}"
    );
    // An embedded text resource keeps its text; structured content is the details.
    let body = run.call("mcp:test:embedded_text", json!({})).body();
    assert_eq!(
        body["result"]["details"]["content"][0]["resource"]["text"],
        "# Today\nship it"
    );
    let body = run.call("mcp:test:structured", json!({})).body();
    assert_eq!(body["result"]["details"]["unit"], "C");
    // A code cell gets the same JSON value.
    let cell = run.cell(
        "const r = await openclaw.tools.call('mcp:test:image', {}); return r.result.details.content[0];",
    );
    assert_eq!(
        cell["value"],
        json!({"type": "image", "mimeType": "image/png", "bytes": 70}),
        "{cell}"
    );
    // An error result reads as the tool's failure.
    let failed = run.call("mcp:test:failing", json!({}));
    assert!(failed.is_error(), "{failed:?}");
    assert!(
        failed.text().contains("the disk is full"),
        "{}",
        failed.text()
    );
}

#[test]
fn an_image_past_the_message_bound_is_refused_naming_it_never_cut() {
    let run = Run::new(
        json!({"test": test_server(&["--content", "--name", "test"])}),
        Mode::Tools,
    );
    // 13 MB of image data is 17.3 MB of base64: over MAX_MCP_MESSAGE_BYTES (16 MiB).
    let failed = run.call("mcp:test:image", json!({"bytes": 13_000_000}));
    assert!(failed.is_error(), "{failed:?}");
    let body = failed.body();
    let message = body["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("\"test\"") && message.contains("MAX_MCP_MESSAGE_BYTES"),
        "{message}"
    );
    run.eventually("the server to come back", |run| {
        matches!(run.status("test"), toolsearch::UpstreamStatus::Ready)
    });
    let again = run.call("mcp:test:image", json!({"bytes": 3}));
    assert_eq!(again.body()["result"]["details"]["content"][0]["bytes"], 3);
}
