//! Fault injection with real processes and real signals (issue 16): a zygote stopped or killed
//! while cells run, a worker killed in the middle of a bridge call, a tool that panics inside a
//! cell, the session log on a full filesystem, SIGTERM to `serve`. Each fault ends in a named
//! error and the next request is served.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use toolsearch::{
    CatalogSnapshot, CellOptions, Config, Descriptor, FnTool, Mode, Outcome, Session, SessionLog,
    Source, ToolOutput,
};

use crate::sandbox::support::{Harness, start_time};
use crate::support::{BIN, rt};

fn signal(pid: u32, sig: i32) {
    // SAFETY: signalling a process this test started (a zygote or worker of its own supervisor,
    // or its own `serve` child).
    let rc = unsafe { libc::kill(pid as i32, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

fn one_second() -> CellOptions {
    CellOptions {
        timeout: Some(Duration::from_secs(1)),
        ..CellOptions::default()
    }
}

/// Waits (bounded) until `check` holds.
async fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Waits (bounded) until `pid` exited and was reaped.
async fn gone(pid: u32) {
    eventually(&format!("process {pid} to be reaped"), || {
        start_time(pid).is_none()
    })
    .await;
}

/// The worker running the one cell in flight: live, but not idle in the pool. Taking a worker
/// starts a refill whose new worker is live and not yet ready too (it rehearses first), so this
/// waits (bounded) until the pool is full again: then exactly one live worker is not in it.
async fn running_worker(h: &Harness) -> u32 {
    assert!(
        h.sup.wait_pool_full(Duration::from_secs(10)).await,
        "the pool did not refill"
    );
    let ready = h.sup.ready_worker_pids();
    let running: Vec<u32> = h
        .sup
        .live_worker_pids()
        .into_iter()
        .filter(|p| !ready.contains(p) && start_time(*p).is_some())
        .collect();
    assert_eq!(running.len(), 1, "live {running:?}, ready {ready:?}");
    running[0]
}

/// A stopped zygote cannot stretch a cell's deadline: cells that need a fork end with a named
/// error within about their 1 s deadline (it was ~11 s), the stalled zygote is killed, and after
/// SIGCONT the next cell runs on a new one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_zygote_cannot_stretch_a_deadline_and_is_replaced() {
    let h = Harness::new().await;
    assert!(h.sup.wait_pool_full(Duration::from_secs(10)).await);
    let zygote = h.sup.zygote_pid().unwrap();
    // Stopped while a cell runs: that cell's worker is already forked and finishes.
    let (running, ()) = tokio::join!(
        h.run_with(
            "const r = await openclaw.tools.call('slow:300', {a: 1, b: 2}); return r.sum;",
            one_second(),
        ),
        async {
            eventually("the bridge call", || {
                h.bridge.inflight.load(Ordering::SeqCst) == 1
            })
            .await;
            signal(zygote, libc::SIGSTOP);
        }
    );
    let orphans = crate::sandbox::support::descendants(zygote);
    assert_eq!(running.outcome, Outcome::Ok, "{running:?}");
    assert_eq!(running.value, Some(json!(3)));
    // The pool drains; the first cell that needs a fork from the stopped zygote gives up on it.
    let mut failed = None;
    for _ in 0..4 {
        let started = Instant::now();
        let r = h.run_with("return 2", one_second()).await;
        let took = started.elapsed();
        assert!(
            took < Duration::from_millis(3_500),
            "a 1 s cell took {took:?} with the zygote stopped: {r:?}"
        );
        if r.outcome != Outcome::Ok {
            failed = Some(r);
            break;
        }
    }
    let failed = failed.expect("a cell needed a fork from the stopped zygote");
    let Outcome::WorkerSetupFailure { detail } = &failed.outcome else {
        panic!("{failed:?}")
    };
    assert!(
        detail.contains("did not answer a fork request within"),
        "{detail}"
    );
    // (It may be reaped already: the supervisor killed it.)
    let _ = unsafe { libc::kill(zygote as i32, libc::SIGCONT) };
    h.assert_still_works().await;
    let restarted = h.sup.zygote_pid().unwrap();
    assert_ne!(restarted, zygote, "the stalled zygote was not replaced");
    // The old one was killed and is reaped by its thread once nothing holds its handle; its
    // workers died with it (`PR_SET_PDEATHSIG`).
    gone(zygote).await;
    for pid in orphans {
        gone(pid).await;
    }
    h.finish().await;
}

/// The same with the zygote killed outright (SIGKILL, never continued).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_zygote_that_is_then_killed_is_replaced() {
    let h = Harness::with(0, toolsearch::Limits::default()).await;
    let zygote = h.sup.zygote_pid().unwrap();
    signal(zygote, libc::SIGSTOP);
    let started = Instant::now();
    let r = h.run_with("return 2", one_second()).await;
    assert!(started.elapsed() < Duration::from_millis(3_500), "{r:?}");
    assert_eq!(r.outcome.kind(), "worker_setup_failure", "{r:?}");
    // Killed by the test as well (the supervisor already did): nothing waits for it.
    let _ = unsafe { libc::kill(zygote as i32, libc::SIGKILL) };
    h.assert_still_works().await;
    assert_ne!(h.sup.zygote_pid().unwrap(), zygote);
    gone(zygote).await;
    h.finish().await;
}

/// The zygote killed while a cell runs: the cell's worker dies with it (`PR_SET_PDEATHSIG`), the
/// cell ends at once with a named outcome (not at its deadline), and the next cell runs on a
/// restarted zygote.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_zygote_killed_while_cells_run_ends_them_and_is_restarted() {
    let h = Harness::new().await;
    assert!(h.sup.wait_pool_full(Duration::from_secs(10)).await);
    let zygote = h.sup.zygote_pid().unwrap();
    let started = Instant::now();
    let (r, orphans) = tokio::join!(
        h.run("await openclaw.tools.call('slow:5000', {}); return 'finished';"),
        async {
            eventually("the bridge call", || {
                h.bridge.inflight.load(Ordering::SeqCst) == 1
            })
            .await;
            let orphans = crate::sandbox::support::descendants(zygote);
            signal(zygote, libc::SIGKILL);
            orphans
        }
    );
    assert!(
        started.elapsed() < Duration::from_secs(4),
        "the cell outlived its zygote for {:?}: {r:?}",
        started.elapsed()
    );
    assert_ne!(r.outcome, Outcome::Ok, "{r:?}");
    assert!(
        !r.outcome.kind().is_empty() && !r.outcome.message().is_empty(),
        "{r:?}"
    );
    // The bridge call in flight was cancelled with the cell.
    assert_eq!(h.bridge.cancelled.load(Ordering::SeqCst), 1);
    assert_eq!(h.bridge.inflight.load(Ordering::SeqCst), 0);
    h.assert_still_works().await;
    assert_ne!(h.sup.zygote_pid().unwrap(), zygote);
    gone(zygote).await;
    for pid in orphans {
        gone(pid).await;
    }
    h.finish().await;
}

/// A worker SIGKILLed in the middle of a bridge call: the cell ends at once as killed by signal
/// 9, the call in flight is cancelled (not answered into a dead socket), and the next cell works.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_killed_mid_bridge_call_ends_its_cell_only() {
    let h = Harness::new().await;
    assert!(h.sup.wait_pool_full(Duration::from_secs(10)).await);
    let zygote = h.sup.zygote_pid().unwrap();
    let started = Instant::now();
    let (r, victim) = tokio::join!(
        h.run("await openclaw.tools.call('slow:5000', {}); return 'finished';"),
        async {
            eventually("the bridge call", || {
                h.bridge.inflight.load(Ordering::SeqCst) == 1
            })
            .await;
            let victim = running_worker(&h).await;
            signal(victim, libc::SIGKILL);
            victim
        }
    );
    assert!(started.elapsed() < Duration::from_secs(4), "{r:?}");
    assert_eq!(
        r.outcome,
        Outcome::KilledBySignal {
            signal: libc::SIGKILL
        },
        "{r:?}"
    );
    assert_eq!(r.telemetry.worker_pid, victim);
    assert_eq!(r.value, None);
    assert_eq!(h.bridge.cancelled.load(Ordering::SeqCst), 1);
    assert_eq!(h.bridge.inflight.load(Ordering::SeqCst), 0);
    h.assert_still_works().await;
    // Only the worker died: the zygote is the same.
    assert_eq!(h.sup.zygote_pid(), Some(zygote));
    h.finish().await;
}

/// A tool that panics, called from inside a code cell: the cell's call rejects with an internal
/// error naming the panic (the guest can catch it), the cell itself completes, and the session
/// keeps serving cells and calls.
#[test]
fn a_panicking_tool_inside_a_cell_is_internal_and_the_session_keeps_serving() {
    let boom = Descriptor::new(Source::Plugin, "chain", "boom")
        .description("Explode on purpose")
        .input_schema(json!({"type": "object"}))
        .tool(Arc::new(FnTool(|_ctx, args: Value| async move {
            if args.is_object() {
                panic!("a bug in a tool body");
            }
            Ok(ToolOutput::text("unreachable"))
        })));
    let echo = Descriptor::new(Source::Plugin, "chain", "echo")
        .description("Echo the arguments")
        .input_schema(json!({"type": "object"}))
        .tool(Arc::new(FnTool(|_ctx, args: Value| async move {
            Ok(ToolOutput::json(json!({"echo": args})))
        })));
    let rt = rt();
    let log = SessionLog::in_memory();
    let session = rt
        .block_on(
            Session::builder(Config::default())
                .mode(Mode::Code)
                .catalog(CatalogSnapshot::build([boom, echo]))
                .worker_binary(BIN)
                .warm_pool(1)
                .session_log(log.clone())
                .build(),
        )
        .unwrap();
    let code = r#"
        let caught;
        try { await openclaw.tools.call("plugin:chain:boom", {}); }
        catch (e) { caught = e.message; }
        const after = await openclaw.tools.call("plugin:chain:echo", { n: 1 });
        return { caught, after };
    "#;
    let reply = rt.block_on(session.handle("tool_search_code", &json!({ "code": code })));
    let body = reply.body();
    assert_eq!(body["ok"], true, "{body}");
    let caught = body["value"]["caught"].as_str().unwrap_or_default();
    assert!(caught.contains("panicked"), "{body}");
    assert_eq!(
        body["value"]["after"]["result"]["details"]["echo"]["n"], 1,
        "{body}"
    );
    // An uncaught one fails the cell with a named error; the next cell still works.
    let reply = rt.block_on(session.handle(
        "tool_search_code",
        &json!({"code": "return await openclaw.tools.call('plugin:chain:boom', {});"}),
    ));
    let body = reply.body();
    assert_eq!(body["ok"], false, "{body}");
    assert!(body.to_string().contains("panicked"), "{body}");
    let reply = rt.block_on(session.handle(
        "tool_search_code",
        &json!({"code": "return (await openclaw.tools.call('plugin:chain:echo', {n: 2})).result.details.echo.n;"}),
    ));
    assert_eq!(reply.body()["value"], 2, "{}", reply.body());
    let telemetry = rt.block_on(session.finish());
    assert_eq!(telemetry["counters"]["call_errors"], 2, "{telemetry}");
    let calls: Vec<Value> = log
        .lines()
        .into_iter()
        .filter(|r| r["type"] == "call" && r["tool_id"] == "plugin:chain:boom")
        .collect();
    assert_eq!(calls.len(), 2, "{:?}", log.lines());
}

/// A session log on `/dev/full`: every record fails, calls still succeed, and the failures are
/// counted in the run's telemetry.
#[test]
fn a_session_log_on_dev_full_never_fails_a_call() {
    let rt = rt();
    let log = SessionLog::to_file(Path::new("/dev/full")).unwrap();
    let session = rt
        .block_on(
            Session::builder(Config::default())
                .mode(Mode::Tools)
                .catalog(toolsearch::demo::catalog())
                .session_log(log.clone())
                .build(),
        )
        .unwrap();
    let hits = rt.block_on(session.handle("tool_search", &json!({"query": "weather forecast"})));
    assert!(hits.body()[0]["id"].is_string(), "{}", hits.body());
    let telemetry = rt.block_on(session.finish());
    assert!(log.write_failures() >= 2, "{}", log.write_failures());
    assert!(
        telemetry["log_write_failures"].as_u64().unwrap() >= 1,
        "{telemetry}"
    );
}

/// Runs `toolsearch serve` (stdio, tools mode) in a private mount namespace with its session log
/// on a tmpfs of `pages` pages, `filler` of them taken by another file; sends `calls` searches.
/// Returns (every response line, the log's bytes, serve's stderr).
fn serve_on_small_tmpfs(calls: usize) -> (Vec<Value>, Vec<u8>, String) {
    let dir = tempfile::tempdir().unwrap();
    let mount = dir.path().join("mnt");
    std::fs::create_dir(&mount).unwrap();
    let copy = dir.path().join("log.jsonl");
    // Two pages: the filler takes one, so the log has 4 KiB before the disk is full.
    let script = r#"set -e
mount -t tmpfs -o size=8k tmpfs "$1"
head -c 4096 /dev/zero > "$1/filler"
set +e
"$2" serve --mode tools --session-log "$1/log.jsonl"
rc=$?
cp "$1/log.jsonl" "$3"
exit $rc
"#;
    // `unshare -m` as root; `-rm` maps us to root in a new user namespace otherwise.
    let root = unsafe { libc::geteuid() } == 0;
    let mut child = Command::new("unshare")
        .arg(if root { "-m" } else { "-rm" })
        .args(["sh", "-c", script, "sh"])
        .arg(&mount)
        .arg(BIN)
        .arg(&copy)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("unshare runs (util-linux)");
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    let mut read = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line)
            .unwrap_or_else(|e| panic!("not JSON-RPC ({e}): {line:?}"))
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "faults", "version": "0"}}}),
    );
    let mut responses = vec![read()];
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let queries = [
        "weather forecast",
        "send an email",
        "convert units",
        "stock quote",
    ];
    for i in 0..calls {
        send(
            json!({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call", "params": {
            "name": "tool_search", "arguments": {"query": queries[i % queries.len()]}}}),
        );
        responses.push(read());
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "{:?}\n{stderr}", out.status);
    let log = std::fs::read(&copy).unwrap_or_else(|e| panic!("no log copy ({e}): {stderr}"));
    (responses, log, stderr)
}

/// The session log on a full filesystem (a 2-page tmpfs): every call still succeeds, the write
/// failure is reported once on stderr, and the log holds only whole lines (each parses) — the
/// record that did not fit was cut back, not left torn.
#[test]
fn a_session_log_on_a_full_tmpfs_keeps_whole_lines_and_reports_once() {
    let (responses, log, stderr) = serve_on_small_tmpfs(40);
    assert_eq!(responses.len(), 41);
    for (i, response) in responses.iter().enumerate().skip(1) {
        assert_eq!(response["id"], i, "{response}");
        let result = &response["result"];
        assert_eq!(result["isError"], false, "call {i}: {response}");
    }
    assert!(
        log.len() <= 4096,
        "the log outgrew the tmpfs: {} bytes",
        log.len()
    );
    assert!(log.len() > 1000, "{} bytes: {stderr}", log.len());
    assert!(log.ends_with(b"\n"), "a torn last line: {:?}", tail(&log));
    let text = String::from_utf8(log.clone()).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("torn line ({e}): {l:?}")))
        .collect();
    assert_eq!(records[0]["type"], "run_start");
    assert!(
        records.iter().filter(|r| r["type"] == "search").count() < 40,
        "every record fit: the filesystem never filled"
    );
    assert_eq!(
        stderr.matches("session log write failed").count(),
        1,
        "{stderr}"
    );
}

fn tail(bytes: &[u8]) -> String {
    String::from_utf8_lossy(&bytes[bytes.len().saturating_sub(80)..]).into_owned()
}

/// A cell that keeps its worker busy for `ms` milliseconds, then returns `tag`.
fn busy_cell(ms: u64, tag: &str) -> String {
    format!("const t = Date.now(); while (Date.now() - t < {ms}) {{}} return '{tag}';")
}

/// Every process below `root` (transitively), with its start time.
fn tree(root: u32) -> Vec<(u32, u64)> {
    crate::sandbox::support::descendants(root)
        .into_iter()
        .filter_map(|p| start_time(p).map(|t| (p, t)))
        .collect()
}

/// Asserts that none of `pids` is still running (a zombie awaiting its reaper counts as gone).
fn assert_all_gone(pids: &[(u32, u64)]) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let alive: Vec<u32> = pids
            .iter()
            .filter(|(p, t)| {
                start_time(*p) == Some(*t)
                    && !std::fs::read_to_string(format!("/proc/{p}/stat"))
                        .is_ok_and(|s| s.contains(") Z "))
            })
            .map(|(p, _)| *p)
            .collect();
        if alive.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "left running after serve exited: {alive:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Every line parses and the last one is `run_end`.
fn assert_log_flushed(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.ends_with('\n'), "a torn last line: {text:?}");
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("torn line ({e}): {l:?}")))
        .collect();
    assert_eq!(records[0]["type"], "run_start", "{text}");
    assert_eq!(records.last().unwrap()["type"], "run_end", "{text}");
    assert!(records.iter().any(|r| r["type"] == "cell"), "{text}");
}

fn wait_exit(child: &mut std::process::Child, limit: Duration) -> std::process::ExitStatus {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "serve did not exit within {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

async fn http_client(
    url: &str,
    token: &str,
) -> Result<rmcp::service::RunningService<rmcp::RoleClient, ()>, String> {
    use rmcp::ServiceExt;
    use rmcp::transport::StreamableHttpClientTransport;
    use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let config = StreamableHttpClientTransportConfig::with_uri(url).auth_header(token);
    ().serve(StreamableHttpClientTransport::from_config(config))
        .await
        .map_err(|e| e.to_string())
}

/// `work`, or a panic after 60 s (an rmcp client whose server went away keeps retrying).
async fn bounded<T>(work: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), work)
        .await
        .expect("no answer within 60 s")
}

fn code_call(code: &str) -> rmcp::model::CallToolRequestParams {
    let arguments = json!({ "code": code }).as_object().cloned().unwrap();
    rmcp::model::CallToolRequestParams::new("tool_search_code").with_arguments(arguments)
}

/// SIGTERM to `serve --http` while cells run: the cells in flight finish and answer, a new call
/// is refused with a named error and a new client cannot connect, the session log is complete
/// (`run_end` last, every line whole), and no zygote or worker outlives the server.
#[test]
fn sigterm_to_serve_http_drains_calls_flushes_the_log_and_leaves_no_worker() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let token = "fault-test-token";
    let mut child = Command::new(BIN)
        .args([
            "serve",
            "--mode",
            "code",
            "--http",
            "127.0.0.1:0",
            "--session-log",
        ])
        .arg(&log)
        .env("TOOLSEARCH_AUTH_TOKEN", token)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line.trim().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{line:?}");
    let rt = rt();
    // Bounded: a lost answer must fail this test, not hang the suite (the client would retry
    // its event stream forever).
    let (slow, refused, late, processes) = rt.block_on(bounded(async {
        let a = http_client(&url, token).await.unwrap();
        let b = http_client(&url, token).await.unwrap();
        let idle = http_client(&url, token).await.unwrap();
        // Warm up: the sandbox is running.
        let first = idle.call_tool(code_call("return 1")).await.unwrap();
        assert_eq!(first.is_error, Some(false), "{first:?}");
        let slow = tokio::spawn(async move {
            let (x, y) = tokio::join!(
                a.call_tool(code_call(&busy_cell(2_000, "a"))),
                b.call_tool(code_call(&busy_cell(2_000, "b")))
            );
            (x.map_err(|e| e.to_string()), y.map_err(|e| e.to_string()))
        });
        tokio::time::sleep(Duration::from_millis(700)).await;
        let processes = tree(pid);
        signal(pid, libc::SIGTERM);
        tokio::time::sleep(Duration::from_millis(300)).await;
        let refused = idle.call_tool(code_call("return 2")).await;
        let late = http_client(&url, token).await;
        (slow.await.unwrap(), refused, late, processes)
    }));
    for (tag, answer) in [("a", &slow.0), ("b", &slow.1)] {
        let result = answer
            .as_ref()
            .unwrap_or_else(|e| panic!("cell {tag} cut off: {e}"));
        assert_eq!(result.is_error, Some(false), "{result:?}");
        let value = result.structured_content.as_ref().unwrap();
        assert_eq!(value["value"], tag, "{value}");
    }
    match refused {
        Ok(result) => panic!("a call after SIGTERM ran: {result:?}"),
        Err(e) => {
            let e = e.to_string();
            assert!(
                // The shutdown error, or the connection refused or closed under the request.
                e.contains("shutting down")
                    || e.contains("connect")
                    || e.contains("closed")
                    || e.contains("error sending request"),
                "{e}"
            );
        }
    }
    assert!(late.is_err(), "a new client connected after SIGTERM");
    let status = wait_exit(&mut child, Duration::from_secs(20));
    assert!(status.success(), "{status:?}");
    assert!(
        processes.len() >= 3,
        "expected the zygote and two workers under serve: {processes:?}"
    );
    assert_all_gone(&processes);
    assert_log_flushed(&log);
}

/// SIGTERM to `serve` over stdio while a cell runs: that cell answers, a call sent after the
/// signal gets a JSON-RPC error naming the shutdown, the log ends with `run_end`, and no process
/// is left.
#[test]
fn sigterm_to_serve_stdio_drains_the_call_in_flight_and_refuses_new_ones() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("session.jsonl");
    let mut child = Command::new(BIN)
        .args(["serve", "--mode", "code", "--session-log"])
        .arg(&log)
        .env("RUST_LOG", "warn")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    let mut read = || {
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        serde_json::from_str::<Value>(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    };
    send(
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "faults", "version": "0"}}}),
    );
    read();
    send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let call = |id: u64, code: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
            "name": "tool_search_code", "arguments": {"code": code}}})
    };
    send(call(1, &busy_cell(2_000, "slow")));
    std::thread::sleep(Duration::from_millis(700));
    let processes = tree(pid);
    signal(pid, libc::SIGTERM);
    std::thread::sleep(Duration::from_millis(300));
    send(call(2, "return 2"));
    let mut answers = std::collections::HashMap::new();
    while answers.len() < 2 {
        let message = read();
        if let Some(id) = message["id"].as_u64() {
            answers.insert(id, message);
        }
    }
    assert_eq!(
        answers[&1]["result"]["structuredContent"]["value"], "slow",
        "{}",
        answers[&1]
    );
    let refused = answers[&2]["error"]["message"].as_str().unwrap_or_default();
    assert!(refused.contains("shutting down"), "{}", answers[&2]);
    drop(stdin);
    let status = wait_exit(&mut child, Duration::from_secs(20));
    assert!(status.success(), "{status:?}");
    assert!(processes.len() >= 2, "{processes:?}");
    assert_all_gone(&processes);
    assert_log_flushed(&log);
}
