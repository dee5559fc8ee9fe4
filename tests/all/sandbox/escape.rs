//! The escape corpus: one named test per attempt. Each asserts a specific outcome or
//! a value proving the capability is absent, then runs a normal cell on the same supervisor, then
//! checks that no process of that supervisor outlives `shutdown()`.

use std::sync::atomic::Ordering;

use super::support::{Harness, short};
use pretty_assertions::assert_eq;
use serde_json::json;
use toolsearch::{LimitKind, Limits, Outcome};

/// Runs `code`, expects `Outcome::Ok` with `value`, then a normal cell, then a clean shutdown.
async fn expect_value(code: &str, value: serde_json::Value) {
    let h = Harness::new().await;
    let r = h.run(code).await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_eq!(r.value, Some(value));
    h.assert_still_works().await;
    h.finish().await;
}

/// Runs `code`, expects a JS error whose message starts with `prefix`.
async fn expect_js_error(code: &str, prefix: &str) {
    let h = Harness::new().await;
    let r = h.run(code).await;
    match &r.outcome {
        Outcome::JsError { message } => {
            assert!(
                message.starts_with(prefix),
                "expected `{prefix}…`, got `{message}`"
            )
        }
        other => panic!("expected JsError `{prefix}…`, got {other:?}"),
    }
    h.assert_still_works().await;
    h.finish().await;
}

async fn expect_outcome(limits: Limits, code: &str, outcome: Outcome) -> toolsearch::CellResult {
    let h = Harness::with(2, limits).await;
    let r = h.run(code).await;
    assert_eq!(r.outcome, outcome, "{r:#?}");
    h.assert_still_works().await;
    h.finish().await;
    r
}

// ---- module loading -------------------------------------------------------------------------

#[tokio::test]
async fn require_is_absent() {
    expect_js_error(
        "return require('fs').readFileSync('/etc/passwd', 'utf8')",
        "ReferenceError",
    )
    .await;
}

#[tokio::test]
async fn static_import_is_a_syntax_error() {
    expect_js_error("import fs from 'fs'; return fs", "SyntaxError").await;
}

#[tokio::test]
async fn dynamic_import_rejects() {
    expect_js_error(
        "return await import('/etc/passwd')",
        "ReferenceError: could not load module",
    )
    .await;
}

// ---- network and host objects -----------------------------------------------------------------

#[tokio::test]
async fn fetch_is_absent() {
    expect_js_error(
        "return await fetch('http://127.0.0.1:1/')",
        "ReferenceError",
    )
    .await;
}

#[tokio::test]
async fn xmlhttprequest_is_absent() {
    expect_js_error("return new XMLHttpRequest()", "ReferenceError").await;
}

#[tokio::test]
async fn websocket_is_absent() {
    expect_js_error(
        "return new WebSocket('ws://127.0.0.1:1/')",
        "ReferenceError",
    )
    .await;
}

#[tokio::test]
async fn process_is_absent() {
    expect_js_error("return process.env", "ReferenceError").await;
}

#[tokio::test]
async fn quickjs_std_and_os_are_absent() {
    expect_value(
        "return [typeof std, typeof os, typeof scriptArgs, typeof print, typeof globalThis.gc]",
        json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined"
        ]),
    )
    .await;
}

#[tokio::test]
async fn deno_and_bun_are_absent() {
    expect_value(
        "return [typeof Deno, typeof Bun]",
        json!(["undefined", "undefined"]),
    )
    .await;
}

#[tokio::test]
async fn timers_are_absent() {
    expect_value(
        "return [typeof setTimeout, typeof setInterval, typeof setImmediate, typeof queueMicrotask]",
        json!(["undefined", "undefined", "undefined", "function"]),
    )
    .await;
}

#[tokio::test]
async fn wasm_atomics_and_shared_memory_are_absent() {
    expect_value(
        "return [typeof WebAssembly, typeof Atomics, typeof SharedArrayBuffer, typeof performance]",
        json!(["undefined", "undefined", "undefined", "undefined"]),
    )
    .await;
}

#[tokio::test]
async fn globals_are_exactly_the_allowed_set() {
    // Standard ECMAScript intrinsics plus `console` and `openclaw`; nothing host-specific.
    expect_value(
        "const std = new Set(['Object','Error','EvalError','RangeError','ReferenceError','SyntaxError','TypeError','URIError','InternalError','AggregateError','SuppressedError','Iterator','Array','parseInt','parseFloat','isNaN','isFinite','queueMicrotask','decodeURI','decodeURIComponent','encodeURI','encodeURIComponent','escape','unescape','Infinity','NaN','undefined','Number','Boolean','String','Math','Reflect','Symbol','DisposableStack','AsyncDisposableStack','globalThis','BigInt','Date','RegExp','JSON','Proxy','Map','Set','WeakMap','WeakSet','ArrayBuffer','Uint8ClampedArray','Int8Array','Uint8Array','Int16Array','Uint16Array','Int32Array','Uint32Array','BigInt64Array','BigUint64Array','Float16Array','Float32Array','Float64Array','DataView','Promise','WeakRef','FinalizationRegistry','console','openclaw']);\n\
         return Object.getOwnPropertyNames(globalThis).filter(k => !std.has(k))",
        json!([]),
    )
    .await;
}

// ---- code from strings --------------------------------------------------------------------------

#[tokio::test]
async fn eval_is_absent() {
    expect_js_error("return eval('1 + 1')", "ReferenceError").await;
}

#[tokio::test]
async fn eval_is_absent_indirectly() {
    expect_value(
        "return [typeof globalThis['ev' + 'al'], typeof Reflect.get(globalThis, 'eval'), 'eval' in globalThis]",
        json!(["undefined", "undefined", false]),
    )
    .await;
}

#[tokio::test]
async fn new_function_is_absent() {
    expect_js_error("return new Function('return this')()", "ReferenceError").await;
}

#[tokio::test]
async fn function_constructor_chain_is_cut() {
    expect_js_error(
        "return (function () {}).constructor('return this')()",
        "TypeError",
    )
    .await;
}

#[tokio::test]
async fn async_function_constructor_chain_is_cut() {
    expect_js_error(
        "return await (async function () {}).constructor('return 1')()",
        "TypeError",
    )
    .await;
}

#[tokio::test]
async fn generator_function_constructor_chain_is_cut() {
    expect_js_error(
        "return (function* () {}).constructor('yield 1')().next()",
        "TypeError",
    )
    .await;
}

#[tokio::test]
async fn async_generator_function_constructor_chain_is_cut() {
    expect_js_error(
        "return (async function* () {}).constructor('yield 1')()",
        "TypeError",
    )
    .await;
}

#[tokio::test]
async fn reflect_get_prototype_of_async_function_constructor_is_cut() {
    expect_value(
        "return [Reflect.getPrototypeOf(async function () {}).constructor, Object.getPrototypeOf(function* () {}).constructor, Object.getPrototypeOf(async function* () {}).constructor, Object.getPrototypeOf(() => 1).constructor].map(c => typeof c)",
        json!(["undefined", "undefined", "undefined", "undefined"]),
    )
    .await;
}

#[tokio::test]
async fn bridge_and_console_constructor_chains_are_cut() {
    expect_value(
        "const t = openclaw.tools.call('x', {});\n\
         return [openclaw.tools.call.constructor, openclaw.tools.search.constructor, console.log.constructor, t.then.constructor, openclaw.constructor.constructor, Object.getPrototypeOf(openclaw.tools.describe).constructor].map(c => typeof c)",
        json!(["undefined", "undefined", "undefined", "undefined", "undefined", "undefined"]),
    )
    .await;
}

#[tokio::test]
async fn class_generator_object_and_descriptor_routes_are_cut() {
    expect_value(
        "const g = (function* () {})();\n\
         return [typeof (class {}).constructor, typeof Object.getPrototypeOf(g).constructor.constructor, typeof Object.getOwnPropertyDescriptor(Object.getPrototypeOf(function () {}), 'constructor').value, typeof (async () => {}).constructor, typeof Object.getPrototypeOf(Object.getPrototypeOf(async function* () {}())).constructor.constructor]",
        json!(["undefined", "undefined", "undefined", "undefined", "undefined"]),
    )
    .await;
}

#[tokio::test]
async fn cut_constructors_cannot_be_restored() {
    expect_value(
        "'use strict';\n\
         const fp = Object.getPrototypeOf(function () {});\n\
         const tries = [];\n\
         try { fp.constructor = Object; tries.push('assigned'); } catch (e) { tries.push(e.name); }\n\
         try { Object.defineProperty(fp, 'constructor', { value: Object }); tries.push('defined'); } catch (e) { tries.push(e.name); }\n\
         try { tries.push(delete fp.constructor); } catch (e) { tries.push(e.name); }\n\
         return [tries, typeof fp.constructor]",
        json!([["TypeError", "TypeError", "TypeError"], "undefined"]),
    )
    .await;
}

// ---- prototype pollution ------------------------------------------------------------------------

#[tokio::test]
async fn object_prototype_pollution_does_not_reach_the_next_cell_or_the_host() {
    let h = Harness::new().await;
    let r = h
        .run(
            "Object.prototype.polluted = 'yes'; Array.prototype.map = null; JSON.stringify = () => '\"hijacked\"';\n\
             await openclaw.tools.call('x', JSON.parse('{\"__proto__\": {\"admin\": true}, \"a\": 1}'));\n\
             return JSON.parse('{\"__proto__\": {\"admin\": true}}')",
        )
        .await;
    // The prelude captured JSON.stringify before guest code ran: the value still crossed as JSON.
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_eq!(r.value, Some(json!({"__proto__": {"admin": true}})));
    // The host saw plain data: "__proto__" is just a key, nothing else changed.
    let args = h.bridge.log.lock().unwrap()[0].1.clone();
    assert_eq!(args, json!(["x", {"__proto__": {"admin": true}, "a": 1}]));
    assert_eq!(json!({}).get("admin"), None);
    let next = h
        .run("return [({}).polluted, typeof [].map, JSON.stringify({a: 1}), ({}).admin]")
        .await;
    assert_eq!(
        next.value,
        Some(json!([null, "function", "{\"a\":1}", null]))
    );
    h.assert_still_works().await;
    h.finish().await;
}

#[tokio::test]
async fn openclaw_cannot_be_replaced_or_polluted() {
    let h = Harness::new().await;
    let r = h
        .run(
            "'use strict';\n\
             const out = [];\n\
             for (const attempt of [\n\
               () => { openclaw.tools.call = () => 'fake'; },\n\
               () => { openclaw.tools.extra = 1; },\n\
               () => { openclaw = {}; },\n\
               () => { Object.defineProperty(globalThis, 'openclaw', { value: {} }); },\n\
               () => { delete globalThis.openclaw; },\n\
               () => { console.log = () => {}; },\n\
             ]) { try { attempt(); out.push('allowed'); } catch (e) { out.push(e.name); } }\n\
             Object.getPrototypeOf(openclaw.tools).hijack = 1;\n\
             out.push(typeof openclaw.tools.call('x', {}).then);\n\
             return out",
        )
        .await;
    assert_eq!(
        r.value,
        Some(json!([
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "TypeError",
            "function"
        ])),
        "{r:#?}"
    );
    let next = h
        .run("return [openclaw.tools.hijack, Object.isFrozen(openclaw.tools)]")
        .await;
    assert_eq!(next.value, Some(json!([null, true])));
    h.assert_still_works().await;
    h.finish().await;
}

// ---- time ---------------------------------------------------------------------------------------

#[tokio::test]
async fn infinite_loop_times_out() {
    let r = expect_outcome(
        short(Limits::default(), 1_000),
        "while (true) {}",
        Outcome::Timeout,
    )
    .await;
    assert!(
        !r.telemetry.killed_at_deadline,
        "the interrupt handler should stop a plain loop"
    );
}

#[tokio::test]
async fn bigint_builtin_is_killed_from_outside() {
    // Array.prototype.join converts each element inside one builtin call; each conversion of the
    // largest BigInt QuickJS allows takes seconds and never polls the interrupt handler.
    let r = expect_outcome(
        short(Limits::default(), 1_000),
        "const x = 2n ** 999999n; return [x, x, x, x, x, x, x, x, x, x, x, x].join(',').length",
        Outcome::Timeout,
    )
    .await;
    assert!(r.telemetry.killed_at_deadline, "{r:#?}");
}

#[tokio::test]
async fn endless_array_like_scan_times_out() {
    expect_outcome(
        short(Limits::default(), 1_000),
        "return Array.prototype.indexOf.call({ length: 2 ** 53 - 1 }, 1)",
        Outcome::Timeout,
    )
    .await;
}

#[tokio::test]
async fn loop_after_awaits_times_out() {
    expect_outcome(
        short(Limits::default(), 1_000),
        "await openclaw.tools.search('x'); await null; for (;;) {}",
        Outcome::Timeout,
    )
    .await;
}

#[tokio::test]
async fn slow_bridge_call_times_out_and_is_cancelled() {
    let h = Harness::with(2, short(Limits::default(), 1_000)).await;
    let r = h
        .run("return await openclaw.tools.call('slow:30000', {})")
        .await;
    assert_eq!(r.outcome, Outcome::Timeout, "{r:#?}");
    assert_eq!(h.bridge.cancelled.load(Ordering::SeqCst), 1);
    h.assert_still_works().await;
    h.finish().await;
}

#[tokio::test]
async fn microtask_flood_times_out() {
    expect_outcome(
        short(Limits::default(), 1_000),
        "function spin() { queueMicrotask(spin); } spin(); await new Promise(() => {});",
        Outcome::Timeout,
    )
    .await;
}

#[tokio::test]
async fn promise_chain_flood_runs_out_of_memory() {
    expect_outcome(
        short(Limits::default(), 10_000),
        "function grow() { return Promise.resolve().then(grow); } grow(); await new Promise(() => {});",
        Outcome::Memory,
    )
    .await;
}

#[tokio::test]
async fn promise_fan_out_is_bounded() {
    expect_outcome(
        short(Limits::default(), 10_000),
        "const ps = []; for (;;) ps.push(Promise.resolve(ps.length).then(x => x + 1));",
        Outcome::Memory,
    )
    .await;
}

// ---- memory, recursion, output ------------------------------------------------------------------

#[tokio::test]
async fn memory_bomb_reports_memory() {
    expect_outcome(
        Limits::default(),
        "const a = []; for (;;) a.push('x'.repeat(10000) + a.length);",
        Outcome::Memory,
    )
    .await;
}

#[tokio::test]
async fn string_doubling_bomb_is_bounded() {
    let h = Harness::new().await;
    let r = h.run("let s = 'x'; for (;;) s = s + s;").await;
    assert!(
        matches!(&r.outcome, Outcome::Memory)
            || matches!(&r.outcome, Outcome::JsError { message } if message.starts_with("InternalError")),
        "{r:#?}"
    );
    h.assert_still_works().await;
    h.finish().await;
}

#[tokio::test]
async fn swallowed_out_of_memory_runs_into_the_deadline() {
    expect_outcome(
        short(Limits::default(), 1_000),
        "let a = []; try { for (;;) a.push(new Array(1e5).fill(a.length)); } catch (e) { a = null; } for (;;) {}",
        Outcome::Timeout,
    )
    .await;
}

#[tokio::test]
async fn deep_recursion_is_a_range_error() {
    expect_js_error(
        "function f(n) { return f(n + 1) + 1; } return f(0)",
        "RangeError",
    )
    .await;
}

#[tokio::test]
async fn deep_json_nesting_is_a_range_error_not_a_crash() {
    expect_js_error(
        "let v = []; for (let i = 0; i < 2e5; i++) v = [v]; return JSON.stringify(v).length",
        "RangeError",
    )
    .await;
}

#[tokio::test]
async fn console_flood_is_truncated() {
    let h = Harness::new().await;
    // 100 MB of output in 100,000 lines.
    let r = h.run("const line = 'x'.repeat(1000); for (let i = 0; i < 100000; i++) console.log(line); return 'done'").await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_eq!(r.value, Some(json!("done")));
    assert!(r.logs_truncated);
    let kept: usize = r.logs.iter().map(|l| l.text.len() + 1).sum();
    assert!(kept <= h.sup.limits().log_bytes, "kept {kept} bytes");
    assert!(r.telemetry.logs_dropped >= 99_000, "{:?}", r.telemetry);
    h.assert_still_works().await;
    h.finish().await;
}

#[tokio::test]
async fn huge_return_value_is_limit_exceeded() {
    let r = expect_outcome(
        Limits::default(),
        "return 'x'.repeat(5e6)",
        Outcome::LimitExceeded {
            limit: LimitKind::ResultBytes,
        },
    )
    .await;
    assert!(r.value.is_none());
}

// ---- the bridge ---------------------------------------------------------------------------------

#[tokio::test]
async fn unawaited_bridge_calls_never_reach_the_host() {
    let h = Harness::new().await;
    let r = h
        .run("const pending = []; for (let i = 0; i < 10000; i++) pending.push(openclaw.tools.call('mcp:x:y', {i})); return pending.length")
        .await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_eq!(r.value, Some(json!(10000)));
    assert_eq!(h.bridge.calls.load(Ordering::SeqCst), 0);
    assert_eq!(r.telemetry.bridge_calls, 0);
    h.assert_still_works().await;
    h.finish().await;
}

#[tokio::test]
async fn denied_tool_rejection_reaches_the_guest() {
    expect_value(
        "try { await openclaw.tools.call('denied:shell', {cmd: 'cat /etc/passwd'}); return 'called'; } catch (e) { return [e instanceof Error, e.message]; }",
        json!([true, "Unknown tool: denied:shell. Use search to find tools."]),
    )
    .await;
}

#[tokio::test]
async fn etc_passwd_is_unreachable_by_every_route() {
    let h = Harness::new().await;
    let r = h
        .run(
            "const routes = {\n\
               require: () => require('fs').readFileSync('/etc/passwd', 'utf8'),\n\
               import: () => import('/etc/passwd'),\n\
               importFileUrl: () => import('file:///etc/passwd'),\n\
               fetch: () => fetch('file:///etc/passwd'),\n\
               xhr: () => { const x = new XMLHttpRequest(); x.open('GET', 'file:///etc/passwd', false); x.send(); return x.responseText; },\n\
               std: () => std.loadFile('/etc/passwd'),\n\
               os: () => os.open('/etc/passwd'),\n\
               deno: () => Deno.readTextFileSync('/etc/passwd'),\n\
               bun: () => Bun.file('/etc/passwd').text(),\n\
               process: () => process.binding('fs'),\n\
               worker: () => new Worker('/etc/passwd'),\n\
               eval: () => eval(\"require('fs')\"),\n\
               ctor: () => (async () => {}).constructor('return import(\"/etc/passwd\")')(),\n\
               regexpSource: () => RegExp('/etc/passwd').exec('x'),\n\
             };\n\
             const out = {};\n\
             for (const [name, route] of Object.entries(routes)) {\n\
               try { out[name] = 'ok:' + String(await route()); } catch (e) { out[name] = 'denied:' + e.name; }\n\
             }\n\
             return out",
        )
        .await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    let value = r.value.clone().unwrap();
    for (route, result) in value.as_object().unwrap() {
        let text = result.as_str().unwrap();
        assert!(
            !text.contains("root:"),
            "route {route} read the file: {text}"
        );
        if route != "regexpSource" {
            assert!(text.starts_with("denied:"), "route {route}: {text}");
        }
    }
    h.assert_still_works().await;
    h.finish().await;
}
