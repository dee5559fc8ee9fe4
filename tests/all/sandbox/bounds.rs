//! Each bound a cell meets ends in its own kind and message (issue 16): nesting and size of bridge
//! arguments, the bridge-call cap, the body and result bounds, the console's line bound, a body
//! that tries to close its wrapper, and the sandbox itself going away.

use std::time::Duration;

use pretty_assertions::assert_eq;
use serde_json::json;
use toolsearch::{LimitKind, Limits, Outcome};

use super::support::Harness;

/// A JS expression building an object nested `depth` levels deep (`{a: {a: … {}}}`).
fn deep(depth: usize) -> String {
    format!(
        "(() => {{ let o = {{}}; for (let i = 1; i < {depth}; i++) o = {{a: o}}; return o; }})()"
    )
}

#[tokio::test]
async fn deep_bridge_arguments_get_their_own_limit_and_the_worker_lives_on() {
    let h = Harness::new().await;
    // 100 levels: refused by name, catchable; the same cell goes on calling.
    let code = format!(
        "let refused = null;
         try {{ await openclaw.tools.call('plugin:math:add', {deep}); }}
         catch (e) {{ refused = String(e.message); }}
         const fine = await openclaw.tools.call('plugin:math:add', {{a: 1, b: 2, nested: {ok}}});
         const q = await openclaw.tools.search({{query: {deep}}}).catch(e => 'search: ' + e.message);
         return {{refused, sum: fine.sum, q}};",
        deep = deep(100),
        ok = deep(60),
    );
    let r = h.run(&code).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    let v = r.value.clone().unwrap();
    let refused = v["refused"].as_str().unwrap();
    assert!(
        refused.contains("nested deeper than 64 levels")
            && refused.contains("MAX_BRIDGE_ARGUMENT_DEPTH"),
        "{refused}"
    );
    assert_eq!(v["sum"], json!(3));
    assert!(
        v["q"]
            .as_str()
            .unwrap()
            .starts_with("search: bridge arguments nested deeper"),
        "{v}"
    );
    // Two calls were refused inside the worker; only the one within the bound reached the host.
    assert_eq!(r.telemetry.bridge_calls, 1, "{r:#?}");

    // Uncaught, the cell ends with the depth limit — not a protocol error.
    let r = h
        .run(&format!(
            "await openclaw.tools.call('x', {}); return 1",
            deep(100)
        ))
        .await;
    assert_eq!(
        r.outcome,
        Outcome::LimitExceeded {
            limit: LimitKind::ArgumentDepth
        }
    );
    assert_eq!(r.to_json()["error"]["kind"], "limit_exceeded");
    assert!(
        r.outcome.message().contains("64 levels"),
        "{}",
        r.outcome.message()
    );
    h.assert_still_works().await;
    h.finish().await;
}

#[tokio::test]
async fn a_huge_argument_is_its_own_limit_not_the_bridge_call_cap() {
    let h = Harness::new().await;
    // 10 MB against the 4 MiB frame bound.
    let r = h
        .run(
            "const big = 'x'.repeat(10 * 1000 * 1000);
             let caught = null;
             try { await openclaw.tools.search(big); } catch (e) { caught = String(e.message); }
             const after = await openclaw.tools.call('plugin:math:add', {a: 2, b: 2});
             return {caught, sum: after.sum};",
        )
        .await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    let v = r.value.unwrap();
    let caught = v["caught"].as_str().unwrap();
    assert!(
        caught.contains("too large") && caught.contains("10000") && caught.contains("frame bound"),
        "{caught}"
    );
    assert!(!caught.contains("bridge call limit"), "{caught}");
    assert_eq!(v["sum"], json!(4));
    let r = h
        .run("await openclaw.tools.call('x', {blob: 'y'.repeat(10000000)}); return 1")
        .await;
    assert_eq!(
        r.outcome,
        Outcome::LimitExceeded {
            limit: LimitKind::ArgumentBytes
        },
        "{r:#?}"
    );
    assert!(r.outcome.message().contains("frame bound"));
    h.assert_still_works().await;
    h.finish().await;
}

#[tokio::test]
async fn every_limit_kind_names_only_its_own_cause() {
    let h = Harness::with(
        1,
        Limits {
            bridge_calls: 2,
            ..Limits::default()
        },
    )
    .await;
    // The bridge-call cap, and only it, is `bridge_calls`.
    let r = h
        .run("for (let i = 0; i < 3; i++) await openclaw.tools.call('x', {}); return 1")
        .await;
    assert_eq!(
        r.outcome,
        Outcome::LimitExceeded {
            limit: LimitKind::BridgeCalls
        }
    );
    assert!(r.outcome.message().contains("more bridge calls"));
    // A large body is `code_bytes` and never runs.
    let r = h
        .run(&format!("/*{}*/ return 1", "x".repeat(300 * 1024)))
        .await;
    assert_eq!(
        r.outcome,
        Outcome::LimitExceeded {
            limit: LimitKind::CodeBytes
        }
    );
    assert!(r.outcome.message().contains("code is too long"));
    // A large result is `result_bytes`.
    let r = h.run("return 'z'.repeat(2 * 1024 * 1024)").await;
    assert_eq!(
        r.outcome,
        Outcome::LimitExceeded {
            limit: LimitKind::ResultBytes
        }
    );
    assert!(r.outcome.message().contains("return value is too large"));
    // The kinds serialize to their own names.
    for (kind, name) in [
        (LimitKind::ResultBytes, "result_bytes"),
        (LimitKind::BridgeCalls, "bridge_calls"),
        (LimitKind::CodeBytes, "code_bytes"),
        (LimitKind::ArgumentBytes, "argument_bytes"),
        (LimitKind::ArgumentDepth, "argument_depth"),
    ] {
        assert_eq!(serde_json::to_value(kind).unwrap(), json!(name));
    }
    h.finish().await;
}

#[tokio::test]
async fn a_million_empty_log_lines_keep_a_bounded_number_of_entries() {
    let h = Harness::new().await;
    let r = h
        .run("for (let i = 0; i < 1000000; i++) console.log(''); console.warn('last'); return 'done'")
        .await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_eq!(r.value, Some(json!("done")));
    assert_eq!(r.logs.len(), 1_000, "MAX_LOG_LINES entries are kept");
    assert!(r.logs_truncated);
    assert_eq!(r.telemetry.logs_dropped, 1_000_001 - 1_000);
    let j = r.to_json();
    let logs = j["logs"].as_array().unwrap();
    assert_eq!(logs.len(), 1_001, "the kept lines and one marker");
    let marker = logs.last().unwrap()["text"].as_str().unwrap();
    assert!(
        marker.contains("999001 console line(s) dropped") && marker.contains("1000 lines"),
        "{marker}"
    );
    let bytes = j.to_string().len();
    assert!(bytes < 64 * 1024, "the JSON result is {bytes} bytes");
    h.assert_still_works().await;
    h.finish().await;
}

/// Bodies that try to close the async wrapper they are compiled in: each is a `SyntaxError`,
/// and nothing they smuggled in reaches the bridge or the console.
#[tokio::test]
async fn a_body_cannot_close_its_wrapper() {
    let h = Harness::new().await;
    let attempts = [
        "}); (async function(){ return 3",
        "})(); (async function(){ return 3",
        "}), 0; console.log('top'); (async function(){ return 3",
        "}) /* comment */ ; openclaw.tools.call('smuggled', {}).then(); (async function(){ return 3",
        "}, async function(){ return 3",
        "}); //",
        "})/*",
        "</script><script>}); (async function(){ return 3",
        "}); throw new Error('smuggled'); (async function(){ return 3",
        "}); (0, openclaw.tools.search || {",
        "}); openclaw.tools.search; (function(){ return 3",
        "return 1 }",
        "return 1 })",
    ];
    for attempt in attempts {
        let r = h.run(attempt).await;
        match &r.outcome {
            Outcome::JsError { message } => {
                assert!(message.starts_with("SyntaxError"), "{attempt}: {message}");
            }
            other => panic!("{attempt}: expected a SyntaxError, got {other:?}"),
        }
        assert!(r.logs.is_empty(), "{attempt}: {:?}", r.logs);
    }
    assert_eq!(
        h.bridge.calls.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "no smuggled call reached the host"
    );
    // Bodies that only look like it are still ordinary bodies.
    for (body, value) in [
        ("return '})'", json!("})")),
        ("return /}\\)/.source", json!("}\\)")),
        ("return `${'}'})`", json!("})")),
        ("return 1 // })", json!(1)),
        ("/* }) */ return 2", json!(2)),
        ("const f = () => { return 4 }; return f()", json!(4)),
        (
            "'use strict'; return (function () { return this === undefined })()",
            json!(true),
        ),
    ] {
        let r = h.run(body).await;
        assert_eq!(r.outcome, Outcome::Ok, "{body}: {r:#?}");
        assert_eq!(r.value, Some(value), "{body}");
    }
    h.assert_still_works().await;
    h.finish().await;
}

#[tokio::test]
async fn a_zygote_that_dies_under_a_cell_is_named_not_a_protocol_error() {
    let h = Harness::new().await;
    let zygote = h.sup.zygote_pid().expect("a zygote runs");
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(500)).await;
        // SAFETY: a plain kill(2) of the zygote this test started.
        unsafe { libc::kill(zygote as i32, libc::SIGKILL) };
    });
    let r = h
        .run("await openclaw.tools.call('slow:5000', {}); return 1")
        .await;
    let _ = killer.await;
    assert_eq!(r.outcome.kind(), "sandbox_unavailable", "{r:#?}");
    assert!(
        r.outcome.message().contains("zygote"),
        "{}",
        r.outcome.message()
    );
    assert!(!r.outcome.message().contains("protocol"));
    h.assert_still_works().await;
    // Not `finish()`: the killed zygote's orphaned worker is reaped by whoever adopts it, which
    // is outside the supervisor (restart and reaping are covered by the fault-injection tests).
    h.sup.shutdown().await;
}
