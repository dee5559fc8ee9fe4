use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::Policy;
use toolsearch::{
    Approval, ApprovalHandler, BeforeToolCall, CallOutcome, ErrorKind, Gateway, GatewayBuilder,
    HookDecision, RunContext,
};
use toolsearch::{
    BoxFuture, CallContext, CatalogMode, CatalogSnapshot, Descriptor, ExecutionMode, Executor,
    FnTool, Source, ToolError, ToolOutput,
};

use crate::support::rt;
use toolsearch::SessionLog;

fn tool(
    owner: &str,
    name: &str,
    body: impl Fn(Value) -> Result<Value, String> + Send + Sync + 'static,
) -> Descriptor {
    let body = Arc::new(body);
    Descriptor::new(Source::Plugin, owner, name).tool(Arc::new(FnTool(
        move |_ctx: CallContext, args: Value| {
            let body = body.clone();
            async move { body(args).map(ToolOutput::json).map_err(ToolError::new) }
        },
    )))
}

fn event_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "Event title"},
            "path": {"type": "string"},
            "name": {"type": "string"},
            "count": {"type": "integer", "minimum": 1},
            "mode": {"type": "string", "enum": ["drip", "flood"]}
        },
        "required": ["title"],
        "additionalProperties": false
    })
}

/// A small catalog whose tools report what they received.
fn catalog(extra: Vec<Descriptor>) -> CatalogSnapshot {
    let mut tools = vec![
        tool("calendar", "create_event", |args| Ok(json!({"created": args["title"], "received": args.as_object().map(|m| m.len())})))
            .description("Create a calendar event")
            .input_schema(event_schema()),
        tool("outlook", "create_event", |_| Ok(json!({"created": "outlook"})))
            .description("Create an Outlook event")
            .input_schema(json!({"type":"object"})),
        tool("files", "read_file", |args| Ok(json!({"content": format!("contents of {}", args["path"].as_str().unwrap_or("?"))})))
            .description("Read a file")
            .input_schema(json!({"type":"object","properties":{"path":{"type":"string"}},"required":["path"],"additionalProperties":false})),
    ];
    let mut direct =
        Descriptor::new(Source::Core, "core", "ask_user").description("Ask the user a question");
    direct.catalog_mode = CatalogMode::DirectOnly;
    tools.push(direct);
    tools.extend(extra);
    CatalogSnapshot::build(tools)
}

fn gateway(snapshot: CatalogSnapshot) -> Gateway {
    Gateway::builder(snapshot).build().unwrap()
}

fn details(outcome: &CallOutcome) -> Value {
    match outcome {
        CallOutcome::Done(envelope) => envelope.result.details.clone().unwrap_or(Value::Null),
        other => panic!("expected success, got {other:?}"),
    }
}

fn error(outcome: &CallOutcome) -> (ErrorKind, String) {
    match outcome {
        CallOutcome::Failed(e) => (e.kind, e.message.clone()),
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn every_argument_shape_reaches_the_same_tool() {
    let rt = rt();
    let gw = gateway(catalog(vec![]));
    rt.block_on(async {
        let shapes = [
            json!({"id": "plugin:files:read_file", "args": {"path": "/a"}}),
            json!({"name": "read_file", "args": {"path": "/a"}}),
            json!({"toolId": "files.read_file", "args": {"path": "/a"}}),
            json!({"id": "files__read_file", "path": "/a"}),
            json!({"id": "read_file", "args.path": "/a"}),
            json!({"id": "read_file", "args": {}, "path": "/a"}),
            json!({"id": "read_file", "input": {"path": "/a"}}),
            json!({"id": "read_file", "args": "{\"path\": \"/a\"}"}),
        ];
        for shape in shapes {
            let outcome = gw.call(&shape).await;
            assert_eq!(
                details(&outcome),
                json!({"content": "contents of /a"}),
                "{shape}"
            );
            assert_eq!(
                outcome.envelope().unwrap().tool.id,
                "plugin:files:read_file"
            );
        }
    });
}

#[test]
fn selectors_naming_two_tools_are_rejected_and_others_stay_arguments() {
    let rt = rt();
    let gw = gateway(catalog(vec![]));
    rt.block_on(async {
        let (kind, message) = error(&gw.call(&json!({"id": "read_file", "name": "calendar.create_event", "args": {"path": "/a"}})).await);
        assert_eq!(kind, ErrorKind::Ambiguous);
        assert!(message.contains("two different tools"), "{message}");

        // An ambiguous name alone is rejected with its candidates.
        let (kind, message) = error(&gw.call(&json!({"name": "create_event", "args": {"title": "x"}})).await);
        assert_eq!(kind, ErrorKind::Ambiguous);
        assert!(message.contains("plugin:calendar:create_event") && message.contains("plugin:outlook:create_event"));

        // `name` that resolves to no tool is the tool's own `name` argument.
        let outcome = gw.call(&json!({"id": "calendar.create_event", "name": "Team sync", "title": "Sync"})).await;
        assert_eq!(details(&outcome), json!({"created": "Sync", "received": 2}));
    });
}

#[test]
fn direct_only_tools_get_call_it_directly_guidance() {
    let rt = rt();
    let gw = gateway(catalog(vec![]));
    let outcome = rt.block_on(gw.call(&json!({"id": "ask_user", "args": {}})));
    let (kind, message) = error(&outcome);
    assert_eq!(kind, ErrorKind::DirectOnly);
    assert!(message.contains("is a direct tool"), "{message}");
    // The gateway says what to do structurally; the surface words it for the model's controls.
    let failed = outcome.error().unwrap();
    assert_eq!(
        failed.recovery,
        toolsearch::Recovery::CallDirectly {
            id: failed.tool_id.clone().unwrap(),
            name: "ask_user".into()
        }
    );
}

#[test]
fn invalid_arguments_name_the_path_suggest_and_show_the_signature() {
    let rt = rt();
    let gw = gateway(catalog(vec![]));
    rt.block_on(async {
        let cases = [
            (json!({}), "- /: missing required property \"title\""),
            (json!({"title": 3}), "- /title: expected string, got integer"),
            (json!({"title": "x", "titel": "y"}), "unexpected property \"titel\" (did you mean \"title\"?)"),
            (json!({"titel": "y"}), "missing required property \"title\" (you sent \"titel\": a misspelling?)"),
            (json!({"title": "x", "mode": "fast"}), "- /mode: \"fast\" is not one of the allowed values: \"drip\", \"flood\""),
            (json!({"title": "x", "count": 0}), "- /count:"),
        ];
        for (args, expected) in cases {
            let (kind, message) = error(&gw.call_tool("plugin:calendar:create_event", args.clone()).await);
            assert_eq!(kind, ErrorKind::InvalidArguments, "{args}");
            assert!(message.contains(expected), "{args}: {message}");
            assert!(message.starts_with("Invalid arguments for plugin:calendar:create_event:"), "{message}");
            assert!(
                message.contains("Expected input: { title: string; count?: number /* integer, >= 1 */; mode?: \"drip\" | \"flood\"; name?: string; path?: string }"),
                "{message}"
            );
        }
    });
}

#[test]
fn a_broken_output_schema_fails_before_the_tool_runs() {
    let rt = rt();
    let ran = Arc::new(AtomicUsize::new(0));
    let seen = ran.clone();
    let broken = tool("p", "broken_contract", move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"ok": true}))
    })
    .input_schema(json!({"type": "object"}))
    .output_schema(
        json!({"type": "object", "properties": {"ok": {"type": "boolean", "minimum": "zero"}}}),
    );
    let gw = gateway(catalog(vec![broken]));
    let (kind, message) = error(&rt.block_on(gw.call_tool("broken_contract", json!({}))));
    assert_eq!(kind, ErrorKind::BrokenSchema);
    assert!(message.contains("output schema is invalid"), "{message}");
    assert_eq!(
        ran.load(Ordering::SeqCst),
        0,
        "the side effect must not happen"
    );
}

#[test]
fn an_output_that_breaks_its_schema_is_discarded() {
    let rt = rt();
    let liar = tool("p", "liar", |_| Ok(json!({"count": "three"})))
        .input_schema(json!({"type": "object"}))
        .output_schema(json!({"type":"object","properties":{"count":{"type":"integer"}},"required":["count"],"additionalProperties":false}));
    let gw = gateway(catalog(vec![liar]));
    let (kind, message) = error(&rt.block_on(gw.call_tool("liar", json!({}))));
    assert_eq!(kind, ErrorKind::InvalidOutput);
    assert!(
        message.contains("/count: expected integer, got string"),
        "{message}"
    );
}

#[test]
fn trusted_schemas_that_do_not_compile_fail_closed_but_stay_searchable() {
    let rt = rt();
    let bad = tool("p", "bad_schema", |_| Ok(json!({})))
        .description("A tool with an invalid schema")
        .input_schema(json!({"type": "object", "properties": {"a": {"type": "strin"}}}));
    let draft4 = tool("p", "draft4_bounds", |args| Ok(json!({"got": args["n"]})))
        .description("Draft-04 exclusive bounds")
        .input_schema(json!({"type": "object", "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": true}}}));
    let gw = gateway(catalog(vec![bad, draft4]));
    rt.block_on(async {
        let (kind, message) = error(&gw.call_tool("bad_schema", json!({"a": "x"})).await);
        assert_eq!(kind, ErrorKind::BrokenSchema);
        assert!(message.contains("input schema is invalid"), "{message}");
        assert!(gw.describe(&json!({"id": "bad_schema"})).is_ok());
        let found = gw
            .search(&json!({"query": "invalid schema"}))
            .unwrap()
            .to_json();
        assert_eq!(found[0]["id"], "plugin:p:bad_schema");

        // Clear draft-04 intent is normalized: 0 is excluded, 0.5 is fine.
        assert_eq!(
            details(&gw.call_tool("draft4_bounds", json!({"n": 0.5})).await),
            json!({"got": 0.5})
        );
        let (kind, _) = error(&gw.call_tool("draft4_bounds", json!({"n": 0})).await);
        assert_eq!(kind, ErrorKind::InvalidArguments);
    });
}

struct Rewrite;
impl BeforeToolCall for Rewrite {
    fn before_call<'a>(
        &'a self,
        tool: &'a Descriptor,
        args: &'a Value,
    ) -> BoxFuture<'a, HookDecision> {
        Box::pin(async move {
            if tool.name == "read_file" && args["path"] == "/secret" {
                HookDecision::Block("reading /secret is not allowed".into())
            } else if tool.name == "read_file" {
                HookDecision::Rewrite(
                    json!({"path": format!("/sandbox{}", args["path"].as_str().unwrap_or(""))}),
                )
            } else {
                HookDecision::Continue
            }
        })
    }
}

#[test]
fn hooks_rewrite_before_validation_and_blocks_are_reported() {
    let rt = rt();
    let gw = GatewayBuilder::new(catalog(vec![]))
        .hook(Arc::new(Rewrite))
        .build()
        .unwrap();
    rt.block_on(async {
        let outcome = gw.call_tool("read_file", json!({"path": "/a"})).await;
        assert_eq!(
            details(&outcome),
            json!({"content": "contents of /sandbox/a"})
        );
        let (kind, message) = error(&gw.call_tool("read_file", json!({"path": "/secret"})).await);
        assert_eq!(kind, ErrorKind::BlockedByHook);
        assert!(message.contains("reading /secret is not allowed"));
    });
}

struct DenyAll;
impl ApprovalHandler for DenyAll {
    fn approve<'a>(&'a self, _tool: &'a Descriptor, _args: &'a Value) -> BoxFuture<'a, Approval> {
        Box::pin(async { Approval::Denied("the user said no".into()) })
    }
}

#[test]
fn approval_denials_are_blocks_and_never_run_the_tool() {
    let rt = rt();
    let ran = Arc::new(AtomicUsize::new(0));
    let seen = ran.clone();
    let mut send = tool("mail", "send_email", move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
        Ok(json!({"sent": true}))
    });
    send.requires_approval = true;
    let snapshot = catalog(vec![send]);
    rt.block_on(async {
        // No handler: denied (fail closed).
        let (kind, _) = error(
            &gateway(snapshot.clone())
                .call_tool("send_email", json!({}))
                .await,
        );
        assert_eq!(kind, ErrorKind::ApprovalDenied);
        let gw = GatewayBuilder::new(snapshot.clone())
            .approvals(Arc::new(DenyAll))
            .build()
            .unwrap();
        let (kind, message) = error(&gw.call_tool("send_email", json!({})).await);
        assert_eq!(kind, ErrorKind::ApprovalDenied);
        assert!(message.contains("the user said no"));
        let approve =
            toolsearch::GlobApprovals::new(&["mail:*".to_string(), "*send_*".to_string()]).unwrap();
        let gw = GatewayBuilder::new(snapshot)
            .approvals(Arc::new(approve))
            .build()
            .unwrap();
        assert_eq!(
            details(&gw.call_tool("send_email", json!({})).await),
            json!({"sent": true})
        );
    });
    assert_eq!(ran.load(Ordering::SeqCst), 1);
}

#[test]
fn a_tool_that_sleeps_past_its_timeout_is_cancelled() {
    let rt = rt();
    let finished = Arc::new(AtomicBool::new(false));
    let flag = finished.clone();
    let mut slow =
        Descriptor::new(Source::Plugin, "p", "slow").tool(Arc::new(FnTool(move |_ctx, _args| {
            let flag = flag.clone();
            async move {
                tokio::time::sleep(Duration::from_secs(30)).await;
                flag.store(true, Ordering::SeqCst);
                Ok(ToolOutput::text("done"))
            }
        })));
    slow.timeout = Some(Duration::from_millis(50));
    let gw = gateway(catalog(vec![slow]));
    let (kind, message) = error(&rt.block_on(gw.call_tool("slow", json!({}))));
    assert_eq!(kind, ErrorKind::Timeout);
    assert_eq!(
        message,
        "plugin:p:slow timed out after 50 ms and was cancelled"
    );
    assert!(!finished.load(Ordering::SeqCst));
}

#[test]
fn a_denied_tool_answers_exactly_like_an_unknown_one() {
    let rt = rt();
    let secret = tool("vault", "read_secret", |_| Ok(json!({"secret": 42})));
    let with_secret = catalog(vec![secret]);
    let policy = Policy::from_json(&json!({"session": {"deny": ["plugin:vault:*"]}})).unwrap();
    let denied = GatewayBuilder::new(with_secret)
        .policy(policy)
        .build()
        .unwrap();
    let never_had_it = gateway(catalog(vec![]));
    rt.block_on(async {
        for request in [
            json!({"id": "plugin:vault:read_secret", "args": {}}),
            json!({"name": "read_secret"}),
            json!({"id": "vault.read_secret"}),
        ] {
            let a = denied.call(&request).await;
            let b = never_had_it.call(&request).await;
            assert_eq!(error(&a), error(&b), "{request}");
            assert_eq!(error(&a).0, ErrorKind::UnknownTool);
        }
        assert_eq!(
            denied
                .describe(&json!({"id": "read_secret"}))
                .unwrap_err()
                .message,
            never_had_it
                .describe(&json!({"id": "read_secret"}))
                .unwrap_err()
                .message
        );
        assert_eq!(
            denied
                .search(&json!({"query": "read secret vault"}))
                .unwrap(),
            never_had_it
                .search(&json!({"query": "read secret vault"}))
                .unwrap()
        );
    });
}

#[test]
fn a_tool_removed_between_search_and_call_fails() {
    let rt = rt();
    let gw = gateway(catalog(vec![tool("p", "ephemeral", |_| Ok(json!(1)))]));
    let found = gw.search(&json!({"query": "ephemeral"})).unwrap().to_json();
    let id = found[0]["id"].as_str().unwrap().to_string();
    gw.replace_snapshot(catalog(vec![])).unwrap();
    let (kind, message) = error(&rt.block_on(gw.call_tool(&id, json!({}))));
    assert_eq!(kind, ErrorKind::UnknownTool);
    assert!(
        message.starts_with("Unknown tool \"plugin:p:ephemeral\"."),
        "{message}"
    );
}

#[test]
fn client_tools_are_handed_back_and_completed_by_the_caller() {
    let rt = rt();
    let mut open = Descriptor::new(Source::Client, "app", "open_in_browser")
        .input_schema(json!({"type":"object","properties":{"url":{"type":"string"}}}));
    open.executor = Executor::Client;
    let log = SessionLog::in_memory();
    let gw = GatewayBuilder::new(catalog(vec![open]))
        .session_log(log.clone())
        .build()
        .unwrap();
    let outcome =
        rt.block_on(gw.call_tool("open_in_browser", json!({"url": "https://example.com"})));
    let CallOutcome::ClientCallRequired(call) = outcome else {
        panic!("{outcome:?}")
    };
    assert_eq!(call.tool.id, "client:client:open_in_browser");
    assert_eq!(call.args, json!({"url": "https://example.com"}));
    let done = gw.complete_client_call(&call.call_id, Ok(json!({"opened": true})));
    assert_eq!(details(&done), json!({"opened": true}));
    assert!(
        gw.complete_client_call(&call.call_id, Ok(json!(1)))
            .error()
            .is_some(),
        "completes once"
    );
    let last = log
        .lines()
        .into_iter()
        .rev()
        .find(|r| r["type"] == "call")
        .unwrap();
    assert_eq!(last["source"], "client");
    assert_eq!(last["status"], "ok");
}

#[test]
fn a_failed_mcp_server_tells_the_model_not_to_retry() {
    let rt = rt();
    let mut remote = tool("weather-mcp", "forecast", |_| Ok(json!({})));
    remote.source = Source::Mcp;
    remote.id = "mcp:weather-mcp:forecast".into();
    let gw = gateway(catalog(vec![remote]));
    gw.mark_server_failed("weather-mcp", "the process exited with status 1");
    let (kind, message) = error(&rt.block_on(gw.call_tool("forecast", json!({}))));
    assert_eq!(kind, ErrorKind::ServerUnavailable);
    assert!(
        message.contains("\"weather-mcp\" is unavailable (the process exited with status 1)"),
        "{message}"
    );
    assert!(message.contains("Do not retry"));
}

/// Records how many calls run at once and whether anything started during a sequential call.
#[derive(Default)]
struct Observed {
    active: AtomicUsize,
    max_active: AtomicUsize,
    sequential_running: AtomicBool,
    overlapped_sequential: AtomicUsize,
}

fn observed_tool(
    name: &str,
    mode: ExecutionMode,
    seen: Arc<Observed>,
    gate: Option<Arc<tokio::sync::Barrier>>,
    release: Option<Arc<tokio::sync::Notify>>,
    started: Option<Arc<tokio::sync::Notify>>,
) -> Descriptor {
    let mut d = Descriptor::new(Source::Plugin, "sched", name).tool(Arc::new(FnTool(
        move |_ctx, _args| {
            let seen = seen.clone();
            let gate = gate.clone();
            let release = release.clone();
            let started = started.clone();
            async move {
                if seen.sequential_running.load(Ordering::SeqCst) {
                    seen.overlapped_sequential.fetch_add(1, Ordering::SeqCst);
                }
                let now = seen.active.fetch_add(1, Ordering::SeqCst) + 1;
                seen.max_active.fetch_max(now, Ordering::SeqCst);
                if mode == ExecutionMode::Sequential {
                    seen.sequential_running.store(true, Ordering::SeqCst);
                }
                if let Some(started) = started {
                    started.notify_one();
                }
                if let Some(release) = release {
                    release.notified().await;
                }
                if let Some(gate) = gate {
                    gate.wait().await;
                }
                if mode == ExecutionMode::Sequential {
                    seen.sequential_running.store(false, Ordering::SeqCst);
                }
                seen.active.fetch_sub(1, Ordering::SeqCst);
                Ok(ToolOutput::json(json!({"done": true})))
            }
        },
    )));
    d.execution_mode = mode;
    d.timeout = Some(Duration::from_secs(20));
    d
}

#[test]
fn parallel_tools_overlap_and_sequential_tools_run_alone() {
    let rt = rt();
    let seen = Arc::new(Observed::default());
    // Four parallel calls meet at a barrier of four: they can only finish if they overlap.
    let barrier = Arc::new(tokio::sync::Barrier::new(4));
    let release = Arc::new(tokio::sync::Notify::new());
    let started = Arc::new(tokio::sync::Notify::new());
    let snapshot = catalog(vec![
        observed_tool(
            "par",
            ExecutionMode::Parallel,
            seen.clone(),
            Some(barrier),
            None,
            None,
        ),
        observed_tool(
            "seq",
            ExecutionMode::Sequential,
            seen.clone(),
            None,
            Some(release.clone()),
            Some(started.clone()),
        ),
        observed_tool(
            "par_plain",
            ExecutionMode::Parallel,
            seen.clone(),
            None,
            None,
            None,
        ),
    ]);
    let gw = gateway(snapshot);
    rt.block_on(async {
        let calls: Vec<_> = (0..4)
            .map(|_| {
                let gw = gw.clone();
                tokio::spawn(async move { gw.call_tool("par", json!({})).await })
            })
            .collect();
        for call in calls {
            assert!(call.await.unwrap().envelope().is_some());
        }
        assert_eq!(
            seen.max_active.load(Ordering::SeqCst),
            4,
            "parallel calls overlapped"
        );

        // A sequential call holds the run; parallel calls wait until it ends.
        seen.max_active.store(0, Ordering::SeqCst);
        let sequential = {
            let gw = gw.clone();
            tokio::spawn(async move { gw.call_tool("seq", json!({})).await })
        };
        started.notified().await;
        let followers: Vec<_> = (0..3)
            .map(|_| {
                let gw = gw.clone();
                tokio::spawn(async move { gw.call_tool("par_plain", json!({})).await })
            })
            .collect();
        for _ in 0..50 {
            tokio::task::yield_now().await;
        }
        assert_eq!(
            seen.active.load(Ordering::SeqCst),
            1,
            "only the sequential call is running"
        );
        release.notify_one();
        assert!(sequential.await.unwrap().envelope().is_some());
        for f in followers {
            assert!(f.await.unwrap().envelope().is_some());
        }
        assert_eq!(seen.overlapped_sequential.load(Ordering::SeqCst), 0);
    });
}

#[test]
fn a_nested_call_that_would_wait_on_itself_fails_instead_of_hanging() {
    let rt = rt();
    let nested = |name: &str, mode: ExecutionMode, target: &'static str| {
        let mut d = Descriptor::new(Source::Plugin, "nest", name).tool(Arc::new(FnTool(
            move |ctx: CallContext, _args| async move {
                let nested = ctx
                    .nested
                    .clone()
                    .ok_or_else(|| ToolError::new("no nested calls"))?;
                let inner = nested.call(target, json!({})).await?;
                Ok(ToolOutput::json(
                    json!({"inner": inner["result"]["details"]}),
                ))
            },
        )));
        d.execution_mode = mode;
        d.timeout = Some(Duration::from_secs(5));
        d
    };
    let leaf = |name: &str, mode: ExecutionMode| {
        let mut d = tool("nest", name, |_| Ok(json!("leaf")));
        d.execution_mode = mode;
        d
    };
    let gw = gateway(catalog(vec![
        nested("seq_outer", ExecutionMode::Sequential, "par_leaf"),
        nested("par_outer_to_seq", ExecutionMode::Parallel, "seq_leaf"),
        nested("par_outer", ExecutionMode::Parallel, "par_leaf"),
        leaf("par_leaf", ExecutionMode::Parallel),
        leaf("seq_leaf", ExecutionMode::Sequential),
    ]));
    rt.block_on(async {
        for outer in ["seq_outer", "par_outer_to_seq"] {
            let (kind, message) = error(
                &tokio::time::timeout(Duration::from_secs(10), gw.call_tool(outer, json!({})))
                    .await
                    .expect("no deadlock"),
            );
            assert_eq!(kind, ErrorKind::ToolFailed, "{outer}");
            assert!(message.contains("reentrant call"), "{message}");
        }
        assert_eq!(
            details(&gw.call_tool("par_outer", json!({})).await),
            json!({"inner": "leaf"})
        );
    });
}

#[test]
fn the_session_log_answers_the_four_questions() {
    let rt = rt();
    let log = SessionLog::in_memory();
    let mut remote = tool("weather-mcp", "forecast", |_| Ok(json!({"temp": 21})))
        .description("Weather forecast for a city");
    remote.source = Source::Mcp;
    remote.id = "mcp:weather-mcp:forecast".into();
    let gw = GatewayBuilder::new(catalog(vec![remote]))
        .session_log(log.clone())
        .run(RunContext {
            run_id: "run-1".into(),
            session: Some("s-1".into()),
            schemas_visible_up_front: 3,
            ..RunContext::default()
        })
        .build()
        .unwrap();
    rt.block_on(async {
        gw.search(&json!({"queries": [{"query": "weather forecast"}, {"query": "calendar"}]}))
            .unwrap();
        gw.search(&json!({"query": "read a file"})).unwrap();
        gw.describe(&json!({"id": "forecast"})).unwrap();
        gw.call_tool("mcp:weather-mcp:forecast", json!({"city": "Oslo secret"}))
            .await;
    });
    gw.finish();
    let records = log.lines();
    let of = |kind: &str| {
        records
            .iter()
            .filter(|r| r["type"] == kind)
            .collect::<Vec<_>>()
    };
    // 1. How many schemas did the model see up front?
    assert_eq!(of("run_start")[0]["schemas_visible_up_front"], 3);
    // 2. How many searches and describes?
    assert_eq!(of("search").len(), 2);
    assert_eq!(of("search")[0]["queries"], 2);
    assert_eq!(of("describe").len(), 1);
    // 3. Which tool was finally called? 4. From which kind of source?
    let call = of("call").last().copied().unwrap().clone();
    assert_eq!(call["tool_id"], "mcp:weather-mcp:forecast");
    assert_eq!(call["source"], "mcp");
    assert_eq!(call["trusted"], false);
    assert_eq!(call["status"], "ok");
    // Redacted: no arguments or results anywhere.
    let text = serde_json::to_string(&records).unwrap();
    assert!(
        !text.contains("Oslo") && !text.contains("\"temp\""),
        "{text}"
    );
    let end = &of("run_end")[0]["telemetry"];
    assert_eq!(end["counters"]["searches"], 2);
    assert_eq!(end["final_calls"][0]["source"], "mcp");
}

/// Issue 3: every demo tool, called through the whole call path with arguments generated from
/// its schema, succeeds, and the gateway's own output validation accepts the result.
#[test]
fn every_demo_tool_succeeds_through_the_gateway() {
    use toolsearch::demo::{self, DemoWorld, example_args};
    let rt = rt();
    let cache = Arc::new(toolsearch::IndexCache::new());
    let approve_all = Arc::new(toolsearch::GlobApprovals::new(&["*".to_string()]).unwrap());
    let ids: Vec<(String, Source, bool)> = demo::catalog()
        .tools()
        .iter()
        .map(|t| (t.id.clone(), t.source, t.output_schema.is_some()))
        .collect();
    let mut failures = Vec::new();
    let mut validated_outputs = 0;
    for (id, source, has_output) in &ids {
        // A fresh world per tool; the index is shared (same fingerprint), executors are not.
        let gateway = GatewayBuilder::new(demo::catalog_with(Arc::new(DemoWorld::seeded())))
            .index_cache(cache.clone())
            .approvals(approve_all.clone())
            .build()
            .unwrap();
        let schema = gateway.view().get(id).unwrap().input_schema.clone();
        let outcome = rt.block_on(gateway.call_tool(id, example_args(&schema)));
        match (source, &outcome) {
            (Source::Client, CallOutcome::ClientCallRequired(_)) => {}
            (_, CallOutcome::Done(envelope)) => {
                assert_eq!(&envelope.tool.id, id);
                validated_outputs += usize::from(*has_output);
            }
            (_, other) => failures.push(format!("{id}: {other:?}")),
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        ids.len() >= 300 && validated_outputs >= 60,
        "{} tools, {validated_outputs} outputs",
        ids.len()
    );
}

/// A search request whose unknown field names are control characters (each escaped to six
/// characters in the message) gets an error of bounded length naming the field, at the top
/// level and inside `queries`, and the gateway keeps answering; so does a limit given as a long
/// string (both found by the search_request fuzz target: the echo was bounded before escaping,
/// and the limit's value was echoed whole).
#[test]
fn unknown_fields_and_long_limits_get_a_bounded_error() {
    let gw = gateway(catalog(Vec::new()));
    let name = format!("{}limit", "\u{7f}".repeat(300));
    for request in [
        json!({"query": "x", name.clone(): 5}),
        json!({"queries": [{"query": "x", name.clone(): 5}]}),
    ] {
        let error = gw.search(&request).unwrap_err().to_string();
        assert!(
            error.chars().count() <= 512,
            "{} chars: {error}",
            error.chars().count()
        );
        assert!(error.contains("unknown field \"\\u{7f}"), "{error}");
        assert!(
            error.contains(&format!("({} bytes)", name.len())),
            "{error}"
        );
    }
    // A limit that is a long string (the second crash the fuzzer found): cut, not echoed whole.
    let long = "5".repeat(2_000);
    for request in [
        json!({"query": "x", "limit": long}),
        json!({"queries": [{"query": "x", "limit": long}]}),
    ] {
        let error = gw.search(&request).unwrap_err().to_string();
        assert!(
            error.chars().count() <= 512,
            "{} chars: {error}",
            error.chars().count()
        );
        assert!(
            error.contains("limit must be a positive integer"),
            "{error}"
        );
    }
    let found = gw
        .search(&json!({"query": "calendar event"}))
        .unwrap()
        .to_json();
    assert!(found[0]["id"].is_string(), "{found}");
}
