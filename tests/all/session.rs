use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::{
    CatalogMode, CatalogSnapshot, Config, Descriptor, Executor, FailureKind, FnTool, IndexCache,
    Mode, Profile, Reply, Session, Source, ToolError, ToolOutput,
};

use crate::support::{BIN, rt, stderr, stdout, toolsearch};

fn ok(d: Descriptor) -> Descriptor {
    d.tool(Arc::new(FnTool(|_ctx, args: Value| async move {
        Ok(ToolOutput::json(json!({"echo": args})))
    })))
}

/// One tool of every kind a recovery message is about.
fn catalog() -> Vec<Descriptor> {
    let schema = json!({"type":"object","properties":{"title":{"type":"string"},"start":{"type":"string"}},"required":["title","start"],"additionalProperties":false});
    let mut ask = ok(Descriptor::new(Source::Core, "core", "ask_user")
        .description("Ask the user a clarifying question")
        .input_schema(json!({"type":"object","properties":{"question":{"type":"string"}},"required":["question"]})));
    ask.catalog_mode = CatalogMode::DirectOnly;
    let mut open = Descriptor::new(Source::Client, "app", "open_in_browser")
        .description("Open a URL in the user's browser")
        .input_schema(json!({"type":"object","properties":{"url":{"type":"string"}}}));
    open.executor = Executor::Client;
    vec![
        ask,
        open,
        ok(Descriptor::new(Source::Plugin, "calendar", "create_event")
            .description("Create a calendar event")
            .input_schema(schema.clone())),
        ok(Descriptor::new(Source::Plugin, "outlook", "create_event")
            .description("Create an Outlook event")
            .input_schema(schema)),
        ok(Descriptor::new(Source::Mcp, "github", "create_issue")
            .description("Create a GitHub issue")
            .input_schema(json!({"type":"object","properties":{"title":{"type":"string"}}}))),
    ]
}

/// A session on `rt` (the sandbox's tasks live on the runtime that built it).
fn session(rt: &tokio::runtime::Runtime, mode: Mode) -> Session {
    rt.block_on(
        Session::builder(Config::default())
            .mode(mode)
            .catalog(CatalogSnapshot::build(catalog()))
            .worker_binary(BIN)
            .warm_pool(0)
            .build(),
    )
    .unwrap()
}

/// The text of a failed reply (a failed cell's JS value is collected by the cell itself).
fn message(reply: &Reply) -> String {
    match reply {
        Reply::Failed { body, .. } => body["error"]["message"].as_str().unwrap().to_string(),
        other => panic!("expected a failure, got {other:?}"),
    }
}

/// Whether `text` names a structured control (`tool_search` as a whole word, `tool_describe`,
/// `tool_call`).
fn names_structured_control(text: &str) -> bool {
    let bytes = text.as_bytes();
    ["tool_search", "tool_describe", "tool_call"]
        .iter()
        .any(|control| {
            text.match_indices(control).any(|(at, _)| {
                let end = at + control.len();
                let before =
                    at == 0 || !(bytes[at - 1].is_ascii_alphanumeric() || bytes[at - 1] == b'_');
                let after = end == bytes.len()
                    || !(bytes[end].is_ascii_alphanumeric() || bytes[end] == b'_');
                before && after
            })
        })
}

/// Every recovery message a model can meet, in every mode, snapshotted; a code cell's
/// messages name only `openclaw.tools.*`, a structured surface's only its controls.
#[test]
fn every_recovery_message_in_every_mode() {
    let rt = rt();
    // Structured modes: the model uses the three controls.
    for mode in [Mode::Tools, Mode::Directory] {
        let s = session(&rt, mode);
        s.mark_server_down("github", "it exited with status 1");
        let cases: Vec<(&str, &str, Value)> = vec![
            (
                "unknown id",
                "tool_call",
                json!({"id": "plugin:calendar:create_evnt", "args": {}}),
            ),
            (
                "unknown describe",
                "tool_describe",
                json!({"id": "calendar.create_evnt"}),
            ),
            (
                "invalid arguments",
                "tool_call",
                json!({"id": "plugin:calendar:create_event", "args": {"title": "x", "strat": "y"}}),
            ),
            (
                "ambiguous",
                "tool_call",
                json!({"id": "create_event", "args": {}}),
            ),
            (
                "direct-only",
                "tool_call",
                json!({"id": "core:core:ask_user", "args": {"question": "?"}}),
            ),
            (
                "outage",
                "tool_call",
                json!({"id": "mcp:github:create_issue", "args": {}}),
            ),
            ("bad search", "tool_search", json!({"queries": "x"})),
            ("bad describe", "tool_describe", json!({"what": 1})),
            ("bad call", "tool_call", json!({"args": {}})),
            ("undeclared name", "qqzx_vorbl", json!({})),
        ];
        let mut text = String::new();
        for (label, control, arguments) in cases {
            let reply = rt.block_on(s.handle(control, &arguments));
            let m = message(&reply);
            assert!(!m.contains("openclaw"), "{mode} {label}: {m}");
            text.push_str(&format!("## {label}\n{m}\n"));
        }
        // A client tool is handed back to the application, not refused.
        let client = rt.block_on(s.handle(
            "tool_call",
            &json!({"id": "client:client:open_in_browser", "args": {"url": "https://example.com"}}),
        ));
        assert!(matches!(client, Reply::ClientCall(_)), "{client:?}");
        insta::assert_snapshot!(format!("recovery_{mode}"), text);
    }

    // Code mode: the same cases from inside a cell.
    let s = session(&rt, Mode::Code);
    s.mark_server_down("github", "it exited with status 1");
    let cell = r#"
        const cases = [
          ["unknown id", () => openclaw.tools.call("plugin:calendar:create_evnt", {})],
          ["unknown describe", () => openclaw.tools.describe("calendar.create_evnt")],
          ["invalid arguments", () => openclaw.tools.call("plugin:calendar:create_event", {title: "x", strat: "y"})],
          ["ambiguous", () => openclaw.tools.call("create_event", {})],
          ["direct-only", () => openclaw.tools.call("core:core:ask_user", {question: "?"})],
          ["client tool", () => openclaw.tools.call("client:client:open_in_browser", {url: "https://example.com"})],
          ["outage", () => openclaw.tools.call("mcp:github:create_issue", {})],
          ["bad search", () => openclaw.tools.search({queries: "x"})],
          ["bad describe", () => openclaw.tools.describe({what: 1})],
          ["bad call", () => openclaw.tools.call(42)],
        ];
        const out = [];
        for (const [label, run] of cases) {
          try { await run(); out.push([label, "(no error)"]); } catch (e) { out.push([label, e.message]); }
        }
        return out;
    "#;
    let result = rt.block_on(s.run_cell(cell, None));
    assert!(result.outcome.is_ok(), "{result:?}");
    let mut text = String::new();
    for pair in result.value.unwrap().as_array().unwrap() {
        let (label, m) = (pair[0].as_str().unwrap(), pair[1].as_str().unwrap());
        assert!(!names_structured_control(m), "code {label}: {m}");
        assert_ne!(m, "(no error)", "{label}");
        text.push_str(&format!("## {label}\n{m}\n"));
    }
    // At the provider level the code surface's own messages.
    for (label, name, arguments) in [
        ("undeclared name", "qqzx_vorbl", json!({})),
        ("missing code", "tool_search_code", json!({})),
    ] {
        let m = message(&rt.block_on(s.handle(name, &arguments)));
        assert!(!names_structured_control(&m), "code {label}: {m}");
        text.push_str(&format!("## {label}\n{m}\n"));
    }
    insta::assert_snapshot!("recovery_code", text);
    rt.block_on(s.finish());

    // Direct mode: every tool is declared by name.
    let s = session(&rt, Mode::Direct);
    s.mark_server_down("github", "it exited with status 1");
    let mut text = String::new();
    let surface = s.surface();
    let names = surface.names();
    let event = names
        .name_of("plugin:calendar:create_event")
        .unwrap()
        .to_string();
    let issue = names
        .name_of("mcp:github:create_issue")
        .unwrap()
        .to_string();
    for (label, name, arguments) in [
        (
            "invalid arguments",
            event.as_str(),
            json!({"title": "x", "strat": "y"}),
        ),
        ("ambiguous", "create_event", json!({})),
        ("outage", issue.as_str(), json!({})),
        ("unknown name", "create_evnt", json!({})),
    ] {
        let m = message(&rt.block_on(s.handle(name, &arguments)));
        assert!(!m.contains("openclaw"), "direct {label}: {m}");
        text.push_str(&format!("## {label}\n{m}\n"));
    }
    insta::assert_snapshot!("recovery_direct", text);
}

/// The same search through the CLI's `search`, a code cell (`exec`) and the tools surface
/// gets the same limits from one config, whatever the entry point (R-3.8, R-10).
#[test]
fn one_config_gives_every_entry_point_the_same_limits() {
    let query = "send a message";
    let count_cli = |extra: &[&str]| {
        let mut args = vec!["search", query, "--json"];
        args.extend_from_slice(extra);
        let out = toolsearch(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_str::<Value>(&stdout(&out)).unwrap()["hits"]
            .as_array()
            .unwrap()
            .len()
    };
    let count_exec = |extra: &[&str], limit: &str| {
        let code = format!("return (await openclaw.tools.search({query:?}{limit})).length");
        let mut args = vec!["exec", "-e", code.as_str(), "--json"];
        args.extend_from_slice(extra);
        let out = toolsearch(&args);
        let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
        assert_eq!(value["ok"], true, "{value}");
        value["value"].as_u64().unwrap() as usize
    };
    let rt = rt();
    let count_surface = |config: Config, limit: Option<u64>| {
        let session = rt
            .block_on(
                Session::builder(config)
                    .mode(Mode::Tools)
                    .catalog(toolsearch::demo::catalog())
                    .build(),
            )
            .unwrap();
        // The declared schema advertises the limit the gateway enforces.
        let definitions = session.tools(toolsearch::Format::OpenAi);
        let search = definitions
            .as_array()
            .unwrap()
            .iter()
            .find(|d| d["function"]["name"] == "tool_search")
            .unwrap();
        let advertised = search["function"]["parameters"]["properties"]["limit"]["maximum"]
            .as_u64()
            .unwrap();
        let mut args = json!({"query": query});
        if let Some(limit) = limit {
            args["limit"] = json!(limit);
        }
        let hits = rt.block_on(session.handle("tool_search", &args)).body();
        (hits.as_array().unwrap().len(), advertised as usize)
    };

    // The local profile: 5 by default, at most 10.
    let local = Config::for_profile(Profile::Local);
    assert_eq!(count_cli(&["--profile", "local"]), 5);
    assert_eq!(count_cli(&["--profile", "local", "--limit", "50"]), 10);
    assert_eq!(count_exec(&["--profile", "local"], ""), 5);
    assert_eq!(count_exec(&["--profile", "local"], ", {limit: 50}"), 10);
    assert_eq!(count_surface(local.clone(), None), (5, 10));
    assert_eq!(count_surface(local, Some(50)), (10, 10));

    // A config file value changes every entry point the same way.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("toolsearch.json5");
    std::fs::write(
        &path,
        "{tools: {toolSearch: {searchDefaultLimit: 3, maxSearchLimit: 4}}}",
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let config = Config::from_file(&path, None).unwrap();
    assert_eq!(count_cli(&["--config", file]), 3);
    assert_eq!(count_cli(&["--config", file, "--limit", "9"]), 4);
    assert_eq!(count_exec(&["--config", file], ""), 3);
    assert_eq!(count_exec(&["--config", file], ", {limit: 9}"), 4);
    assert_eq!(count_surface(config.clone(), None), (3, 4));
    assert_eq!(count_surface(config, Some(9)), (4, 4));
}

/// Eight sessions asking for the same new index at once cause exactly one build (R-3.10).
#[test]
fn concurrent_sessions_share_one_index_build() {
    let rt = rt();
    let cache = Arc::new(IndexCache::new());
    let tools: Vec<Descriptor> = (0..2_000)
        .map(|i| {
            Descriptor::new(Source::Plugin, "bulk", &format!("tool_{i:04}"))
                .description(format!("Bulk operation number {i} on records and reports"))
        })
        .collect();
    let snapshot = CatalogSnapshot::build(tools);
    let sessions = rt.block_on(async {
        let mut tasks = tokio::task::JoinSet::new();
        for _ in 0..8 {
            let builder = Session::builder(Config::default())
                .mode(Mode::Tools)
                .catalog(snapshot.clone())
                .index_cache(cache.clone());
            tasks.spawn(async move { builder.build().await.unwrap() });
        }
        let mut sessions = Vec::new();
        while let Some(session) = tasks.join_next().await {
            sessions.push(session.unwrap());
        }
        sessions
    });
    assert_eq!(sessions.len(), 8);
    assert_eq!(cache.builds(), 1);
    for session in &sessions {
        let hits = session
            .search(&json!({"query": "bulk operation 1234"}))
            .body();
        assert_eq!(hits[0]["name"], "tool_1234");
    }
    // The same from plain threads racing on the cache itself.
    let other = CatalogSnapshot::build(catalog());
    let view = toolsearch::Authorized::new(other, toolsearch::Policy::allow_all());
    let barrier = Arc::new(std::sync::Barrier::new(8));
    let indexes: Vec<_> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let (cache, barrier, view) = (cache.clone(), barrier.clone(), view.clone());
                scope.spawn(move || {
                    barrier.wait();
                    cache.get(&view).unwrap()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(cache.builds(), 2);
    assert!(indexes.iter().all(|i| Arc::ptr_eq(i, &indexes[0])));
}

/// Failures keep their kind across every seam: an upstream outage raised by a tool body is an
/// outage (not an ordinary failure), a nested call's kind survives, a panicking tool is an
/// internal error and the run keeps serving.
#[test]
fn failure_kinds_survive_the_seams_and_a_panicking_tool_is_internal() {
    let upstream = Descriptor::new(Source::Mcp, "remote", "fetch_page").tool(Arc::new(FnTool(
        |_ctx, _args: Value| async move {
            Err(ToolError::of(
                FailureKind::UpstreamUnavailable,
                "connection refused",
            ))
        },
    )));
    let nested = Descriptor::new(Source::Plugin, "chain", "outer").tool(Arc::new(FnTool(
        |ctx: toolsearch::CallContext, _args: Value| async move {
            let nested = ctx.nested.clone().unwrap();
            let inner = nested.call("mcp:remote:fetch_page", json!({})).await;
            let error = inner.unwrap_err();
            Ok(ToolOutput::json(json!({"kind": error.kind})))
        },
    )));
    let boom = Descriptor::new(Source::Plugin, "chain", "boom").tool(Arc::new(FnTool(
        |_ctx, args: Value| async move {
            if args.is_object() {
                panic!("a bug in a tool body");
            }
            Ok(ToolOutput::text("unreachable"))
        },
    )));
    let rt = rt();
    let s = rt
        .block_on(
            Session::builder(Config::default())
                .mode(Mode::Tools)
                .catalog(CatalogSnapshot::build([upstream, nested, boom]))
                .build(),
        )
        .unwrap();
    let reply = rt.block_on(s.handle(
        "tool_call",
        &json!({"id": "mcp:remote:fetch_page", "args": {}}),
    ));
    let Reply::Failed { kind, error, .. } = &reply else {
        panic!("{reply:?}")
    };
    assert_eq!(*kind, FailureKind::UpstreamUnavailable);
    assert_eq!(*error, Some(toolsearch::ErrorKind::ServerUnavailable));
    // The server is not marked down, so this is one failed call, not an outage.
    assert_eq!(
        message(&reply),
        "mcp:remote:fetch_page failed: connection refused"
    );
    let reply = rt.block_on(s.handle(
        "tool_call",
        &json!({"id": "plugin:chain:outer", "args": {}}),
    ));
    assert_eq!(
        reply.body()["result"]["details"]["kind"],
        "upstream_unavailable"
    );
    let reply = rt.block_on(s.handle("tool_call", &json!({"id": "plugin:chain:boom", "args": {}})));
    let Reply::Failed { kind, error, .. } = &reply else {
        panic!("{reply:?}")
    };
    assert_eq!(*kind, FailureKind::Internal);
    assert_eq!(*error, Some(toolsearch::ErrorKind::Internal));
    assert!(message(&reply).contains("panicked"), "{reply:?}");
    // The run keeps serving.
    let hits = rt.block_on(s.handle("tool_search", &json!({"query": "fetch page"})));
    assert_eq!(hits.body()[0]["id"], "mcp:remote:fetch_page");
    let telemetry = rt.block_on(s.finish());
    // The outage, the nested call inside `outer` (a call of its own) and the panic.
    assert_eq!(telemetry["counters"]["call_errors"], 3);
}
