//! An upstream tool that asks its client something (sampling, elicitation, roots) through `serve`,
//! driven by the official Python SDK (`tests/fixtures/mcp/asking.py`) against our conformance
//! test server: the request reaches the client that made the call and its answer the server,
//! in direct and tools mode and from a code cell; a client without the capability gets the
//! named error; two clients calling at once each receive only their own requests; a cancelled
//! call cancels its pending request at the client.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{config_file, fixtures, sdk_script, through_serve};

/// Our conformance test server over stdio.
fn over_stdio() -> Value {
    json!({
        "command": fixtures().join(".venv/bin/python"),
        "args": [fixtures().join("servers/conformance_server.py"), "--stdio"],
    })
}

/// Our conformance test server over streamable HTTP, killed on drop.
struct OverHttp {
    child: Child,
    url: String,
}

impl OverHttp {
    fn start() -> OverHttp {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(fixtures().join(".venv/bin/python"))
            .arg(fixtures().join("servers/conformance_server.py"))
            .args(["--http", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(started.elapsed() < Duration::from_secs(30), "no server");
            std::thread::sleep(Duration::from_millis(50));
        }
        OverHttp {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for OverHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The clients of `asking.py` against `serve --mode MODE` over `upstream` (named `conf`), over
/// HTTP when `http`; each client's view by its tag.
fn ask(upstream: Value, mode: &str, http: bool, clients: Value) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), json!({"conf": upstream}));
    let mut client = sdk_script("asking.py");
    client.args(["--clients", &clients.to_string()]);
    through_serve(client, &config, mode, &[], http)
}

/// A client calling `tool` with `arguments` in `mode`: directly by name, through `tool_call`,
/// or from a code cell.
fn client(tag: &str, mode: &str, tool: &str, arguments: Value) -> Value {
    let id = format!("mcp:conf:{tool}");
    let (name, arguments) = match mode {
        "direct" => (tool.to_string(), arguments),
        "tools" => ("tool_call".into(), json!({"id": id, "args": arguments})),
        _ => (
            "tool_search_code".into(),
            json!({"code": format!("return await openclaw.tools.call({id:?}, {arguments})")}),
        ),
    };
    json!({"tag": tag, "tool": name, "arguments": arguments, "sampling": true, "elicitation": true})
}

/// The text of a tool result (a code cell's value is inside its JSON).
fn text(out: &Value) -> String {
    assert_eq!(out["error"], Value::Null, "{out}");
    out["result"]["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|block| block["text"].as_str())
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn an_upstream_tool_that_samples_or_elicits_completes_through_serve() {
    // serve over stdio in front of the server over stdio, and over HTTP in front of it over
    // HTTP (two clients of one serve calling at once: see the last test for stdio).
    let over_http = OverHttp::start();
    for (mode, http) in [
        ("direct", false),
        ("tools", false),
        ("direct", true),
        ("tools", true),
    ] {
        let clients = json!([
            client(
                "a",
                mode,
                "test_sampling",
                json!({"prompt": "What is 2+2?"})
            ),
            client(
                "b",
                mode,
                "test_elicitation",
                json!({"message": "Who are you?"})
            ),
        ]);
        let upstream = if http {
            json!({"url": over_http.url})
        } else {
            over_stdio()
        };
        let out = ask(upstream, mode, http, clients);
        let (a, b) = (&out["a"], &out["b"]);
        // The client was asked what the server asked, and the server got the client's answer.
        assert_eq!(a["asked"][0]["method"], "sampling/createMessage", "{mode}");
        assert_eq!(
            a["asked"][0]["params"]["messages"][0]["content"]["text"],
            "What is 2+2?"
        );
        assert_eq!(
            text(a),
            "LLM response: answer from a (What is 2+2?)",
            "{mode} http {http}"
        );
        assert_eq!(b["asked"][0]["method"], "elicitation/create", "{mode}");
        assert_eq!(b["asked"][0]["params"]["message"], "Who are you?");
        let said = text(b);
        assert!(
            said.starts_with("User response: action=accept, content=")
                && said.contains(r#""username": "b""#),
            "{mode}: {said}"
        );
    }
}

#[test]
fn a_code_cells_call_relays_sampling_and_refuses_elicitation_naming_why() {
    let clients = json!([
        client("a", "code", "test_sampling", json!({"prompt": "Say hi"})),
        client(
            "b",
            "code",
            "test_elicitation",
            json!({"message": "Who are you?"})
        ),
    ]);
    let out = ask(over_stdio(), "code", false, clients);
    assert!(
        text(&out["a"]).contains("LLM response: answer from a (Say hi)"),
        "{}",
        text(&out["a"])
    );
    // The elicitation never reached the client: the server was told why.
    assert_eq!(out["b"]["asked"], json!([]));
    let b = text(&out["b"]);
    assert!(b.contains("elicitation/create"), "{b}");
    assert!(b.contains("code cell"), "{b}");
}

#[test]
fn a_client_without_the_capability_gets_an_error_naming_it() {
    let mut sampler = client("a", "tools", "test_sampling", json!({"prompt": "x"}));
    sampler["sampling"] = json!(false);
    let mut elicited = client("b", "tools", "test_elicitation", json!({"message": "y"}));
    elicited["elicitation"] = json!(false);
    let out = ask(over_stdio(), "tools", false, json!([sampler, elicited]));
    for (tag, capability) in [("a", "sampling"), ("b", "elicitation")] {
        let said = text(&out[tag]);
        assert_eq!(out[tag]["asked"], json!([]), "{tag}");
        assert!(
            said.contains(&format!("did not declare the {capability} capability")),
            "{tag}: {said}"
        );
        assert_eq!(out[tag]["result"]["isError"], true, "{tag}: {said}");
    }
}

#[test]
fn two_clients_calling_at_once_each_receive_only_their_own_requests() {
    // Over HTTP the stream a request arrives on names its call: both are relayed, each to its
    // own caller, while the calls overlap (each client answers after 1 s).
    let upstream = OverHttp::start();
    let mut clients = Vec::new();
    for tag in ["a", "b"] {
        let mut spec = client(
            tag,
            "tools",
            "test_sampling",
            json!({"prompt": format!("for {tag}")}),
        );
        spec["delay"] = json!(1.0);
        clients.push(spec);
    }
    clients[1]["start_after"] = json!(0.3);
    let out = ask(json!({"url": upstream.url}), "tools", true, json!(clients));
    for tag in ["a", "b"] {
        let asked = &out[tag]["asked"];
        assert_eq!(asked.as_array().unwrap().len(), 1, "{tag}: {asked}");
        assert_eq!(
            asked[0]["params"]["messages"][0]["content"]["text"],
            format!("for {tag}")
        );
        assert_eq!(
            text(&out[tag]),
            format!("LLM response: answer from {tag} (for {tag})")
        );
    }
    // Over stdio nothing on the wire says which call a request is for: the second client's
    // request, sent while the first client's call runs, is refused rather than guessed.
    let out = ask(over_stdio(), "tools", true, json!(clients));
    assert_eq!(
        text(&out["a"]),
        "LLM response: answer from a (for a)",
        "{out}"
    );
    assert_eq!(out["b"]["asked"], json!([]), "{out}");
    let b = text(&out["b"]);
    assert!(b.contains("does not say which one asked"), "{b}");
}

#[test]
fn a_cancelled_call_cancels_its_pending_request_at_the_client() {
    // The client takes 10 s to answer the server's sampling request and gives up its call
    // after 1 s: toolsearch cancels the call upstream and the relayed request at the client.
    for http in [false, true] {
        let mut spec = client("a", "tools", "test_sampling", json!({"prompt": "slow"}));
        spec["delay"] = json!(10.0);
        spec["cancel_after"] = json!(1.0);
        let out = ask(over_stdio(), "tools", http, json!([spec]));
        let a = &out["a"];
        assert_eq!(a["error"], "cancelled by the client", "{a}");
        assert_eq!(a["asked"][0]["method"], "sampling/createMessage", "{a}");
        assert_eq!(
            a["cancelled"],
            json!(["sampling/createMessage"]),
            "http {http}: {a}"
        );
    }
}

#[test]
fn a_roots_request_is_answered_with_the_callers_own_roots() {
    // Two clients with different roots call at once through serve over HTTP, in front of the
    // server over HTTP: each call's server sees its own caller's roots; a third client declares
    // none and the server is told so.
    let upstream = OverHttp::start();
    let mut clients = Vec::new();
    for tag in ["a", "b"] {
        let mut spec = client(tag, "direct", "test_roots", json!({}));
        spec["roots"] = json!([
            format!("file:///work/{tag}"),
            format!("file:///shared/{tag}")
        ]);
        clients.push(spec);
    }
    clients.push(client("c", "direct", "test_roots", json!({})));
    let out = ask(json!({"url": upstream.url}), "direct", true, json!(clients));
    for tag in ["a", "b"] {
        assert_eq!(
            out[tag]["asked"],
            json!([{"method": "roots/list"}]),
            "{out}"
        );
        assert_eq!(
            text(&out[tag]),
            format!("Roots: file:///work/{tag}, file:///shared/{tag}")
        );
    }
    // toolsearch answers roots for all its clients, so the server asked; it was told why not.
    assert_eq!(out["c"]["asked"], json!([]), "{out}");
    let c = text(&out["c"]);
    assert!(
        c.contains("roots/list") && c.contains("did not declare the roots capability"),
        "{c}"
    );
    // Over stdio (serve and server), from a code cell too, the one caller's roots are the
    // answer.
    let mut spec = client("a", "code", "test_roots", json!({}));
    spec["roots"] = json!(["file:///home/a"]);
    let out = ask(over_stdio(), "code", false, json!([spec]));
    let a = text(&out["a"]);
    assert!(a.contains("Roots: file:///home/a"), "{a}");
}

#[test]
fn a_client_of_the_2026_revision_is_asked_in_rounds() {
    // Such a client takes no requests from its server: what the upstream asks during its call
    // comes back as an `input_required` result, the SDK answers it and retries, and the call
    // goes on where it was. Serve over stdio in front of the server over stdio, and over HTTP
    // in front of it over HTTP (the three clients' calls overlap).
    let over_http = OverHttp::start();
    for (mode, http) in [("direct", false), ("tools", true), ("code", true)] {
        let mut clients = vec![client(
            "a",
            mode,
            "test_sampling",
            json!({"prompt": "2026?"}),
        )];
        if mode != "code" {
            clients.push(client(
                "b",
                mode,
                "test_elicitation",
                json!({"message": "Who?"}),
            ));
        }
        let mut roots = client("c", mode, "test_roots", json!({}));
        roots["roots"] = json!(["file:///rounds"]);
        clients.push(roots);
        for spec in &mut clients {
            spec["era"] = json!("2026-07-28");
        }
        let upstream = if http {
            json!({"url": over_http.url})
        } else {
            over_stdio()
        };
        let out = ask(upstream, mode, http, json!(clients));
        let context = format!("{mode} http {http}: {out}");
        for tag in ["a", "c"] {
            assert_eq!(out[tag]["era"], "2026-07-28", "{context}");
        }
        assert_eq!(
            out["a"]["asked"][0]["method"], "sampling/createMessage",
            "{context}"
        );
        assert!(
            text(&out["a"]).contains("LLM response: answer from a (2026?)"),
            "{context}"
        );
        assert_eq!(
            out["c"]["asked"],
            json!([{"method": "roots/list"}]),
            "{context}"
        );
        assert!(
            text(&out["c"]).contains("Roots: file:///rounds"),
            "{context}"
        );
        if mode != "code" {
            assert_eq!(
                out["b"]["asked"][0]["params"]["message"], "Who?",
                "{context}"
            );
            assert!(text(&out["b"]).contains(r#""username": "b""#), "{context}");
        }
    }
}

#[test]
fn an_upstream_of_the_2026_revision_asks_in_rounds_and_its_caller_answers() {
    // The server answers a call `input_required` with what it asks; toolsearch asks the caller
    // (a request to a handshake client, a round of its own to a 2026 client) and sends the
    // call again with the answer ("(in rounds)": the server asked that way).
    let over_http = OverHttp::start();
    for (mut upstream, protocol, http, era) in [
        (over_stdio(), "2026-07-28", false, None),
        (
            json!({"url": over_http.url}),
            "auto",
            true,
            Some("2026-07-28"),
        ),
        (over_stdio(), "auto", true, None),
    ] {
        upstream["protocol"] = json!(protocol);
        let mut clients = vec![
            client("a", "direct", "test_sampling", json!({"prompt": "p"})),
            client("b", "direct", "test_elicitation", json!({"message": "m"})),
            client("c", "direct", "test_roots", json!({})),
        ];
        clients[2]["roots"] = json!(["file:///r"]);
        if let Some(era) = era {
            for spec in &mut clients {
                spec["era"] = json!(era);
            }
        }
        let out = ask(upstream, "direct", http, json!(clients));
        let context = format!("{protocol} http {http} {era:?}: {out}");
        assert_eq!(
            text(&out["a"]),
            "LLM response: answer from a (p) (in rounds)",
            "{context}"
        );
        let b = text(&out["b"]);
        assert!(
            b.contains(r#""username": "b""#) && b.ends_with(" (in rounds)"),
            "{context}"
        );
        assert_eq!(text(&out["c"]), "Roots: file:///r (in rounds)", "{context}");
        for (tag, method) in [
            ("a", "sampling/createMessage"),
            ("b", "elicitation/create"),
            ("c", "roots/list"),
        ] {
            assert_eq!(out[tag]["asked"][0]["method"], method, "{context}");
        }
    }
}

#[test]
fn a_parked_calls_state_resumes_it_once_and_only_for_its_tool() {
    // A 2026-07-28 client drives the rounds by hand through serve over HTTP.
    let upstream = OverHttp::start();
    let mut spec = client("a", "direct", "test_roots", json!({}));
    spec["manual"] = json!("test_sampling");
    spec["roots"] = json!(["file:///declared"]);
    let out = ask(json!({"url": upstream.url}), "direct", true, json!([spec]));
    let rounds = &out["a"]["rounds"];
    let [first, other_tool, made_up, answered, again] = [0, 1, 2, 3, 4].map(|i| &rounds[i]);
    // The first answer asks for roots, under a state of 32 hex digits.
    assert_eq!(first["resultType"], "input_required", "{out}");
    let state = first["requestState"].as_str().unwrap();
    assert!(
        state.len() == 32 && state.chars().all(|c| c.is_ascii_hexdigit()),
        "{state}"
    );
    let asked: Vec<_> = first["inputRequests"]
        .as_object()
        .unwrap()
        .values()
        .collect();
    assert_eq!(asked.len(), 1, "{out}");
    assert_eq!(asked[0]["method"], "roots/list", "{out}");
    // Another tool's retry is refused naming the state's tool; the call still waits.
    let refused = other_tool["error"].as_str().unwrap();
    assert!(
        refused.contains(r#"belongs to a call of "test_roots""#),
        "{refused}"
    );
    let made_up = made_up["error"].as_str().unwrap();
    assert!(
        made_up.contains("unknown or expired requestState"),
        "{made_up}"
    );
    // The answering retry takes the call on where it was.
    assert_eq!(
        answered["content"][0]["text"], "Roots: file:///manual",
        "{out}"
    );
    // A state resumes once.
    let again = again["error"].as_str().unwrap();
    assert!(again.contains("unknown or expired requestState"), "{again}");
}
