use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::{
    BeforeToolCall, BoxFuture, Config, Descriptor, HookDecision, Mode, Policy, Reply, Session,
    SessionBuilder, SessionLog,
};

use crate::support::{BIN, rt};

/// A code-mode session over the demo catalog with the real sandbox.
fn code_session() -> SessionBuilder {
    Session::builder(Config::default())
        .mode(Mode::Code)
        .catalog(toolsearch::demo::catalog())
        .worker_binary(BIN)
        .warm_pool(1)
}

/// Runs `code` as the model would: a `tool_search_code` call; returns the cell's JSON.
async fn cell(builder: SessionBuilder, code: &str) -> Value {
    cell_declaring(builder, code).await.0
}

/// [`cell`], plus how many tools the session declared.
async fn cell_declaring(builder: SessionBuilder, code: &str) -> (Value, usize) {
    let session = builder.build().await.unwrap();
    assert_eq!(session.mode(), Mode::Code);
    let reply = session
        .handle("tool_search_code", &json!({ "code": code }))
        .await;
    session.finish().await;
    (reply.body(), session.tool_definitions().len())
}

/// A search hit is callable where it stands (`hit.call(args)`, `hit.describe()`), through the
/// same gateway path; the methods are not enumerable, so hits serialise as before.
#[test]
fn search_hits_are_callable_in_a_cell() {
    let log = SessionLog::in_memory();
    let result = rt().block_on(cell(
        code_session().session_log(log.clone()),
        r#"const hits = await openclaw.tools.search("convert units", {limit: 3});
const [t] = hits;
const schema = await t.describe();
const out = await t.call({value: 10, from_unit: "km", to_unit: "mi"});
return {tool: out.tool.id, described: schema.id, keys: Object.keys(t), json: JSON.stringify(hits).includes("call")};"#,
    ));
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["value"]["tool"], "plugin:units:convert_units");
    assert_eq!(result["value"]["described"], "plugin:units:convert_units");
    assert!(
        !result["value"]["keys"]
            .as_array()
            .unwrap()
            .iter()
            .any(|k| k == "call" || k == "describe"),
        "{result}"
    );
    assert_eq!(result["value"]["json"], false, "{result}");
    let kinds: Vec<String> = log
        .lines()
        .iter()
        .map(|r| r["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        ["run_start", "search", "describe", "call", "cell", "run_end"]
    );
}

/// A cell whose value is a search answer gets the next step: the call of the best hit by its
/// exact id, with a `?` per required argument to fill from the request — for a single search
/// and for a batch; a cell whose value is anything else gets none.
#[test]
fn a_search_answer_names_the_next_step() {
    let rt = rt();
    let single = rt.block_on(cell(
        code_session(),
        r#"return await openclaw.tools.search("convert units")"#,
    ));
    let next = single["next"].as_str().unwrap();
    assert_eq!(
        next,
        "Now call tool_search_code with {\"code\": \"return await openclaw.tools.call(\\\"plugin:units:convert_units\\\", {value: ?, from_unit: ?, to_unit: ?});\"} with the values from the request in place of each ?."
    );
    // The search's note on what it showed keeps its count, not its "refine the query".
    assert_eq!(
        single["logs"][0]["text"],
        "[openclaw.tools.search] 8 of 19 matching tools shown."
    );
    let batch = rt.block_on(cell(
        code_session(),
        r#"return await openclaw.tools.search({queries: [{query: "convert units"}, {query: "send email"}]})"#,
    ));
    assert!(
        batch["next"]
            .as_str()
            .unwrap()
            .contains("plugin:units:convert_units"),
        "{batch}"
    );
    // A cell that failed after its search found something: the error, and the same next step
    // (here the model got the argument names wrong, as Qwen2.5-Coder-1.5B does).
    for failing in [
        r#"const [t] = await openclaw.tools.search("convert units"); return await t.call({amount: 42});"#,
        r#"const hits = await openclaw.tools.search("convert units"); return await hits[0].describe(hits.matched[0].id);"#,
    ] {
        let failed = rt.block_on(cell(code_session(), failing));
        assert_eq!(failed["ok"], false, "{failed}");
        assert!(failed["error"]["message"].is_string(), "{failed}");
        assert!(
            failed["next"].as_str().is_some_and(|n| n
                .contains("openclaw.tools.call(\\\"plugin:units:convert_units\\\", {value: ?, from_unit: ?, to_unit: ?})")),
            "{failed}"
        );
    }
    let no_search = rt.block_on(cell(code_session(), "throw new Error('x')"));
    assert_eq!(no_search["ok"], false);
    assert!(no_search.get("next").is_none(), "{no_search}");
    for code in [
        "return 42",
        r#"return (await openclaw.tools.search("convert units")).map(h => h.id)"#,
        r#"return await openclaw.tools.describe("plugin:units:convert_units")"#,
    ] {
        let result = rt.block_on(cell(code_session(), code));
        assert_eq!(result["ok"], true, "{result}");
        assert!(result.get("next").is_none(), "{code}: {result}");
    }
}

#[test]
fn the_walkthrough_cell_takes_the_gateway_path_and_is_logged() {
    let log = SessionLog::in_memory();
    let (result, declared) = rt().block_on(cell_declaring(
        code_session().session_log(log.clone()),
        include_str!("../../js/examples/walkthrough.js"),
    ));
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["value"]["tool"], "plugin:units:convert_units");
    assert!((result["value"]["miles"].as_f64().unwrap() - 6.2137).abs() < 1e-3);
    // The search's list was cut by its limit: its note is logged, then the cell's own line.
    let note = result["logs"][0]["text"].as_str().unwrap();
    assert!(
        note.starts_with("[openclaw.tools.search] ") && note.contains("matching tools shown"),
        "{note}"
    );
    assert_eq!(
        result["logs"][1]["text"],
        "using plugin:units:convert_units: { from_unit: string; to_unit: string; value: number }"
    );
    // The model reads the value, logs and error; telemetry is for people (the session log).
    assert!(result.get("telemetry").is_none(), "{result}");
    assert!(
        result.get("next").is_none(),
        "a cell that called its tool has no next step"
    );
    let kinds: Vec<String> = log
        .lines()
        .iter()
        .map(|r| r["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        kinds,
        ["run_start", "search", "describe", "call", "cell", "run_end"]
    );
    let records = log.lines();
    // tool_search_code, the direct-only tools and the core primitives.
    assert!(declared > 1);
    assert_eq!(records[0]["schemas_visible_up_front"], declared);
    let cell_record = &records[4];
    assert_eq!(cell_record["outcome"], "ok");
    assert_eq!(cell_record["bridge_calls"], 3);
}

#[test]
fn a_denied_tool_is_unknown_inside_a_cell_too() {
    let policy = Policy::from_json(&json!({"session": {"deny": ["plugin:finance:*"]}})).unwrap();
    let code = r#"
        const hits = await openclaw.tools.search("stock quote", { limit: 20 });
        try { await openclaw.tools.call("plugin:finance:get_stock_quote", { symbol: "AAPL" }); return "called"; }
        catch (e) { return { message: e.message, ids: hits.map((h) => h.id) }; }
    "#;
    let rt = rt();
    let result = rt.block_on(cell(code_session().policy(policy), code));
    let value = &result["value"];
    assert!(
        !value["ids"]
            .as_array()
            .unwrap()
            .iter()
            .any(|id| id.as_str().unwrap().starts_with("plugin:finance:")),
        "{value}"
    );
    // Exactly what the gateway answers for a tool that does not exist at all.
    let never = rt.block_on(cell(
        code_session(),
        r#"try { await openclaw.tools.call("plugin:finance:get_stock_quotez", {}); } catch (e) { return e.message; }"#,
    ));
    let message = value["message"].as_str().unwrap();
    assert!(
        message.starts_with("Unknown tool \"plugin:finance:get_stock_quote\"."),
        "{value}"
    );
    assert!(
        never["value"]
            .as_str()
            .unwrap()
            .starts_with("Unknown tool \"plugin:finance:get_stock_quotez\"."),
        "{never}"
    );
    let suggestions = message.split("Did you mean").nth(1).unwrap_or("");
    assert!(
        !suggestions.contains("plugin:finance:"),
        "no denied id is suggested: {value}"
    );
}

#[test]
fn client_tools_approvals_and_validation_errors_reach_the_guest_in_its_own_words() {
    let code = r#"
        const out = [];
        for (const [id, args] of [
            ["client:client:open_in_browser", { url: "https://example.com" }],
            ["plugin:mail:send_email", { to: ["a@example.com"], subject: "s", body: "b" }],
            ["plugin:units:convert_units", { value: "ten" }],
            ["plugin:units:convert_unitz", {}],
        ]) {
            try { await openclaw.tools.call(id, args); out.push("ran"); } catch (e) { out.push(e.message); }
        }
        return out;
    "#;
    let result = rt().block_on(cell(code_session(), code));
    let messages: Vec<&str> = result["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert_eq!(
        messages[0],
        "client:client:open_in_browser is a client tool: the application runs it, not the gateway. It cannot be called from a code cell: call it directly as the tool \"open_in_browser\" with its own arguments, outside the cell."
    );
    assert!(
        messages[1].contains("requires approval and was not approved"),
        "{}",
        messages[1]
    );
    assert!(
        messages[2].starts_with("Invalid arguments for plugin:units:convert_units:"),
        "{}",
        messages[2]
    );
    assert!(
        messages[2].ends_with(
            "Expected input: { from_unit: string; to_unit: string; value: number }\nFix the arguments and call again. openclaw.tools.describe(\"plugin:units:convert_units\") returns the full input schema."
        ),
        "{}",
        messages[2]
    );
    assert!(
        messages[3].starts_with("Unknown tool \"plugin:units:convert_unitz\". Did you mean \"plugin:units:convert_units\"")
            && messages[3].ends_with("Find the tool with openclaw.tools.search(query), read its schema with openclaw.tools.describe(id), then call openclaw.tools.call(id, args) with its exact id."),
        "{}",
        messages[3]
    );
    for message in &messages {
        assert!(
            !message.contains("tool_search ")
                && !message.contains("tool_describe")
                && !message.contains("tool_call"),
            "a cell only has openclaw.tools: {message}"
        );
    }
}

struct Kilometres;
impl BeforeToolCall for Kilometres {
    fn before_call<'a>(
        &'a self,
        tool: &'a Descriptor,
        args: &'a Value,
    ) -> BoxFuture<'a, HookDecision> {
        Box::pin(async move {
            if tool.name == "convert_units" {
                let mut args = args.clone();
                args["value"] = json!(100);
                HookDecision::Rewrite(args)
            } else {
                HookDecision::Continue
            }
        })
    }
}

#[test]
fn hooks_apply_to_bridge_calls() {
    let code = r#"
        const r = await openclaw.tools.call("plugin:units:convert_units", { value: 1, from_unit: "km", to_unit: "m" });
        return r.result.details.result;
    "#;
    let result = rt().block_on(cell(code_session().hook(Arc::new(Kilometres)), code));
    assert_eq!(result["value"].as_f64(), Some(100_000.0), "{result}");
}

#[test]
fn code_mode_falls_back_when_the_worker_cannot_start() {
    let rt = rt();
    let session = rt
        .block_on(
            Session::builder(Config::default())
                .catalog(toolsearch::demo::catalog())
                .worker_binary("/bin/false")
                .build(),
        )
        .unwrap();
    assert_eq!(session.mode(), Mode::Tools);
    assert!(!session.has_sandbox());
    let fallback = session.surface().fallback.clone().unwrap();
    assert!(
        fallback.starts_with("code mode is unavailable here ("),
        "{fallback}"
    );
    assert!(
        session
            .tool_definitions()
            .iter()
            .any(|t| t.name == "tool_call")
    );
    // A cell asked of this run says why it cannot run, instead of hanging or panicking.
    let result = rt.block_on(session.run_cell("return 1", None));
    assert_eq!(result.outcome.kind(), "worker_setup_failure");
    assert!(result.outcome.message().contains(&fallback), "{result:?}");

    // The real binary works.
    let session = rt.block_on(code_session().build()).unwrap();
    assert_eq!(session.mode(), Mode::Code);
    assert!(session.has_sandbox());
    rt.block_on(session.finish());
}

#[test]
fn a_tool_search_code_call_without_code_is_a_bad_request_not_an_empty_cell() {
    let rt = rt();
    let session = rt.block_on(code_session().build()).unwrap();
    for arguments in [json!({}), json!({"code": 3}), json!({"source": "return 1"})] {
        let reply = rt.block_on(session.handle("tool_search_code", &arguments));
        let Reply::Failed {
            kind, error, body, ..
        } = &reply
        else {
            panic!("{arguments}: {reply:?}")
        };
        assert_eq!(*kind, toolsearch::FailureKind::BadArguments);
        assert_eq!(*error, Some(toolsearch::ErrorKind::BadRequest));
        assert!(
            body["error"]["message"]
                .as_str()
                .unwrap()
                .starts_with("tool_search_code takes {\"code\": "),
            "{body}"
        );
    }
    let telemetry = rt.block_on(session.finish());
    assert_eq!(telemetry["counters"]["cells"], 0, "no cell ran");
}

#[test]
fn a_cell_body_over_its_limit_is_its_own_limit_and_never_runs() {
    let rt = rt();
    let session = rt.block_on(code_session().build()).unwrap();
    // 300 KiB of comment: over the 256 KiB default `code_bytes`.
    let code = format!("/*{}*/ return 1", "x".repeat(300 * 1024));
    let result = rt.block_on(session.run_cell(&code, None));
    assert_eq!(
        result.outcome,
        toolsearch::Outcome::LimitExceeded {
            limit: toolsearch::LimitKind::CodeBytes
        }
    );
    assert!(result.outcome.message().contains("code is too long"));
    assert_eq!(result.telemetry.worker_pid, 0, "no worker was used");
    rt.block_on(session.finish());
}

#[test]
fn deeply_nested_call_and_search_arguments_are_refused_by_name_and_the_cell_goes_on() {
    let rt = rt();
    let session = rt.block_on(code_session().build()).unwrap();
    let code = "let o = {}; for (let i = 1; i < 100; i++) o = {a: o};
        const out = [];
        try { await openclaw.tools.call('plugin:units:convert_units', {value: 1, from_unit: 'km', to_unit: 'mi', extra: o}); out.push('called'); }
        catch (e) { out.push(e.message); }
        try { await openclaw.tools.search({query: 'convert units', deep: o}); out.push('searched'); }
        catch (e) { out.push(e.message); }
        const hits = await openclaw.tools.search('convert units');
        out.push(hits.length > 0);
        return out;";
    let result = rt.block_on(session.run_cell(code, None));
    assert_eq!(result.outcome, toolsearch::Outcome::Ok, "{result:#?}");
    let value = result.value.unwrap();
    for refused in &value.as_array().unwrap()[..2] {
        let text = refused.as_str().unwrap();
        assert!(
            text.contains("nested deeper than 64 levels")
                && text.contains("MAX_BRIDGE_ARGUMENT_DEPTH"),
            "{value}"
        );
    }
    assert_eq!(value[2], true);
    // The next cell runs on a fresh worker as usual.
    let next = rt.block_on(session.run_cell("return 1 + 1", None));
    assert_eq!(next.value, Some(json!(2)));
    rt.block_on(session.finish());
}

/// In code mode a catalog tool called by its name runs as the cell that calls it (the same
/// gateway path, counted as recovered); a name that is no tool runs as a search for its words,
/// calls nothing, and says so, with the next step.
#[test]
fn catalog_names_run_as_cells_and_unknown_names_search() {
    let rt = rt();
    rt.block_on(async {
        let session = code_session().build().await.unwrap();
        let reply = session
            .handle(
                "convert_units",
                &json!({"value": 10, "from_unit": "km", "to_unit": "mi"}),
            )
            .await;
        let recovered = reply.recovered().expect("recovered").clone();
        assert_eq!(
            (recovered.form, recovered.ran_as.as_str()),
            ("catalog_name", "tool_search_code")
        );
        assert!(
            recovered.hint.contains(
                r#"return await openclaw.tools.call(\"plugin:units:convert_units\", {\"from_unit\":\"km\""#
            ),
            "{}",
            recovered.hint
        );
        assert!(!reply.is_error(), "{reply:?}");
        let body = reply.body();
        assert_eq!(body["value"]["tool"]["id"], "plugin:units:convert_units", "{body}");
        assert!(
            body["value"]["result"]["details"].to_string().contains("6.21"),
            "{body}"
        );

        let reply = session
            .handle(
                "unit_converter",
                &json!({"value": 10, "from_unit": "km", "to_unit": "mi"}),
            )
            .await;
        let recovered = reply.recovered().expect("recovered").clone();
        assert_eq!(recovered.form, "unknown_name");
        assert!(
            recovered
                .hint
                .starts_with("Nothing ran: there is no tool \"unit_converter\"."),
            "{}",
            recovered.hint
        );
        let body = reply.body();
        let hits = body["value"].as_array().expect("search hits");
        assert!(
            hits.iter().any(|h| h["id"] == "plugin:units:convert_units"),
            "{body}"
        );
        assert!(
            body["next"]
                .as_str()
                .unwrap()
                .contains("openclaw.tools.call(\\\"plugin:units:"),
            "{body}"
        );
        // A name that finds nothing stays the unknown-name error.
        let reply = session.handle("qqzx_vorbl", &json!({})).await;
        assert!(reply.is_error() && reply.recovered().is_none(), "{reply:?}");
        session.finish().await;
    });
}

/// Right after a step named the tool to call, a call that names no tool — only its arguments,
/// as a small model sends `openclaw.tools.call({"args": {…}})` — calls that tool (recovered as
/// `call_without_id`); with no step before it, it stays the error that says what is missing.
#[test]
fn a_call_without_an_id_after_a_step_calls_the_step_s_tool() {
    let rt = rt();
    rt.block_on(async {
        let session = code_session().build().await.unwrap();
        let lone = session
            .handle(
                "openclaw.tools.call",
                &json!({"args": {"value": 10, "from_unit": "km", "to_unit": "mi"}}),
            )
            .await;
        assert!(lone.is_error(), "{lone:?}");
        assert!(lone.text().contains("names no tool id"), "{}", lone.text());
        let searched = session
            .handle(
                "tool_search_code",
                &json!({"code": "return await openclaw.tools.search(\"convert units\")"}),
            )
            .await;
        assert!(searched.body()["next"].is_string(), "{searched:?}");
        let called = session
            .handle(
                "openclaw.tools.call",
                &json!({"args": {"value": 10, "from_unit": "km", "to_unit": "mi"}}),
            )
            .await;
        let recovered = called.recovered().expect("recovered").clone();
        assert_eq!(recovered.form, "call_without_id");
        assert!(
            recovered
                .hint
                .contains(r#"openclaw.tools.call(\"plugin:units:convert_units\""#),
            "{}",
            recovered.hint
        );
        assert!(!called.is_error(), "{called:?}");
        assert_eq!(
            called.body()["value"]["tool"]["id"],
            "plugin:units:convert_units"
        );
        session.finish().await;
    });
}
