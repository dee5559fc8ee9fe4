use std::collections::HashSet;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::catalog::{
    CatalogMode, CatalogSnapshot, Descriptor, Executor, Source, ToolOutput, file,
};
use toolsearch::config::{Config, DirectoryStyle, Mode};
use toolsearch::directory::INDEX_HARD_CAP_BYTES;
use toolsearch::gateway::{CallOutcome, ErrorKind, Gateway, RunContext};
use toolsearch::policy::Policy;
use toolsearch::surface::{
    CodeAvailability, Dispatch, Format, Surface, SurfaceError, SurfaceOptions,
    is_valid_provider_name,
};

use crate::support::shared;

fn options(mode: Mode) -> SurfaceOptions {
    SurfaceOptions {
        config: Config {
            mode,
            ..Config::default()
        },
        context_tokens: None,
        code: CodeAvailability::Available,
    }
}

fn ok_tool(d: Descriptor) -> Descriptor {
    d.tool(std::sync::Arc::new(toolsearch::catalog::FnTool(
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
            .tool(std::sync::Arc::new(toolsearch::catalog::FnTool(|_ctx, _args: Value| async move {
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

fn gateway_of(tools: Vec<Descriptor>) -> Gateway {
    Gateway::builder(CatalogSnapshot::build(tools))
        .build()
        .unwrap()
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
    let gateway = gateway_of(small_catalog());
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
        opts.config.directory = style;
        let surface = Surface::build(&gateway, &opts).unwrap();
        insta::assert_snapshot!(format!("surface_{name}"), canonical(&surface));
        // Untrusted text never reaches the system prompt.
        assert!(!surface.system_prompt().contains("UNTRUSTED"), "{name}");
        assert!(!surface.system_prompt().contains("create_issue"), "{name}");
    }
    let anthropic = Surface::build(&gateway, &options(Mode::Tools))
        .unwrap()
        .tools_json(Format::Anthropic);
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
    for mode in [Mode::Direct, Mode::Tools, Mode::Directory, Mode::Code] {
        let a = Surface::build(&gateway_of(forward.clone()), &options(mode)).unwrap();
        let b = Surface::build(&gateway_of(reversed.clone()), &options(mode)).unwrap();
        assert_eq!(
            a.tools_json(Format::OpenAi).to_string(),
            b.tools_json(Format::OpenAi).to_string(),
            "{mode}"
        );
        assert_eq!(a.system_prompt(), b.system_prompt(), "{mode}");
    }
    // Different sessions (and whatever the users say in them) give the same prefix.
    let run = |session: &str| {
        let gateway = Gateway::builder(CatalogSnapshot::build(small_catalog()))
            .run(RunContext {
                session: Some(session.into()),
                run_id: format!("run-{session}"),
                ..RunContext::default()
            })
            .build()
            .unwrap();
        Surface::build(&gateway, &options(Mode::Directory)).unwrap()
    };
    let (one, two) = (run("alpha"), run("beta"));
    assert_eq!(one.system_prompt(), two.system_prompt());
    assert_eq!(
        one.tools_json(Format::Anthropic),
        two.tools_json(Format::Anthropic)
    );
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
    let gateway = gateway_of(long_tools(2_000));
    let surface = Surface::build(&gateway, &options(Mode::Directory)).unwrap();
    let directory = &surface
        .prompt
        .iter()
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
    let mut small = options(Mode::Directory);
    small.context_tokens = Some(20_000);
    let tight = Surface::build(&gateway, &small).unwrap();
    assert!(tight.prompt[1].text.chars().count() <= 2_000);
    // A moderate catalog keeps descriptions, shortened first.
    let medium = Surface::build(&gateway_of(long_tools(150)), &options(Mode::Directory)).unwrap();
    let text = &medium.prompt[1].text;
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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let last = "operation_01999";
    assert!(!directory.contains(last));
    let hits = gateway.search(&json!({"query": last})).unwrap();
    assert_eq!(hits[0]["name"], last);
    let outcome = rt.block_on(surface.dispatch(&gateway, last, &json!({"record_id": "r1"})));
    assert!(
        matches!(outcome, Dispatch::Outcome(CallOutcome::Done(_))),
        "{outcome:?}"
    );
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
    let gateway = Gateway::builder(CatalogSnapshot::build(tools))
        .policy(policy)
        .build()
        .unwrap();
    let mut opts = options(Mode::Directory);
    opts.config.directory = DirectoryStyle::Namespaces;
    let surface = Surface::build(&gateway, &opts).unwrap();
    let index = &surface
        .prompt
        .iter()
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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    for path in files {
        let loaded = file::load(&path, Source::Plugin).unwrap();
        let gateway = Gateway::builder(CatalogSnapshot::build(loaded.descriptors))
            .build()
            .unwrap();
        let surface = Surface::build(&gateway, &options(Mode::Direct)).unwrap();
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
        assert_eq!(
            surface.tools.len(),
            gateway.view().len(),
            "{}",
            path.display()
        );
        // Each name dispatches to its own tool (file tools have no implementation: the error
        // names the tool it reached).
        rt.block_on(async {
            for definition in &surface.tools {
                let toolsearch::surface::Target::Tool(expected) = &definition.target else {
                    panic!()
                };
                let outcome = surface
                    .dispatch(&gateway, &definition.name, &json!({}))
                    .await;
                let Dispatch::Outcome(CallOutcome::Failed(error)) = outcome else {
                    panic!("{outcome:?}")
                };
                assert_eq!(
                    error.tool_id.as_deref(),
                    Some(expected.as_str()),
                    "{}: {}",
                    definition.name,
                    error.message
                );
                assert_eq!(error.kind, ErrorKind::Unavailable);
            }
        });
    }
}

#[test]
fn directory_mode_hydrates_hidden_names_through_full_validation() {
    let gateway = gateway_of(small_catalog());
    let surface = Surface::build(&gateway, &options(Mode::Directory)).unwrap();
    assert!(
        !surface.tools.iter().any(|t| t.name == "create_event"),
        "catalog tools stay hidden"
    );
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let bad = surface
            .dispatch(&gateway, "create_event", &json!({"title": "x"}))
            .await;
        let Dispatch::Outcome(CallOutcome::Failed(error)) = bad else {
            panic!("{bad:?}")
        };
        assert_eq!(error.kind, ErrorKind::InvalidArguments);
        assert!(
            error
                .message
                .contains("missing required property \"start\"")
        );
        let good = surface
            .dispatch(
                &gateway,
                "create_event",
                &json!({"title": "x", "start": "2026-12-01T10:00:00Z"}),
            )
            .await;
        assert!(
            matches!(good, Dispatch::Outcome(CallOutcome::Done(_))),
            "{good:?}"
        );
        // Client tools are declared in directory mode and handed back to the application.
        let client = surface
            .dispatch(
                &gateway,
                "open_in_browser",
                &json!({"url": "https://example.com"}),
            )
            .await;
        assert!(
            matches!(
                client,
                Dispatch::Outcome(CallOutcome::ClientCallRequired(_))
            ),
            "{client:?}"
        );
    });
    // In tools mode hidden names are not callable; the error says how to run the tool.
    let tools = Surface::build(&gateway, &options(Mode::Tools)).unwrap();
    let outcome = rt.block_on(tools.dispatch(&gateway, "create_event", &json!({})));
    let Dispatch::Outcome(CallOutcome::Failed(error)) = outcome else {
        panic!()
    };
    assert_eq!(
        error.message,
        "\"create_event\" is not declared to you: run it with tool_call {\"id\": \"plugin:calendar:create_event\", \"args\": {…}}."
    );
    let outcome = rt.block_on(tools.dispatch(&gateway, "no_such_tool", &json!({})));
    let Dispatch::Outcome(CallOutcome::Failed(error)) = outcome else {
        panic!()
    };
    assert!(
        error.message.contains("not callable by name here"),
        "{}",
        error.message
    );
}

#[test]
fn auto_exposes_small_catalogs_directly_and_defers_large_ones() {
    let small = gateway_of(long_tools(10));
    let surface = Surface::build(&small, &options(Mode::Auto)).unwrap();
    assert_eq!(surface.mode, Mode::Direct);
    assert_eq!(surface.tools.len(), 10);

    let large = gateway_of(long_tools(500));
    let surface = Surface::build(&large, &options(Mode::Auto)).unwrap();
    assert_eq!(surface.mode, Mode::Code, "the default deferred mode");
    assert_eq!(surface.auto.as_ref().unwrap().tools, 500);

    // The boundary follows the settings: tool count…
    let mut opts = options(Mode::Auto);
    opts.config.auto_max_tools = 10;
    opts.config.auto_deferred_mode = Mode::Tools;
    assert_eq!(Surface::build(&small, &opts).unwrap().mode, Mode::Direct);
    opts.config.auto_max_tools = 9;
    assert_eq!(Surface::build(&small, &opts).unwrap().mode, Mode::Tools);
    // …and estimated schema tokens, including the context budget.
    let tokens = Surface::build(&small, &options(Mode::Auto))
        .unwrap()
        .auto
        .unwrap()
        .schema_tokens;
    let mut opts = options(Mode::Auto);
    opts.config.auto_max_schema_tokens = tokens;
    assert_eq!(Surface::build(&small, &opts).unwrap().mode, Mode::Direct);
    opts.config.auto_max_schema_tokens = tokens - 1;
    assert_ne!(Surface::build(&small, &opts).unwrap().mode, Mode::Direct);
    let mut opts = options(Mode::Auto);
    opts.context_tokens = Some(tokens * 10 - 10);
    assert_ne!(Surface::build(&small, &opts).unwrap().mode, Mode::Direct);
}

#[test]
fn code_mode_falls_back_to_tools_and_says_why() {
    let gateway = gateway_of(small_catalog());
    let mut opts = options(Mode::Code);
    opts.code = CodeAvailability::Unavailable("worker could not start: exec failed".into());
    let surface = Surface::build(&gateway, &opts).unwrap();
    assert_eq!(surface.mode, Mode::Tools);
    assert_eq!(surface.requested_mode, Mode::Code);
    assert!(surface.fallback.as_deref().unwrap().contains("exec failed"));
    assert!(surface.tools.iter().any(|t| t.name == "tool_search"));
    assert!(!surface.tools.iter().any(|t| t.name == "tool_search_code"));
}

#[test]
fn client_tool_names_may_not_collide_with_catalog_names() {
    let mut tools = small_catalog();
    let mut clash = Descriptor::new(Source::Client, "app", "send_email");
    clash.executor = Executor::Client;
    tools.push(clash);
    let error = Surface::build(&gateway_of(tools), &options(Mode::Directory)).unwrap_err();
    assert_eq!(
        error,
        SurfaceError::ClientNameCollision {
            client: "client:client:send_email".into(),
            catalog: "plugin:mail:send_email".into()
        }
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
    let gateway = Gateway::builder(CatalogSnapshot::build(tools))
        .policy(policy)
        .build()
        .unwrap();
    let surface = Surface::build(&gateway, &options(Mode::Directory)).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let ambiguous = surface.dispatch(&gateway, "create_event", &json!({})).await;
        let Dispatch::Outcome(CallOutcome::Failed(error)) = ambiguous else { panic!("{ambiguous:?}") };
        assert_eq!(error.kind, ErrorKind::Ambiguous);
        assert_eq!(
            error.message,
            "\"create_event\" is ambiguous: it matches 2 tools: \"plugin:calendar:create_event\", \"plugin:outlook:create_event\". Use the exact id."
        );
        // The dotted and `__` forms reach one tool and hydrate through validation.
        for name in ["outlook.create_event", "outlook__create_event"] {
            let outcome = surface.dispatch(&gateway, name, &json!({})).await;
            let Dispatch::Outcome(CallOutcome::Done(envelope)) = outcome else { panic!("{name}: {outcome:?}") };
            assert_eq!(envelope.tool.id, "plugin:outlook:create_event");
        }
        // A denied tool's name answers like an unknown one.
        let denied = surface.dispatch(&gateway, "exchange__create_event", &json!({})).await;
        let never = surface.dispatch(&gateway, "nowhere__create_event", &json!({})).await;
        let (Dispatch::Outcome(CallOutcome::Failed(a)), Dispatch::Outcome(CallOutcome::Failed(b))) = (denied, never) else { panic!() };
        assert_eq!(a.kind, b.kind);
        assert_eq!(a.message.replace("exchange", "X"), b.message.replace("nowhere", "X"));
    });
}
