use std::collections::HashSet;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::{
    CatalogMode, CatalogSnapshot, Config, Descriptor, DirectoryStyle, ErrorKind, Executor, Format,
    Mode, Policy, Reply, RunContext, Session, SessionError, Source, Surface, Target, ToolOutput,
    load_catalog_file,
};

use crate::support::{BIN, shared};

/// The namespace index's hard cap.
const INDEX_HARD_CAP_BYTES: usize = 4_096;

/// `^[a-zA-Z0-9_-]{1,64}$`.
fn is_valid_provider_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

fn options(mode: Mode) -> Config {
    Config {
        mode,
        ..Config::default()
    }
}

fn rt() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// A session over `tools` (and `policy`) under `config`; code mode gets the real sandbox.
fn build(
    rt: &tokio::runtime::Runtime,
    tools: Vec<Descriptor>,
    policy: Policy,
    config: Config,
    context_tokens: Option<usize>,
) -> Result<Session, SessionError> {
    rt.block_on(
        Session::builder(config)
            .catalog(CatalogSnapshot::build(tools))
            .policy(policy)
            .context_tokens(context_tokens)
            .worker_binary(BIN)
            .warm_pool(0)
            .build(),
    )
}

fn surface_of(rt: &tokio::runtime::Runtime, tools: Vec<Descriptor>, config: Config) -> Session {
    build(rt, tools, Policy::allow_all(), config, None).unwrap()
}

/// The message of a failed reply, and its gateway kind.
fn failure(reply: &Reply) -> (ErrorKind, String) {
    let Reply::Failed {
        error: Some(kind),
        body,
        ..
    } = reply
    else {
        panic!("not a failed call: {reply:?}")
    };
    (
        *kind,
        body["error"]["message"].as_str().unwrap().to_string(),
    )
}

fn ok_tool(d: Descriptor) -> Descriptor {
    d.tool(std::sync::Arc::new(toolsearch::FnTool(
        |_ctx, args: Value| async move {
            Ok(ToolOutput::json(
                json!({"ok": true, "keys": args.as_object().map(|m| m.len()).unwrap_or(0)}),
            ))
        },
    )))
}

/// A small fixed catalog with one tool of every kind.
fn small_catalog() -> Vec<Descriptor> {
    let mut ask = Descriptor::new(Source::Core, "core", "ask_user")
        .description("Ask the user a clarifying question")
        .input_schema(json!({"type":"object","properties":{"question":{"type":"string"}},"required":["question"]}));
    ask.catalog_mode = CatalogMode::DirectOnly;
    let mut issue = Descriptor::new(Source::Mcp, "github", "create_issue")
        .description("UNTRUSTED MCP TEXT: create an issue")
        .input_schema(json!({"type":"object","properties":{"title":{"type":"string"}}}));
    issue.executor = Executor::Unavailable;
    let mut open = Descriptor::new(Source::Client, "app", "open_in_browser")
        .description("UNTRUSTED CLIENT TEXT: open a URL")
        .input_schema(json!({"type":"object","properties":{"url":{"type":"string"}}}));
    open.executor = Executor::Client;
    vec![
        ask,
        ok_tool(Descriptor::new(Source::Core, "core", "read").description("Read a file from the workspace")
            .input_schema(json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false}))),
        Descriptor::new(Source::Plugin, "calendar", "create_event").description("Create a calendar event")
            .tool(std::sync::Arc::new(toolsearch::FnTool(|_ctx, _args: Value| async move {
                Ok(ToolOutput::json(json!({"id": "evt_1"})))
            })))
            .input_schema(json!({"type":"object","properties":{"title":{"type":"string"},"start":{"type":"string"}},"required":["title","start"],"additionalProperties":false}))
            .output_schema(json!({"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false})),
        ok_tool(Descriptor::new(Source::Plugin, "mail", "send_email").description("Send an email message")
            .input_schema(json!({"type":"object","properties":{"to":{"type":"string"},"body":{"type":"string"}},"required":["to"]}))),
        issue,
        open,
    ]
}

fn canonical(surface: &Surface) -> String {
    format!(
        "mode: {} (requested {})\nfallback: {:?}\n## tools (openai)\n{}\n## system prompt\n{}",
        surface.mode,
        surface.requested_mode,
        surface.fallback,
        serde_json::to_string_pretty(&surface.tools_json(Format::OpenAi)).unwrap(),
        surface.system_prompt()
    )
}

#[test]
fn every_mode_surface_snapshot() {
    let rt = rt();
    for (name, mode, style) in [
        ("direct", Mode::Direct, DirectoryStyle::List),
        ("tools", Mode::Tools, DirectoryStyle::List),
        ("directory_list", Mode::Directory, DirectoryStyle::List),
        (
            "directory_namespaces",
            Mode::Directory,
            DirectoryStyle::Namespaces,
        ),
        ("code", Mode::Code, DirectoryStyle::List),
        ("auto_small", Mode::Auto, DirectoryStyle::List),
    ] {
        let mut opts = options(mode);
        opts.directory = style;
        let session = surface_of(&rt, small_catalog(), opts);
        let surface = session.surface();
        insta::assert_snapshot!(format!("surface_{name}"), canonical(&surface));
        // Untrusted text never reaches the system prompt.
        assert!(!surface.system_prompt().contains("UNTRUSTED"), "{name}");
        assert!(!surface.system_prompt().contains("create_issue"), "{name}");
    }
    let anthropic = surface_of(&rt, small_catalog(), options(Mode::Tools)).tools(Format::Anthropic);
    insta::assert_snapshot!(
        "surface_tools_anthropic",
        serde_json::to_string_pretty(&anthropic).unwrap()
    );
}

#[test]
fn prompts_and_tool_lists_are_byte_stable() {
    let forward = small_catalog();
    let mut reversed = small_catalog();
    reversed.reverse();
    let rt = rt();
    for mode in [Mode::Direct, Mode::Tools, Mode::Directory, Mode::Code] {
        let a = surface_of(&rt, forward.clone(), options(mode));
        let b = surface_of(&rt, reversed.clone(), options(mode));
        assert_eq!(
            a.tools(Format::OpenAi).to_string(),
            b.tools(Format::OpenAi).to_string(),
            "{mode}"
        );
        assert_eq!(a.system_prompt(), b.system_prompt(), "{mode}");
    }
    // Different sessions (and whatever the users say in them) give the same prefix.
    let run = |session: &str| {
        rt.block_on(
            Session::builder(options(Mode::Directory))
                .catalog(CatalogSnapshot::build(small_catalog()))
                .run(RunContext {
                    session: Some(session.into()),
                    run_id: format!("run-{session}"),
                    ..RunContext::default()
                })
                .build(),
        )
        .unwrap()
    };
    let (one, two) = (run("alpha"), run("beta"));
    assert_eq!(one.system_prompt(), two.system_prompt());
    assert_eq!(one.tools(Format::Anthropic), two.tools(Format::Anthropic));
}

fn long_tools(n: usize) -> Vec<Descriptor> {
    (0..n)
        .map(|i| {
            ok_tool(
                Descriptor::new(Source::Plugin, &format!("team{}", i % 17), &format!("operation_{i:05}"))
                    .description(format!("Operation number {i} does something useful with records, reports, dashboards and many other things that need a long description to fill the directory budget quickly"))
                    .input_schema(json!({"type":"object","properties":{"record_id":{"type":"string"}},"required":["record_id"],"additionalProperties":false})),
            )
        })
        .collect()
}

#[test]
fn a_large_directory_shrinks_descriptions_then_drops_rows_and_everything_stays_reachable() {
    let rt = rt();
    let session = surface_of(&rt, long_tools(2_000), options(Mode::Directory));
    let directory = session
        .prompt_sections()
        .into_iter()
        .find(|s| s.name == "directory")
        .unwrap()
        .text;
    assert!(
        directory.chars().count() <= 18_000,
        "{}",
        directory.chars().count()
    );
    let rows: Vec<&str> = directory.lines().filter(|l| l.starts_with("- ")).collect();
    assert!(
        rows.iter().all(|r| !r.contains(':')),
        "name-only rows before dropping rows"
    );
    let omitted = 2_000 - rows.len();
    assert!(omitted > 0);
    assert!(
        directory.contains(&format!("…{omitted} more tools are not listed for space")),
        "{directory}"
    );
    // A smaller context shrinks the budget: min(18000, max(768, tokens/10)).
    let tight = build(
        &rt,
        long_tools(2_000),
        Policy::allow_all(),
        options(Mode::Directory),
        Some(20_000),
    )
    .unwrap();
    assert!(tight.prompt_sections()[1].text.chars().count() <= 2_000);
    // A moderate catalog keeps descriptions, shortened first.
    let medium = surface_of(&rt, long_tools(150), options(Mode::Directory));
    let text = &medium.prompt_sections()[1].text;
    assert!(
        text.lines()
            .filter(|l| l.starts_with("- "))
            .all(|l| l.contains(": Operation number")),
        "{text}"
    );
    assert!(
        text.lines().any(|l| l.ends_with('…')),
        "descriptions were cut to 64 characters"
    );

    // Every omitted tool is still found by search and callable, through hydration too.
    let last = "operation_01999";
    assert!(!directory.contains(last));
    let hits = rt.block_on(session.handle("tool_search", &json!({"query": last})));
    assert_eq!(hits.body()[0]["name"], last);
    let outcome = rt.block_on(session.handle(last, &json!({"record_id": "r1"})));
    assert!(matches!(outcome, Reply::Done(_)), "{outcome:?}");
}

#[test]
fn the_namespace_index_is_bounded_and_never_leaks_denied_tools() {
    let mut tools = Vec::new();
    for i in 0..300 {
        let source = if i % 12 == 11 {
            Source::Mcp
        } else {
            Source::Plugin
        };
        let mut tool = Descriptor::new(
            source,
            &format!("namespace_number_{:02}", i % 12),
            &format!("a_rather_long_tool_name_for_capability_number_{i:04}_with_suffix"),
        );
        tool.description = "x".into();
        tools.push(tool);
    }
    let mut secret = Descriptor::new(Source::Plugin, "vault", "reveal_the_master_secret");
    secret.description = "hidden".into();
    tools.push(secret);
    let policy = Policy::from_json(&json!({"agent": {"deny": ["plugin:vault:*"]}})).unwrap();
    let mut opts = options(Mode::Directory);
    opts.directory = DirectoryStyle::Namespaces;
    let rt = rt();
    let session = build(&rt, tools, policy, opts, None).unwrap();
    let index = session
        .prompt_sections()
        .into_iter()
        .find(|s| s.name == "namespace_index")
        .unwrap()
        .text;
    assert!(index.len() <= INDEX_HARD_CAP_BYTES, "{} bytes", index.len());
    assert!(index.len() <= 3_800, "{} bytes", index.len());
    assert!(
        index.starts_with("300 tools are available on demand across 12 authorized namespaces."),
        "{index}"
    );
    assert!(
        index
            .trim_end()
            .ends_with("more — use tool_search(query=\"<service or action>\")"),
        "{index}"
    );
    assert!(!index.contains("vault") && !index.contains("master_secret") && !index.contains("301"));
    // Untrusted namespaces show their server name and count only.
    assert!(index.contains("- mcp:namespace_number_11 (25)"));
    assert!(
        !index.contains("capability_number_0011_"),
        "no untrusted tool names"
    );
}

#[test]
fn every_real_catalog_gets_valid_unique_provider_names_that_dispatch_back() {
    let mut files = vec![];
    for set in ["bfcl", "livemcpbench", "seal_tools", "toolbench"] {
        files.push(shared().join("eval").join(set).join("catalog.jsonl"));
    }
    for entry in std::fs::read_dir(shared().join("catalogs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "jsonl") {
            files.push(path);
        }
    }
    let rt = rt();
    for path in files {
        let loaded = load_catalog_file(&path, Source::Plugin).unwrap();
        let count = CatalogSnapshot::build(loaded.descriptors.clone()).len();
        let session = surface_of(&rt, loaded.descriptors, options(Mode::Direct));
        let surface = session.surface();
        let mut seen = HashSet::new();
        for tool in &surface.tools {
            assert!(
                is_valid_provider_name(&tool.name),
                "{}: {:?}",
                path.display(),
                tool.name
            );
            assert!(
                seen.insert(tool.name.clone()),
                "{}: duplicate {:?}",
                path.display(),
                tool.name
            );
        }
        assert_eq!(surface.tools.len(), count, "{}", path.display());
        // Each name dispatches to its own tool (file tools have no implementation: the error
        // names the tool it reached).
        rt.block_on(async {
            for definition in &surface.tools {
                let Target::Tool(expected) = &definition.target else {
                    panic!()
                };
                let outcome = session.handle(&definition.name, &json!({})).await;
                let (kind, message) = failure(&outcome);
                assert!(
                    message.starts_with(&format!("{expected} has no implementation")),
                    "{}: {message}",
                    definition.name
                );
                assert_eq!(kind, ErrorKind::Unavailable);
            }
        });
    }
}

#[test]
fn directory_mode_hydrates_hidden_names_through_full_validation() {
    let rt = rt();
    let session = surface_of(&rt, small_catalog(), options(Mode::Directory));
    assert!(
        !session
            .tool_definitions()
            .iter()
            .any(|t| t.name == "create_event"),
        "catalog tools stay hidden"
    );
    rt.block_on(async {
        let bad = session.handle("create_event", &json!({"title": "x"})).await;
        let (kind, message) = failure(&bad);
        assert_eq!(kind, ErrorKind::InvalidArguments);
        assert!(message.contains("missing required property \"start\""));
        let good = session
            .handle(
                "create_event",
                &json!({"title": "x", "start": "2026-12-01T10:00:00Z"}),
            )
            .await;
        assert!(matches!(good, Reply::Done(_)), "{good:?}");
        // Client tools are declared in directory mode and handed back to the application.
        let client = session
            .handle("open_in_browser", &json!({"url": "https://example.com"}))
            .await;
        assert!(matches!(client, Reply::ClientCall(_)), "{client:?}");
    });
    // In tools mode a hidden name runs as the tool_call it means, through the same validation,
    // and says how the control is used; a name that matches nothing is an error.
    let tools = surface_of(&rt, small_catalog(), options(Mode::Tools));
    let outcome = rt.block_on(tools.handle("create_event", &json!({})));
    let recovered = outcome.recovered().expect("a recovered call");
    assert_eq!(
        (recovered.form, recovered.ran_as.as_str()),
        ("catalog_name", "tool_call")
    );
    assert_eq!(
        recovered.hint,
        "Next time call tool_call with {\"args\":{},\"id\":\"plugin:calendar:create_event\"}."
    );
    let (kind, message) = failure(outcome.unwrapped());
    assert_eq!(kind, ErrorKind::InvalidArguments);
    assert!(message.contains("missing required property \"start\""));
    let good = rt.block_on(tools.handle(
        "calendar.create_event",
        &json!({"title": "x", "start": "2026-12-01T10:00:00Z"}),
    ));
    assert!(matches!(good.unwrapped(), Reply::Done(_)), "{good:?}");
    assert!(good.text().contains("evt_1"), "{}", good.text());
    let outcome = rt.block_on(tools.handle("qqzx_vorbl", &json!({})));
    let message = failure(&outcome).1;
    assert!(message.contains("not callable by name here"), "{message}");
}

#[test]
fn auto_exposes_small_catalogs_directly_and_defers_large_ones() {
    let rt = rt();
    let mode_of = |config: Config, context: Option<usize>| {
        build(&rt, long_tools(10), Policy::allow_all(), config, context)
            .unwrap()
            .mode()
    };
    let small = surface_of(&rt, long_tools(10), options(Mode::Auto));
    assert_eq!(small.mode(), Mode::Direct);
    assert_eq!(small.tool_definitions().len(), 10);

    let large = surface_of(&rt, long_tools(500), options(Mode::Auto));
    assert_eq!(large.mode(), Mode::Code, "the default deferred mode");
    assert_eq!(large.surface().auto.as_ref().unwrap().tools, 500);

    // The boundary follows the settings: tool count…
    let mut opts = options(Mode::Auto);
    opts.auto_max_tools = 10;
    opts.auto_deferred_mode = Mode::Tools;
    assert_eq!(mode_of(opts.clone(), None), Mode::Direct);
    opts.auto_max_tools = 9;
    assert_eq!(mode_of(opts, None), Mode::Tools);
    // …and estimated schema tokens, including the context budget.
    let tokens = small.surface().auto.as_ref().unwrap().schema_tokens;
    let mut opts = options(Mode::Auto);
    opts.auto_max_schema_tokens = tokens;
    assert_eq!(mode_of(opts.clone(), None), Mode::Direct);
    opts.auto_max_schema_tokens = tokens - 1;
    assert_ne!(mode_of(opts, None), Mode::Direct);
    assert_ne!(
        mode_of(options(Mode::Auto), Some(tokens * 10 - 10)),
        Mode::Direct
    );
}

#[test]
fn code_mode_falls_back_to_tools_and_says_why() {
    let rt = rt();
    let log = toolsearch::SessionLog::in_memory();
    let session = rt
        .block_on(
            Session::builder(options(Mode::Code))
                .catalog(CatalogSnapshot::build(small_catalog()))
                .worker_binary("/nonexistent/toolsearch")
                .session_log(log.clone())
                .build(),
        )
        .unwrap();
    let surface = session.surface();
    assert_eq!(surface.mode, Mode::Tools);
    assert_eq!(surface.requested_mode, Mode::Code);
    let fallback = surface.fallback.as_deref().unwrap();
    assert!(
        fallback.starts_with("code mode is unavailable here (")
            && fallback.contains("/nonexistent/toolsearch"),
        "{fallback}"
    );
    assert!(surface.tools.iter().any(|t| t.name == "tool_search"));
    assert!(!surface.tools.iter().any(|t| t.name == "tool_search_code"));
    assert!(!session.has_sandbox());
    // run_start first, then the fallback record.
    let kinds: Vec<String> = log
        .lines()
        .iter()
        .map(|r| r["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["run_start", "code_fallback"]);
}

#[test]
fn client_tool_names_may_not_collide_with_catalog_names() {
    let mut tools = small_catalog();
    let mut clash = Descriptor::new(Source::Client, "app", "send_email");
    clash.executor = Executor::Client;
    tools.push(clash);
    let error = build(
        &rt(),
        tools,
        Policy::allow_all(),
        options(Mode::Directory),
        None,
    )
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "client tool \"client:client:send_email\" has the same name as catalog tool \"plugin:mail:send_email\"; client tool names must not collide with catalog names"
    );
}

#[test]
fn lenient_names_hydrate_and_ambiguous_names_list_allowed_candidates() {
    let mut tools = small_catalog();
    tools.push(ok_tool(
        Descriptor::new(Source::Plugin, "outlook", "create_event")
            .description("Create an Outlook event"),
    ));
    tools.push(ok_tool(
        Descriptor::new(Source::Plugin, "exchange", "create_event")
            .description("Create an Exchange event"),
    ));
    let policy = Policy::from_json(&json!({"agent": {"deny": ["plugin:exchange:*"]}})).unwrap();
    let rt = rt();
    let session = build(&rt, tools, policy, options(Mode::Directory), None).unwrap();
    rt.block_on(async {
        let ambiguous = session.handle("create_event", &json!({})).await;
        let (kind, message) = failure(&ambiguous);
        assert_eq!(kind, ErrorKind::Ambiguous);
        assert_eq!(
            message,
            "\"create_event\" is ambiguous: it matches 2 tools: \"plugin:calendar:create_event\", \"plugin:outlook:create_event\". Call tool_call again with one exact id from the list."
        );
        // The dotted and `__` forms reach one tool and hydrate through validation.
        for name in ["outlook.create_event", "outlook__create_event"] {
            let outcome = session.handle(name, &json!({})).await;
            let Reply::Done(envelope) = outcome else { panic!("{name}: {outcome:?}") };
            assert_eq!(envelope.tool.id, "plugin:outlook:create_event");
        }
        // A denied tool's name answers like an unknown one: a search for its words, which
        // calls nothing and finds the same allowed tools.
        let denied = session.handle("exchange__create_event", &json!({})).await;
        let never = session.handle("nowhere__create_event", &json!({})).await;
        for reply in [&denied, &never] {
            let recovered = reply.recovered().expect("a recovered search");
            assert_eq!(recovered.form, "unknown_name");
            assert!(recovered.hint.starts_with("Nothing ran"), "{}", recovered.hint);
        }
        let ids = |reply: &Reply| {
            let text = reply.text();
            assert!(!text.contains("plugin:exchange"), "{text}");
            let mut ids: Vec<String> = text
                .match_indices("plugin:")
                .map(|(at, _)| text[at..].split('"').next().unwrap().to_string())
                .collect();
            ids.sort();
            ids
        };
        assert_eq!(ids(&denied), ids(&never));
        assert!(!ids(&denied).is_empty());
        let (kind, _) = failure(&session.handle("qqzx_vorbl", &json!({})).await);
        assert_eq!(kind, ErrorKind::UnknownTool);
    });
}
