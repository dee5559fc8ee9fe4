//! The bridge's semantics: lazy calls, JSON values both ways, concurrency,
//! draining, rejection messages, and how a cell's own value and errors come back.

use std::sync::atomic::Ordering;

use super::support::Harness;
use pretty_assertions::assert_eq;
use serde_json::json;
use toolsearch::{BridgeOp, CellOptions, Outcome};

#[tokio::test]
async fn arguments_cross_exactly_as_passed() {
    let h = Harness::new().await;
    let r = h
        .run("await openclaw.tools.search('q'); await openclaw.tools.search('q', {limit: 3}); await openclaw.tools.describe('mcp:a:b'); await openclaw.tools.call('mcp:a:b', {x: 1}); await openclaw.tools.describe(); return null")
        .await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    let log = h.bridge.log.lock().unwrap().clone();
    assert_eq!(
        log,
        vec![
            (BridgeOp::Search, json!(["q"])),
            (BridgeOp::Search, json!(["q", {"limit": 3}])),
            (BridgeOp::Describe, json!(["mcp:a:b"])),
            (BridgeOp::Call, json!(["mcp:a:b", {"x": 1}])),
            (BridgeOp::Describe, json!([])),
        ]
    );
    drop(log);
    h.finish().await;
}

#[tokio::test]
async fn values_cross_as_json() {
    let h = Harness::new().await;
    let r = h
        .run(
            "const cyclic = {}; cyclic.self = cyclic;\n\
             await openclaw.tools.call('x', {u: undefined, n: null, big: 12n, f: function named() {}, s: Symbol('q'), d: new Date(0), nan: NaN, arr: [undefined, 1]}, undefined, cyclic);\n\
             return [undefined, 1n, NaN]",
        )
        .await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_eq!(r.value, Some(json!([null, "1", null])));
    let args = h.bridge.log.lock().unwrap()[0].1.clone();
    assert_eq!(
        args,
        json!([
            "x",
            {"u": null, "n": null, "big": "12", "f": "function named() {}", "s": "Symbol(q)", "d": "1970-01-01T00:00:00.000Z", "nan": null, "arr": [null, 1]},
            null,
            "[object Object]"
        ])
    );
    h.finish().await;
}

#[tokio::test]
async fn host_values_resolve_the_guest_promise() {
    let h = Harness::new().await;
    let r = h
        .run("const d = await openclaw.tools.describe('mcp:cal:create'); const hits = await openclaw.tools.search('x'); return [d, hits.length, hits[0].score]")
        .await;
    assert_eq!(
        r.value,
        Some(
            json!([{"id": "mcp:cal:create", "name": "create", "input_schema": {"type": "object"}}, 3, 3.5])
        )
    );
    h.finish().await;
}

#[tokio::test]
async fn unicode_round_trips() {
    let h = Harness::new().await;
    let r = h
        .run("const out = await openclaw.tools.call('x', {s: 'héllo 🌍 \\u0000 \"q\"', lone: '\\ud800'}); return out.echo")
        .await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_eq!(
        r.value,
        Some(json!({"s": "héllo 🌍 \u{0} \"q\"", "lone": "\u{fffd}"}))
    );
    h.finish().await;
}

#[tokio::test]
async fn promise_all_overlaps_host_calls() {
    let h = Harness::new().await;
    let r = h
        .run("const r = await Promise.all([openclaw.tools.call('slow:200', {}), openclaw.tools.call('slow:200', {}), openclaw.tools.call('slow:200', {})]); return r.map(x => x.id)")
        .await;
    assert_eq!(r.value, Some(json!(["slow:200", "slow:200", "slow:200"])));
    assert_eq!(h.bridge.max_inflight.load(Ordering::SeqCst), 3);
    h.finish().await;
}

#[tokio::test]
async fn started_calls_drain_before_the_result() {
    let h = Harness::new().await;
    let r = h
        .run("openclaw.tools.call('slow:100', {}).then(v => console.log('late', v.id)); return 'early'")
        .await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_eq!(r.value, Some(json!("early")));
    assert_eq!(r.logs.len(), 1);
    assert_eq!(r.logs[0].text, "late slow:100");
    assert_eq!(h.bridge.cancelled.load(Ordering::SeqCst), 0);
    h.finish().await;
}

#[tokio::test]
async fn a_call_starts_once_however_often_it_is_awaited() {
    let h = Harness::new().await;
    let r = h
        .run("const c = openclaw.tools.call('x', {}); const a = await c; const b = await c; c.then(() => {}); await c.catch(() => {}); return a.id === b.id")
        .await;
    assert_eq!(r.value, Some(json!(true)));
    assert_eq!(h.bridge.calls.load(Ordering::SeqCst), 1);
    h.finish().await;
}

#[tokio::test]
async fn rejection_carries_the_host_message_exactly() {
    let h = Harness::new().await;
    let r = h.run("await openclaw.tools.call('denied:x', {})").await;
    assert_eq!(
        r.outcome,
        Outcome::JsError {
            message: "Error: Unknown tool: denied:x. Use search to find tools.".into()
        }
    );
    h.finish().await;
}

#[tokio::test]
async fn cell_values_and_errors() {
    let h = Harness::new().await;
    assert_eq!(h.run("return").await.value, Some(json!(null)));
    assert_eq!(h.run("return undefined").await.value, Some(json!(null)));
    assert_eq!(h.run("return await 5").await.value, Some(json!(5)));
    assert_eq!(h.run("return () => 1").await.value, Some(json!("() => 1")));
    assert_eq!(
        h.run("throw 'plain'").await.outcome,
        Outcome::JsError {
            message: "plain".into()
        }
    );
    assert_eq!(
        h.run("throw {a: 1}").await.outcome,
        Outcome::JsError {
            message: "{\"a\":1}".into()
        }
    );
    assert_eq!(
        h.run("throw null").await.outcome,
        Outcome::JsError {
            message: "null".into()
        }
    );
    match h.run("return (").await.outcome {
        Outcome::JsError { message } => assert!(message.starts_with("SyntaxError"), "{message}"),
        other => panic!("{other:?}"),
    }
    assert_eq!(
        h.run("await new Promise(() => {})").await.outcome,
        Outcome::JsError {
            message: "the cell awaits a promise that can never settle (no bridge call is pending and the sandbox has no timers); await openclaw.tools calls or return a value".into()
        }
    );
    h.finish().await;
}

/// A `Bridge` with a bug: every call panics.
struct PanickingBridge;

#[async_trait::async_trait]
impl toolsearch::Bridge for PanickingBridge {
    async fn invoke(
        &self,
        _op: BridgeOp,
        _args: serde_json::Value,
    ) -> Result<serde_json::Value, toolsearch::ToolError> {
        panic!("a bug in the bridge")
    }
}

#[tokio::test]
async fn a_panicking_bridge_ends_only_its_own_cell() {
    let h = Harness::new().await;
    let r = h
        .sup
        .run_cell(
            "await openclaw.tools.search('q'); return 1",
            std::sync::Arc::new(PanickingBridge),
            CellOptions::default(),
        )
        .await;
    assert!(
        matches!(&r.outcome, Outcome::ProtocolError { detail } if detail.contains("panicked")),
        "{r:#?}"
    );
    h.assert_still_works().await;
    h.finish().await;
}

#[tokio::test]
async fn a_traced_cell_reports_where_its_time_went() {
    let h = Harness::new().await;
    let code = "const h = await openclaw.tools.search('q'); const d = await openclaw.tools.describe(h[0].id); await openclaw.tools.call(d.id, {}); return 1";
    let traced = h
        .run_with(
            code,
            CellOptions {
                trace_phases: true,
                ..CellOptions::default()
            },
        )
        .await;
    assert_eq!(traced.outcome, Outcome::Ok, "{traced:#?}");
    let phases = traced
        .telemetry
        .phases
        .clone()
        .unwrap_or_else(|| panic!("no phases: {traced:#?}"));
    assert_eq!(phases.calls.len(), 3, "{phases:#?}");
    // Every socket trip and every compile takes some time; none of it can be negative.
    assert!(phases.compile_us > 0.0, "{phases:#?}");
    assert!(
        phases
            .calls
            .iter()
            .all(|c| c.hops_us > 0.0 && c.host_us >= 0.0 && c.guest_us >= 0.0)
    );
    assert!(phases.submit_to_running_us > 0.0 && phases.result_to_caller_us > 0.0);
    assert!(traced.to_json()["telemetry"]["phases"].is_object());
    // Untraced (the default), nothing is stamped or reported.
    let plain = h.run(code).await;
    assert_eq!(plain.outcome, Outcome::Ok);
    assert_eq!(plain.telemetry.phases, None);
    assert!(plain.to_json()["telemetry"].get("phases").is_none());
    h.finish().await;
}
