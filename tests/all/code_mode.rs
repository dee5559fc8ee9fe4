use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::catalog::{BoxFuture, Descriptor};
use toolsearch::config::{Config, Mode};
use toolsearch::gateway::{BeforeToolCall, Gateway, GatewayBuilder, HookDecision};
use toolsearch::policy::Policy;

use crate::support::rt;
use toolsearch::sandbox::{Supervisor, SupervisorConfig};
use toolsearch::surface::{CodeAvailability, Surface, SurfaceOptions, run_code_cell};
use toolsearch::telemetry::SessionLog;

const BIN: &str = env!("CARGO_BIN_EXE_toolsearch");

async fn cell(gateway: &Gateway, code: &str) -> Value {
    let mut config = SupervisorConfig::new(BIN);
    config.pool_size = 1;
    let supervisor = Supervisor::start(config).await.unwrap();
    let result = run_code_cell(&supervisor, gateway, code, None).await;
    supervisor.shutdown().await;
    result
}

#[test]
fn the_walkthrough_cell_takes_the_gateway_path_and_is_logged() {
    let log = SessionLog::in_memory();
    let gateway = GatewayBuilder::new(toolsearch::demo::catalog())
        .session_log(log.clone())
        .build()
        .unwrap();
    let result = rt().block_on(cell(
        &gateway,
        include_str!("../../js/examples/walkthrough.js"),
    ));
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["value"]["tool"], "plugin:units:convert_units");
    assert!((result["value"]["miles"].as_f64().unwrap() - 6.2137).abs() < 1e-3);
    assert_eq!(
        result["logs"][0]["text"],
        "using plugin:units:convert_units: { from_unit: string; to_unit: string; value: number }"
    );
    assert_eq!(result["telemetry"]["bridge_calls"], 3);
    let kinds: Vec<String> = log
        .lines()
        .iter()
        .map(|r| r["type"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(kinds, ["run_start", "search", "describe", "call", "cell"]);
    let cell_record = log.lines().pop().unwrap();
    assert_eq!(cell_record["outcome"], "ok");
    assert_eq!(cell_record["bridge_calls"], 3);
}

#[test]
fn a_denied_tool_is_unknown_inside_a_cell_too() {
    let policy = Policy::from_json(&json!({"session": {"deny": ["plugin:finance:*"]}})).unwrap();
    let gateway = GatewayBuilder::new(toolsearch::demo::catalog())
        .policy(policy)
        .build()
        .unwrap();
    let unrestricted = Gateway::builder(toolsearch::demo::catalog())
        .build()
        .unwrap();
    let code = r#"
        const hits = await openclaw.tools.search("stock quote", { limit: 20 });
        try { await openclaw.tools.call("plugin:finance:get_stock_quote", { symbol: "AAPL" }); return "called"; }
        catch (e) { return { message: e.message, ids: hits.map((h) => h.id) }; }
    "#;
    let rt = rt();
    let result = rt.block_on(cell(&gateway, code));
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
    let never = rt.block_on(unrestricted.call_tool("plugin:finance:get_stock_quotez", json!({})));
    let expected_prefix = "Unknown tool \"plugin:finance:get_stock_quote\".";
    assert!(
        value["message"]
            .as_str()
            .unwrap()
            .starts_with(expected_prefix),
        "{value}"
    );
    assert!(never.error().is_some());
    let suggestions = value["message"]
        .as_str()
        .unwrap()
        .split("Did you mean")
        .nth(1)
        .unwrap_or("");
    assert!(
        !suggestions.contains("plugin:finance:"),
        "no denied id is suggested: {value}"
    );
}

#[test]
fn client_tools_approvals_and_validation_errors_reach_the_guest() {
    let gateway = Gateway::builder(toolsearch::demo::catalog())
        .build()
        .unwrap();
    let code = r#"
        const out = [];
        for (const [id, args] of [
            ["client:client:open_in_browser", { url: "https://example.com" }],
            ["plugin:mail:send_email", { to: ["a@example.com"], subject: "s", body: "b" }],
            ["plugin:units:convert_units", { value: "ten" }],
        ]) {
            try { await openclaw.tools.call(id, args); out.push("ran"); } catch (e) { out.push(e.message); }
        }
        return out;
    "#;
    let result = rt().block_on(cell(&gateway, code));
    let messages: Vec<&str> = result["value"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m.as_str().unwrap())
        .collect();
    assert!(
        messages[0].contains("is a client tool") && messages[0].contains("Call it directly"),
        "{}",
        messages[0]
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
        messages[2]
            .contains("Expected input: { from_unit: string; to_unit: string; value: number }")
    );
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
    let gateway = GatewayBuilder::new(toolsearch::demo::catalog())
        .hook(Arc::new(Kilometres))
        .build()
        .unwrap();
    let code = r#"
        const r = await openclaw.tools.call("plugin:units:convert_units", { value: 1, from_unit: "km", to_unit: "m" });
        return r.result.details.result;
    "#;
    let result = rt().block_on(cell(&gateway, code));
    assert_eq!(result["value"].as_f64(), Some(100_000.0), "{result}");
}

#[test]
fn code_mode_falls_back_when_the_worker_cannot_start() {
    let gateway = Gateway::builder(toolsearch::demo::catalog())
        .build()
        .unwrap();
    let rt = rt();
    let unavailable = rt.block_on(CodeAvailability::probe(std::path::Path::new("/bin/false")));
    let CodeAvailability::Unavailable(reason) = &unavailable else {
        panic!("{unavailable:?}")
    };
    let options = SurfaceOptions {
        config: Config {
            mode: Mode::Code,
            ..Config::default()
        },
        context_tokens: None,
        code: unavailable.clone(),
    };
    let surface = Surface::build(&gateway, &options).unwrap();
    assert_eq!(surface.mode, Mode::Tools);
    assert!(
        surface
            .fallback
            .as_deref()
            .unwrap()
            .contains(reason.as_str())
    );
    assert!(surface.tools.iter().any(|t| t.name == "tool_call"));

    // The real binary works.
    assert_eq!(
        rt.block_on(CodeAvailability::probe(std::path::Path::new(BIN))),
        CodeAvailability::Available
    );
}
