//! MCP both ways against real servers from the npm registry (`tests/fixtures/mcp`, installed by
//! `npm ci` there), our own small test server for what they never do, and real MCP clients (the
//! official Python SDK and the MCP Inspector CLI) against `toolsearch serve`.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::{
    Config, FailureKind, GlobApprovals, Mode, Policy, Reply, Session, UpstreamStatus, Upstreams,
};

use crate::support::{BIN, rt};

/// Sampling and elicitation relayed through `serve`.
mod asking;
/// Tool results through `serve` as MCP content.
mod content;
/// Prompts through `serve`.
mod prompts;
/// Logging and completion through `serve`.
mod relays;
/// Resources through `serve`.
mod resources;

/// `tests/fixtures/mcp`, where `npm ci` installed the servers.
fn fixtures() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/mcp");
    assert!(
        dir.join("node_modules/@modelcontextprotocol/server-everything")
            .is_dir(),
        "the MCP test servers are not installed: run `npm ci` in {} (.ci/run does)",
        dir.display()
    );
    dir
}

fn module(path: &str) -> String {
    fixtures()
        .join("node_modules")
        .join(path)
        .display()
        .to_string()
}

fn test_server(args: &[&str]) -> Value {
    let mut all = vec![
        fixtures()
            .join("servers/testserver.mjs")
            .display()
            .to_string(),
    ];
    all.extend(args.iter().map(|a| a.to_string()));
    json!({"command": "node", "args": all})
}

fn everything() -> Value {
    json!({"command": "node", "args": [module("@modelcontextprotocol/server-everything/dist/index.js"), "stdio"]})
}

/// A run over `servers` (a JSON object of named server configs) in `mode`.
struct Run {
    rt: tokio::runtime::Runtime,
    upstreams: Upstreams,
    session: Session,
}

impl Run {
    fn new(servers: Value, mode: Mode) -> Run {
        Run::with(servers, mode, &[])
    }

    fn with(servers: Value, mode: Mode, approve: &[&str]) -> Run {
        Run::build(servers, mode, approve, Policy::allow_all())
    }

    fn build(servers: Value, mode: Mode, approve: &[&str], policy: Policy) -> Run {
        let config = Config::from_value(&json!({"mcp": {"servers": servers}}), None).unwrap();
        let rt = rt();
        let approvals =
            GlobApprovals::new(&approve.iter().map(|a| a.to_string()).collect::<Vec<_>>()).unwrap();
        let (upstreams, session) = rt.block_on(async {
            // Each stdio server under the binary's supervisor, as the CLI runs them.
            let upstreams = Upstreams::start_with(&config.mcp, Some(BIN.into())).unwrap();
            upstreams.ready().await;
            let session = Session::builder(config)
                .mode(mode)
                .catalog(upstreams.catalog(&[]))
                .policy(policy)
                .approvals(Arc::new(approvals))
                .worker_binary(BIN)
                .warm_pool(0)
                .build()
                .await
                .unwrap();
            upstreams.attach(&session, Vec::new());
            (upstreams, session)
        });
        Run {
            rt,
            upstreams,
            session,
        }
    }

    fn handle(&self, name: &str, args: Value) -> Reply {
        self.rt.block_on(self.session.handle(name, &args))
    }

    fn call(&self, id: &str, args: Value) -> Reply {
        self.rt
            .block_on(self.session.call(&json!({"id": id, "args": args})))
    }

    fn search(&self, query: &str) -> Vec<String> {
        let hits = self.session.search(&json!({"query": query})).body();
        hits.as_array()
            .unwrap()
            .iter()
            .map(|h| h["id"].as_str().unwrap().to_string())
            .collect()
    }

    fn cell(&self, code: &str) -> Value {
        self.rt
            .block_on(self.session.run_cell(code, None))
            .to_json()
    }

    fn status(&self, name: &str) -> UpstreamStatus {
        self.upstreams
            .servers()
            .iter()
            .find(|s| s.name() == name)
            .unwrap()
            .status()
    }

    /// Waits (bounded) until `check` holds.
    fn eventually(&self, what: &str, mut check: impl FnMut(&Run) -> bool) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !check(self) {
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Run {
    fn drop(&mut self) {
        self.rt.block_on(async {
            self.session.finish().await;
            self.upstreams.shutdown().await;
        });
    }
}

fn text(reply: &Reply) -> String {
    match reply {
        Reply::Done(envelope) => envelope.result.text.clone().unwrap_or_default(),
        other => panic!("expected a result, got {other:?}"),
    }
}

fn failure(reply: &Reply) -> (FailureKind, String) {
    match reply {
        Reply::Failed { kind, body, .. } => (
            *kind,
            body["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
        ),
        other => panic!("expected a failure, got {other:?}"),
    }
}

fn reference_servers(dir: &std::path::Path) -> Value {
    json!({
        "everything": everything(),
        "memory": {"command": "node", "args": [module("@modelcontextprotocol/server-memory/dist/index.js")],
                   "env": {"MEMORY_FILE_PATH": dir.join("memory.jsonl").display().to_string()}},
        "filesystem": {"command": "node", "args": [module("@modelcontextprotocol/server-filesystem/dist/index.js"), dir.join("files").display().to_string()]},
    })
}

#[test]
fn reference_servers_are_untrusted_searchable_and_callable() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("files")).unwrap();
    let run = Run::new(reference_servers(dir.path()), Mode::Tools);
    for server in ["everything", "memory", "filesystem"] {
        assert_eq!(run.status(server), UpstreamStatus::Ready, "{server}");
    }
    assert_eq!(
        run.search("sum of two numbers")[0],
        "mcp:everything:get-sum"
    );
    assert!(
        run.search("create entities in the knowledge graph")
            .contains(&"mcp:memory:create_entities".to_string())
    );
    assert!(
        run.search("write a file")
            .contains(&"mcp:filesystem:write_file".to_string())
    );
    // Untrusted: no signature in hits, nothing of theirs in the system prompt.
    let hits = run
        .session
        .search(&json!({"query": "sum of two numbers"}))
        .body();
    assert_eq!(hits[0]["input"], "unknown");
    assert!(!run.session.system_prompt().contains("get-sum"));

    let reply = run.handle(
        "tool_call",
        json!({"id": "mcp:everything:get-sum", "args": {"a": 2, "b": 3}}),
    );
    assert_eq!(text(&reply), "The sum of 2 and 3 is 5.");

    // Entities created in one call are found by another.
    let created = run.call(
        "mcp:memory:create_entities",
        json!({"entities": [{"name": "Zanzibar Release", "entityType": "project", "observations": ["ships in May"]}]}),
    );
    assert!(matches!(created, Reply::Done(_)), "{created:?}");
    let found = run.call("mcp:memory:search_nodes", json!({"query": "Zanzibar"}));
    let Reply::Done(_) = &found else {
        panic!("{found:?}")
    };
    let body = found.body();
    assert!(body.to_string().contains("ships in May"), "{body}");
    // structuredContent is kept as the result's details.
    assert!(body["result"]["details"].is_object(), "{body}");

    // A path outside the allowed directory is the tool's own error.
    let outside = run.call(
        "mcp:filesystem:read_text_file",
        json!({"path": "/etc/hostname"}),
    );
    let (kind, message) = failure(&outside);
    assert_eq!(kind, FailureKind::ToolFailed);
    assert!(message.contains("Access denied"), "{message}");

    // write_file is annotated destructive: it needs approval, and there is none (fail closed).
    let denied = run.call(
        "mcp:filesystem:write_file",
        json!({"path": dir.path().join("files/a.txt").display().to_string(), "content": "x"}),
    );
    assert_eq!(failure(&denied).0, FailureKind::ApprovalDenied);
}

#[test]
fn one_code_cell_orchestrates_tools_of_several_servers() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("files")).unwrap();
    let run = Run::with(
        reference_servers(dir.path()),
        Mode::Code,
        &["mcp:filesystem:write_file"],
    );
    let path = dir.path().join("files/note.txt").display().to_string();
    let code = format!(
        r#"
        const sum = await openclaw.tools.call("mcp:everything:get-sum", {{a: 2, b: 3}});
        await openclaw.tools.call("mcp:filesystem:write_file", {{path: {path:?}, content: sum.result.text}});
        const back = await openclaw.tools.call("mcp:filesystem:read_text_file", {{path: {path:?}}});
        return {{sum: sum.result.text, back: back.result.text}};
        "#
    );
    let result = run.cell(&code);
    assert_eq!(result["ok"], true, "{result}");
    assert_eq!(result["value"]["sum"], "The sum of 2 and 3 is 5.");
    assert_eq!(result["value"]["back"], "The sum of 2 and 3 is 5.");
    assert_eq!(
        std::fs::read_to_string(dir.path().join("files/note.txt")).unwrap(),
        "The sum of 2 and 3 is 5."
    );
}

#[test]
fn every_page_of_tools_list_is_followed_and_list_changed_adds_tools_live() {
    let run = Run::new(
        json!({"paged": test_server(&["--pages", "3", "--fillers", "20"])}),
        Mode::Tools,
    );
    // 10 own tools + 20 fillers over 3 pages.
    assert_eq!(run.session.telemetry()["catalog_size"], 30);
    assert_eq!(
        run.search("filler tool number 19 widgets")[0],
        "mcp:paged:filler_019"
    );
    // An odd upstream name is escaped, and the raw name is what the server receives.
    assert!(
        run.search("destructive odd name")
            .contains(&"mcp:paged:_x_erase_20everything".to_string())
    );

    assert!(run.search("zebra counting").is_empty());
    let grown = run.call("mcp:paged:grow", json!({}));
    assert_eq!(text(&grown), "grown");
    run.eventually("the new tool to be searchable", |run| {
        run.search("zebra counting").first().map(String::as_str)
            == Some("mcp:paged:late_arrival_tool")
    });
    assert_eq!(
        text(&run.call("mcp:paged:late_arrival_tool", json!({}))),
        "late but here"
    );
    assert_eq!(run.session.telemetry()["catalog_size"], 31);
}

#[test]
fn a_server_that_exits_at_start_answers_with_the_outage_and_others_keep_working() {
    let run = Run::new(
        json!({
            "broken": {"command": "node", "args": [fixtures().join("servers/testserver.mjs").display().to_string(), "--exit-at-start", "3"], "restart": false},
            "everything": everything(),
        }),
        Mode::Tools,
    );
    let UpstreamStatus::Down(reason) = run.status("broken") else {
        panic!("{:?}", run.status("broken"))
    };
    assert!(reason.contains("exit status: 3"), "{reason}");
    assert!(
        reason.contains("configured to fail at start"),
        "the stderr tail: {reason}"
    );
    for selector in ["mcp:broken:anything", "broken__anything"] {
        let reply = run.handle("tool_call", json!({"id": selector, "args": {}}));
        let (kind, message) = failure(&reply);
        assert_eq!(kind, FailureKind::UpstreamUnavailable);
        assert!(
            message.contains("The MCP server \"broken\" is unavailable"),
            "{message}"
        );
        assert!(message.contains("Do not retry it"), "{message}");
    }
    assert_eq!(
        text(&run.call("mcp:everything:get-sum", json!({"a": 2, "b": 3}))),
        "The sum of 2 and 3 is 5."
    );
}

#[test]
fn a_server_killed_mid_call_errors_naming_it_and_works_again_after_the_restart() {
    let run = Run::new(
        json!({"fragile": test_server(&["--name", "fragile"])}),
        Mode::Tools,
    );
    let first_pid = text(&run.call("mcp:fragile:pid", json!({})));
    let crashed = run.call("mcp:fragile:crash", json!({}));
    let (kind, message) = failure(&crashed);
    assert_eq!(kind, FailureKind::UpstreamUnavailable);
    assert!(message.contains("\"fragile\""), "{message}");
    // The next call waits for the restart and succeeds on a new process.
    let again = run.call("mcp:fragile:pid", json!({}));
    let second_pid = text(&again);
    assert_ne!(first_pid, second_pid);
    assert_eq!(run.status("fragile"), UpstreamStatus::Ready);
}

/// An upstream server SIGKILLed from outside while a call of it is in flight: that call ends
/// with the outage naming the server (not at its timeout), a call to another server in flight at
/// the same time answers, and the killed server is restarted for the next call.
#[test]
fn a_server_sigkilled_mid_call_fails_that_call_only_and_restarts() {
    let run = Run::new(
        json!({"fragile": test_server(&["--name", "fragile"]),
               "steady": test_server(&["--name", "steady"])}),
        Mode::Tools,
    );
    let first_pid: u32 = text(&run.call("mcp:fragile:pid", json!({})))
        .parse()
        .unwrap();
    let started = Instant::now();
    let (killed, steady) = run.rt.block_on(async {
        let slow_args = json!({"id": "mcp:fragile:sleep", "args": {"ms": 30000}});
        let steady_args = json!({"id": "mcp:steady:sleep", "args": {"ms": 500}});
        let slept = run.session.call(&slow_args);
        let other = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            let steady = run.session.call(&steady_args);
            let kill = async {
                tokio::time::sleep(Duration::from_millis(100)).await;
                // SAFETY: the test server this run started.
                unsafe { libc::kill(first_pid as i32, libc::SIGKILL) };
            };
            tokio::join!(steady, kill).0
        };
        tokio::join!(slept, other)
    });
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let (kind, message) = failure(&killed);
    assert_eq!(kind, FailureKind::UpstreamUnavailable, "{message}");
    assert!(message.contains("\"fragile\""), "{message}");
    assert!(matches!(steady, Reply::Done(_)), "{steady:?}");
    assert_eq!(run.status("steady"), UpstreamStatus::Ready);
    let second_pid: u32 = text(&run.call("mcp:fragile:pid", json!({})))
        .parse()
        .unwrap();
    assert_ne!(first_pid, second_pid);
    assert_eq!(run.status("fragile"), UpstreamStatus::Ready);
}

#[test]
fn garbage_on_stdout_is_skipped() {
    let run = Run::new(
        json!({"noisy": test_server(&["--garbage", "--pages", "2", "--fillers", "5"])}),
        Mode::Tools,
    );
    assert_eq!(run.status("noisy"), UpstreamStatus::Ready);
    assert_eq!(run.session.telemetry()["catalog_size"], 15);
    assert_eq!(
        text(&run.call("mcp:noisy:echo", json!({"text": "still here"}))),
        "still here"
    );
}

#[test]
fn startup_and_call_timeouts_fire_and_no_other_server_waits() {
    let started = Instant::now();
    let run = Run::new(
        json!({
            "silent": {"command": "node", "args": [fixtures().join("servers/testserver.mjs").display().to_string(), "--hang"],
                       "startupTimeoutMs": 1500, "restart": false},
            "slow": {"command": "node", "args": [fixtures().join("servers/testserver.mjs").display().to_string()],
                     "callTimeoutMs": 1000},
        }),
        Mode::Tools,
    );
    // Both servers started at once: the wait was the silent one's startup timeout, not a sum.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
    let UpstreamStatus::Down(reason) = run.status("silent") else {
        panic!("{:?}", run.status("silent"))
    };
    assert!(reason.contains("did not start within 1500 ms"), "{reason}");
    // A call that never returns is cancelled at its timeout…
    let slept = run.call("mcp:slow:sleep", json!({"ms": 60000}));
    let (kind, message) = failure(&slept);
    assert_eq!(kind, FailureKind::Timeout);
    assert!(
        message.contains("did not answer within 1000 ms"),
        "{message}"
    );
    // …with notifications/cancelled, which the server saw.
    run.eventually("the cancellation to arrive", |run| {
        text(&run.call("mcp:slow:cancellations", json!({}))) == "1"
    });
    // Meanwhile calls of the same server are not held up by a hung one.
    let rt = &run.rt;
    let (hung, quick) = rt.block_on(async {
        let hung_args = json!({"id": "mcp:slow:sleep", "args": {"ms": 60000}});
        let hung = run.session.call(&hung_args);
        let quick = async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            let at = Instant::now();
            let reply = run
                .session
                .call(&json!({"id": "mcp:slow:echo", "args": {"text": "fast"}}))
                .await;
            (reply, at.elapsed())
        };
        tokio::join!(hung, quick)
    });
    assert_eq!(failure(&hung).0, FailureKind::Timeout);
    assert_eq!(text(&quick.0), "fast");
    assert!(quick.1 < Duration::from_millis(900), "{:?}", quick.1);
}

#[test]
fn progress_of_an_upstream_call_reaches_the_caller() {
    let run = Run::new(json!({"test": test_server(&[])}), Mode::Tools);
    assert_eq!(
        text(&run.call("mcp:test:progress", json!({"steps": 3}))),
        "done after 3 steps"
    );
}

/// Children of `pid` (direct and transitive) that are still alive. A child belongs to the
/// thread that spawned it, so every thread's `children` list is read.
fn descendants(pid: u32) -> Vec<u32> {
    let mut out = Vec::new();
    let mut frontier = vec![pid];
    while let Some(parent) = frontier.pop() {
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{parent}/task")) else {
            continue;
        };
        for task in tasks.flatten() {
            let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
                continue;
            };
            for child in text
                .split_whitespace()
                .filter_map(|c| c.parse::<u32>().ok())
            {
                out.push(child);
                frontier.push(child);
            }
        }
    }
    out
}

fn config_file(dir: &std::path::Path, servers: Value) -> PathBuf {
    let path = dir.join("toolsearch.json5");
    std::fs::write(&path, json!({"mcp": {"servers": servers}}).to_string()).unwrap();
    path
}

struct Serve {
    child: Child,
    url: Option<String>,
}

impl Serve {
    fn http(config: &std::path::Path, mode: &str, extra: &[&str]) -> Serve {
        let mut child = Command::new(BIN)
            .args(["serve", "--mode", mode, "--http", "127.0.0.1:0", "--config"])
            .arg(config)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        assert!(line.starts_with("http://127.0.0.1:"), "{line:?}");
        Serve {
            child,
            url: Some(line.trim().to_string()),
        }
    }

    fn stop(mut self) -> std::process::ExitStatus {
        unsafe {
            libc::kill(self.child.id() as i32, libc::SIGTERM);
        }
        let status = self.child.wait().unwrap();
        self.url = None;
        status
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The Python SDK client (`tests/fixtures/mcp/client.py`); its interpreter comes from
/// `TOOLSEARCH_MCP_PYTHON` or `tests/fixtures/mcp/.venv` (where .ci/run installs `mcp`).
fn python() -> PathBuf {
    let path = std::env::var_os("TOOLSEARCH_MCP_PYTHON")
        .map(PathBuf::from)
        .unwrap_or_else(|| fixtures().join(".venv/bin/python"));
    assert!(
        path.exists(),
        "the Python MCP client is not installed: create {} with `python3 -m venv` and `pip install mcp==2.3.0` (.ci/run does)",
        path.display()
    );
    path
}

fn python_client(args: &[&str]) -> Value {
    let mut client = Command::new(python());
    client.arg(fixtures().join("client.py")).args(args);
    last_json_line(client)
}

/// Runs `command`, which must succeed, and parses the JSON its last line of stdout prints.
fn last_json_line(mut command: Command) -> Value {
    let out = command.output().unwrap();
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    serde_json::from_str(stdout.lines().last().unwrap_or("")).unwrap()
}

/// A server's command line as one JSON array (how the SDK scripts take `--upstream`).
fn argv(server: &Value) -> String {
    let mut argv = vec![server["command"].clone()];
    argv.extend(server["args"].as_array().unwrap().iter().cloned());
    Value::Array(argv).to_string()
}

/// `--policy FILE` flags for `serve`, the policy written in `dir`.
fn policy_flags(dir: &std::path::Path, policy: &Value) -> Vec<String> {
    let path = dir.join("policy.json");
    std::fs::write(&path, policy.to_string()).unwrap();
    vec!["--policy".into(), path.display().to_string()]
}

/// The Python SDK script `script` (in `tests/fixtures/mcp`) run as `client` against
/// `serve --mode MODE --config CONFIG FLAGS`: over HTTP (`--http URL`) when `http`, else over
/// stdio (`--serve ARGV`); the JSON object its last line prints.
fn through_serve(
    mut client: Command,
    config: &std::path::Path,
    mode: &str,
    flags: &[String],
    http: bool,
) -> Value {
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let _serve = if http {
        let serve = Serve::http(config, mode, &flags);
        client.args(["--http", serve.url.as_deref().unwrap()]);
        Some(serve)
    } else {
        let mut argv = vec![json!(BIN), json!("serve"), json!("--mode"), json!(mode)];
        argv.extend([json!("--config"), json!(config)]);
        argv.extend(flags.iter().map(|f| json!(f)));
        client.args(["--serve", &Value::Array(argv).to_string()]);
        None
    };
    last_json_line(client)
}

/// A Python SDK script of `tests/fixtures/mcp`, ready for its arguments.
fn sdk_script(script: &str) -> Command {
    let mut client = Command::new(python());
    client.arg(fixtures().join(script));
    client
}

#[test]
fn the_python_sdk_uses_serve_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), json!({"everything": everything()}));
    let config = config.to_str().unwrap();
    for mode in ["tools", "code"] {
        let out = python_client(&["--stdio", BIN, "serve", "--mode", mode, "--config", config]);
        let expected: Vec<&str> = match mode {
            "tools" => vec!["tool_search", "tool_describe", "tool_call"],
            _ => vec!["tool_search_code"],
        };
        assert_eq!(out["tools"], json!(expected), "{mode}: {out}");
        assert_eq!(
            out["search_ids"][0], "mcp:everything:get-sum",
            "{mode}: {out}"
        );
        assert_eq!(
            out["call_text"], "The sum of 2 and 3 is 5.",
            "{mode}: {out}"
        );
        assert_eq!(out["is_error"], false);
    }
    let serve = Serve::http(dir.path().join("toolsearch.json5").as_path(), "tools", &[]);
    let out = python_client(&["--http", serve.url.as_deref().unwrap()]);
    assert_eq!(out["call_text"], "The sum of 2 and 3 is 5.", "{out}");
    let pid = serve.child.id();
    assert!(
        !descendants(pid).is_empty(),
        "the upstream runs under serve"
    );
    let status = serve.stop();
    assert!(status.success(), "{status:?}");
    assert!(descendants(pid).is_empty());
}

#[test]
fn the_mcp_inspector_cli_uses_serve_over_stdio_and_http() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), json!({"everything": everything()}));
    let inspector = fixtures().join("node_modules/.bin/mcp-inspector");
    assert!(
        inspector.exists(),
        "the MCP Inspector is not installed: run `npm ci` in {} (.ci/run does)",
        fixtures().display()
    );
    let run = |target: &[&str], method: &[&str]| -> Value {
        let out = Command::new(&inspector)
            .arg("--cli")
            .args(method)
            .args(target)
            .current_dir(fixtures())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let stdio: Vec<&str> = vec![
        "--",
        BIN,
        "serve",
        "--mode",
        "tools",
        "--config",
        config.to_str().unwrap(),
    ];
    let listed = run(&stdio, &["--method", "tools/list"]);
    let names: Vec<&str> = listed["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["tool_search", "tool_describe", "tool_call"]);
    let found = run(
        &stdio,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "tool_search",
            "--tool-arg",
            "query=sum of two numbers",
        ],
    );
    assert_eq!(
        found["structuredContent"]["result"][0]["id"],
        "mcp:everything:get-sum"
    );
    let called = run(
        &stdio,
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "tool_call",
            "--tool-arg",
            "id=mcp:everything:get-sum",
            "--tool-arg",
            r#"args={"a":2,"b":3}"#,
        ],
    );
    // The upstream's result as it sent it, the tool toolsearch resolved beside it.
    assert_eq!(called["content"][0]["text"], "The sum of 2 and 3 is 5.");
    assert_eq!(
        called["_meta"]["toolsearch/tool"]["id"],
        "mcp:everything:get-sum"
    );

    let serve = Serve::http(&config, "tools", &[]);
    let url = serve.url.clone().unwrap();
    let called = run(
        &["--transport", "http", "--server-url", url.as_str()],
        &[
            "--method",
            "tools/call",
            "--tool-name",
            "tool_call",
            "--tool-arg",
            "id=mcp:everything:get-sum",
            "--tool-arg",
            r#"args={"a":2,"b":3}"#,
        ],
    );
    // The upstream's result as it sent it, the tool toolsearch resolved beside it.
    assert_eq!(called["content"][0]["text"], "The sum of 2 and 3 is 5.");
    assert_eq!(
        called["_meta"]["toolsearch/tool"]["id"],
        "mcp:everything:get-sum"
    );
    serve.stop();
}

/// One raw HTTP/1.1 request; returns the status code.
fn http_status(url: &str, method: &str, headers: &[(&str, &str)], body: &str) -> u16 {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    let mut request = format!(
        "{method} /{path} HTTP/1.1\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        request.push_str(&format!("Host: {authority}\r\n"));
    }
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    std::io::Write::write_all(&mut stream, request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = std::io::Read::read_to_string(&mut stream, &mut response);
    response
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0)
}

/// One raw HTTP/1.1 request; returns the status, the content type and the (de-chunked) body.
fn http_exchange(url: &str, headers: &[(&str, &str)], body: &str) -> (u16, String, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (authority, path) = rest.split_once('/').unwrap();
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    let mut request = format!(
        "POST /{path} HTTP/1.1\r\nHost: {authority}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    std::io::Write::write_all(&mut stream, request.as_bytes()).unwrap();
    let mut response = String::new();
    let _ = std::io::Read::read_to_string(&mut stream, &mut response);
    let (head, rest) = response.split_once("\r\n\r\n").unwrap_or((&response, ""));
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|code| code.parse().ok())
        .unwrap_or(0);
    let header = |name: &str| {
        head.lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.trim()
                    .eq_ignore_ascii_case(name)
                    .then(|| v.trim().to_string())
            })
            .unwrap_or_default()
    };
    let body = if header("transfer-encoding").eq_ignore_ascii_case("chunked") {
        crate::support::dechunk(rest)
    } else {
        rest.to_string()
    };
    (status, header("content-type"), body)
}

/// Sends one request of the sessionless protocol (MCP 2026-07-28: version and client info in
/// `_meta`, method and name in headers, no session) and returns its answer, which must be one
/// JSON body with status 200.
fn sessionless(url: &str, method: &str, name: Option<&str>, params: Value) -> Value {
    let mut params = params;
    params["_meta"] = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
        "io.modelcontextprotocol/clientCapabilities": {},
    });
    let mut headers = vec![
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
        ("MCP-Protocol-Version", "2026-07-28"),
        ("Mcp-Method", method),
    ];
    if let Some(name) = name {
        headers.push(("Mcp-Name", name));
    }
    let body = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
    let (status, content_type, answer) = http_exchange(url, &headers, &body.to_string());
    assert_eq!(status, 200, "{answer}");
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    serde_json::from_str(&answer).unwrap()
}

#[test]
fn http_serve_answers_sessionless_calls_with_json_and_bounds_only_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), json!({}));
    let serve = Serve::http(&config, "tools", &["--max-sessions", "1"]);
    let url = serve.url.clone().unwrap();
    let legacy = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    // The one session allowed, then a second one refused.
    assert_eq!(http_exchange(&url, &legacy, init).0, 200);
    let (status, _, body) = http_exchange(&url, &legacy, init);
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("too many MCP sessions"), "{body}");

    // Sessionless requests open no session: they are served whatever the session count, each
    // answered by one JSON body.
    let answer = sessionless(&url, "server/discover", None, json!({}));
    assert!(
        answer["result"]["supportedVersions"]
            .as_array()
            .unwrap()
            .contains(&json!("2026-07-28")),
        "{answer}"
    );
    for _ in 0..3 {
        let answer = sessionless(
            &url,
            "tools/call",
            Some("tool_search"),
            json!({"name": "tool_search", "arguments": {"query": "convert units", "limit": 2}}),
        );
        assert_eq!(answer["id"], 7, "{answer}");
        assert_ne!(answer["result"]["isError"], true, "{answer}");
        let hits = &answer["result"]["structuredContent"]["result"];
        assert_eq!(hits.as_array().map(Vec::len), Some(2), "{answer}");
        assert_eq!(hits[0]["id"], "plugin:units:convert_units", "{answer}");
    }
    // A session is still refused.
    assert_eq!(http_exchange(&url, &legacy, init).0, 503);
    serve.stop();
}

#[test]
fn serve_puts_the_search_note_beside_the_hits() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), json!({}));
    let serve = Serve::http(&config, "tools", &[]);
    let url = serve.url.clone().unwrap();
    let search = |arguments: Value| {
        let answer = sessionless(
            &url,
            "tools/call",
            Some("tool_search"),
            json!({"name": "tool_search", "arguments": arguments}),
        );
        assert_ne!(answer["result"]["isError"], true, "{answer}");
        answer["result"].clone()
    };
    // Cut by the limit: the hits as R-5.1 shapes them, then the note in a block of its own.
    let cut = search(json!({"query": "stock quote", "limit": 2}));
    let content = cut["content"].as_array().unwrap();
    assert_eq!(content.len(), 2, "{cut}");
    let hits: Value = serde_json::from_str(content[0]["text"].as_str().unwrap()).unwrap();
    assert_eq!(hits.as_array().map(Vec::len), Some(2), "{cut}");
    let matched = cut["structuredContent"]["matched"].as_u64().unwrap();
    assert!(matched > 2, "{cut}");
    assert_eq!(cut["structuredContent"]["truncated"], true);
    assert_eq!(cut["structuredContent"]["result"], hits);
    assert_eq!(
        content[1]["text"],
        format!(
            "2 of {matched} matching tools shown; refine the query or raise limit (at most 20)."
        )
    );
    // Not cut.
    let whole = search(json!({"query": "stock quote", "limit": 20}));
    assert_eq!(whole["structuredContent"]["truncated"], false);
    assert_eq!(whole["structuredContent"]["matched"], matched);
    assert_eq!(
        whole["content"][1]["text"],
        format!("All {matched} matching tools shown.")
    );
    serve.stop();
}

#[test]
fn http_serve_validates_hosts_sessions_and_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), json!({"test": test_server(&[])}));
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    let mcp_headers = [
        ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream"),
    ];
    let serve = Serve::http(&config, "tools", &[]);
    let url = serve.url.clone().unwrap();
    let health = url.replace("/mcp", "/health");
    assert_eq!(http_status(&health, "GET", &[], ""), 200);
    let mut bad_host = mcp_headers.to_vec();
    bad_host.push(("Host", "attacker.example"));
    assert_eq!(http_status(&url, "POST", &bad_host, ping), 403);
    let mut unknown = mcp_headers.to_vec();
    unknown.push(("Mcp-Session-Id", "no-such-session"));
    assert_eq!(http_status(&url, "POST", &unknown, ping), 404);
    serve.stop();

    // With a token, requests without it are refused.
    let serve = Serve::http(&config, "tools", &["--auth-token", "s3cret-s3cret-s3cret"]);
    let url = serve.url.clone().unwrap();
    let init = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#;
    assert_eq!(http_status(&url, "POST", &mcp_headers, init), 401);
    let mut authorized = mcp_headers.to_vec();
    authorized.push(("Authorization", "Bearer s3cret-s3cret-s3cret"));
    assert_eq!(http_status(&url, "POST", &authorized, init), 200);
    serve.stop();

    // A non-loopback bind without a token is refused, and says why.
    let out = Command::new(BIN)
        .args(["serve", "--http", "0.0.0.0:0", "--config"])
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("not a loopback address and no --auth-token"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn serve_exiting_leaves_no_child_process() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(
        dir.path(),
        json!({"one": test_server(&["--name", "one"]), "two": everything()}),
    );
    // stdio: the client closes stdin.
    let mut child = Command::new(BIN)
        .args(["serve", "--mode", "tools", "--config"])
        .arg(&config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id();
    let deadline = Instant::now() + Duration::from_secs(20);
    while descendants(pid).len() < 2 {
        assert!(Instant::now() < deadline, "the upstreams never started");
        std::thread::sleep(Duration::from_millis(50));
    }
    let upstream_pids = descendants(pid);
    drop(child.stdin.take());
    let status = child.wait().unwrap();
    assert!(status.success(), "{status:?}");
    std::thread::sleep(Duration::from_millis(200));
    for upstream in upstream_pids {
        assert!(
            !std::path::Path::new(&format!("/proc/{upstream}")).exists()
                || std::fs::read_to_string(format!("/proc/{upstream}/stat"))
                    .is_ok_and(|s| s.contains(") Z ")),
            "upstream {upstream} outlived serve"
        );
    }
}

#[test]
fn an_upstream_message_past_a_bound_is_rejected_naming_it_and_the_server() {
    let run = Run::new(
        json!({
            "big": test_server(&["--oversize", "--name", "big"]),
            "other": test_server(&["--name", "other"]),
        }),
        Mode::Tools,
    );
    // Within the bounds, both tools answer.
    assert_eq!(
        text(&run.call("mcp:big:huge", json!({"bytes": 5}))),
        "xxxxx"
    );
    // 17 MB in one JSON-RPC message: over MAX_MCP_MESSAGE_BYTES (16 MiB).
    let (_, message) = failure(&run.call("mcp:big:huge", json!({"bytes": 17_000_000})));
    assert!(
        message.contains("\"big\"")
            && message.contains("MAX_MCP_MESSAGE_BYTES")
            && message.contains("16777216 bytes"),
        "{message}"
    );
    // The other server never noticed.
    assert_eq!(
        text(&run.call("mcp:other:echo", json!({"text": "still here"}))),
        "still here"
    );
    // The offending server is restarted; then a message nested too deep is refused the same way.
    run.eventually("the server to come back", |run| {
        matches!(run.status("big"), UpstreamStatus::Ready)
    });
    let (_, message) = failure(&run.call("mcp:big:deep", json!({"levels": 500})));
    assert!(
        message.contains("\"big\"") && message.contains("MAX_MCP_MESSAGE_DEPTH"),
        "{message}"
    );
    assert_eq!(
        text(&run.call("mcp:other:echo", json!({"text": "and here"}))),
        "and here"
    );
}

/// Issue 25, class 3. A hostile server lists lookalike tools (`a.b` / `A.B`, `a b`, `ümlaut` /
/// `ÜMLAUT`). A denied exact id is an error everywhere — call, lenient forms, describe, a cell's
/// `openclaw.tools.call` — never a case-insensitive fallback to its lookalike; and a deny written
/// with the upstream's raw name (`mcp:evil:a b`, a bare non-ASCII name) denies the tool it names.
#[test]
fn hostile_policy_exact_denied_id_never_falls_back() {
    let policy = Policy::from_json(&json!({"session": {"deny": [
        "mcp:evil:a.b", "mcp:evil:a b", "ümlaut",
    ]}}))
    .unwrap();
    let run = Run::build(
        json!({"evil": test_server(&["--lookalikes", "--name", "evil"])}),
        Mode::Code,
        &[],
        policy,
    );
    // The allowed lookalikes run when named exactly.
    assert_eq!(text(&run.call("mcp:evil:A.B", json!({}))), "ran A.B");
    assert_eq!(
        text(&run.call("mcp:evil:_x__c3_9cMLAUT", json!({}))),
        "ran ÜMLAUT"
    );
    // The denied ones are unknown, whatever form names them; nothing else runs instead.
    for selector in [
        "mcp:evil:a.b",
        "evil.a.b",
        "evil:a.b",
        "evil__a.b",
        "mcp:evil:a b",
        "mcp:evil:_x_a_20b",
        "mcp:evil:ümlaut",
        "mcp:evil:_x__c3_bclaut",
    ] {
        let reply = run.call(selector, json!({}));
        let (kind, message) = failure(&reply);
        assert_eq!(kind, FailureKind::Unknown, "{selector}: {message}");
        assert!(!reply.text().contains("ran "), "{selector}: {reply:?}");
        let described = run.session.describe(&json!({"id": selector}));
        assert!(
            matches!(described, Reply::Failed { .. }),
            "{selector}: {described:?}"
        );
    }
    let cell = run.cell(
        r#"
        const out = [];
        for (const id of ["mcp:evil:a.b", "mcp:evil:a b", "mcp:evil:ümlaut", "evil.a.b"]) {
            try { const r = await openclaw.tools.call(id, {}); out.push(r.result.text); }
            catch (e) { out.push(e.message); }
            try { const d = await openclaw.tools.describe(id); out.push("described " + d.id); }
            catch (e) { out.push(e.message); }
        }
        return out;
        "#,
    );
    for message in cell["value"].as_array().unwrap() {
        let message = message.as_str().unwrap();
        assert!(message.starts_with("Unknown tool"), "{cell}");
    }
    // Invisible: search never lists them.
    let hits = run.search("lookalike tool called");
    assert!(hits.contains(&"mcp:evil:A.B".to_string()), "{hits:?}");
    for denied in [
        "mcp:evil:a.b",
        "mcp:evil:_x_a_20b",
        "mcp:evil:_x__c3_bclaut",
    ] {
        assert!(!hits.contains(&denied.to_string()), "{hits:?}");
    }
}

fn hostile_server(args: &[&str]) -> Value {
    let mut all = vec![fixtures().join("servers/hostile.mjs").display().to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    json!({"command": "node", "args": all, "startupTimeoutMs": 120000})
}

fn issues(run: &Run, name: &str) -> Vec<String> {
    run.upstreams
        .servers()
        .iter()
        .find(|s| s.name() == name)
        .unwrap()
        .issues()
}

/// Issue 25, class 5. A server that pages forever (1,000 tools a page): the listing stops at the
/// per-server tool cap instead of reading (and holding) every page up to the page bound, says
/// so once, and the server is ready with the first 10,000 tools.
#[test]
fn hostile_upstream_listing_stops_paging_at_the_tool_cap() {
    let run = Run::new(
        json!({"endless": hostile_server(&["--listing", "endless", "--tools", "1000"])}),
        Mode::Tools,
    );
    assert_eq!(run.status("endless"), UpstreamStatus::Ready);
    assert_eq!(run.session.telemetry()["catalog_size"], 10_000);
    let pages: usize = text(&run.call("mcp:endless:pages", json!({})))
        .parse()
        .unwrap();
    assert!(pages <= 11, "{pages} pages were asked for");
    let issues = issues(&run, "endless");
    let cap: Vec<&String> = issues
        .iter()
        .filter(|i| i.contains("MAX_TOOLS_PER_SERVER"))
        .collect();
    assert_eq!(cap.len(), 1, "{issues:?}");
    assert!(cap[0].contains("no further pages are read"), "{cap:?}");
}

/// Peak RSS (KiB, `VmHWM`) of `toolsearch serve` once it serves the tools of one configured
/// server (the server's own memory is its process's, not counted).
fn serve_peak_rss_kib(dir: &std::path::Path, server: Value) -> u64 {
    let config = config_file(dir, json!({"h": server}));
    let mut child = Command::new(BIN)
        .args(["serve", "--mode", "tools", "--config"])
        .arg(&config)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "serve ended early"
        );
        if line.contains("serving") {
            break;
        }
    }
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id())).unwrap();
    let _ = child.kill();
    let _ = child.wait();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

/// Issue 25, class 5. One 14 MB `tools/list` message — 140,000 small tools (past the cap), or
/// one tool with a 14 MB schema of empty arrays — no longer peaks at 25–33× its size: the page
/// is read entry by entry from its bytes (serve's peak RSS measured before: 357 MB and 466 MB;
/// after: 78 MB and 29 MB, of which ~28 MB is serve's own floor).
#[test]
fn hostile_upstream_listing_memory_stays_a_small_multiple_of_the_message() {
    let dir = tempfile::tempdir().unwrap();
    // Bounds in MiB. "schemas" keeps every tool (64 schemas of 20,000 properties): its JSON
    // trees are what is held, once (snapshots share schemas); 9d86c18 held them 4-5 times (about
    // 700 MiB, `benches/listing_memory.sh`).
    for (listing, bound) in [("many", 200), ("huge", 200), ("schemas", 300)] {
        let server = hostile_server(&["--listing", listing, "--bytes", "14000000"]);
        let peak = serve_peak_rss_kib(dir.path(), server);
        assert!(
            peak < bound * 1024,
            "{listing}: a 14 MB listing peaked at {} MiB (bound {bound} MiB)",
            peak / 1024
        );
    }
}

/// Issue 25, class 6. Tools whose `inputSchema` is an array, a string, `true`, or nested past
/// the message depth bound are repaired (`{}`) with a named issue each; the server's other
/// tools stay and answer.
#[test]
fn hostile_upstream_malformed_tool_is_repaired_and_the_others_stay() {
    let run = Run::new(
        json!({"bad": hostile_server(&["--malformed"])}),
        Mode::Tools,
    );
    assert_eq!(run.status("bad"), UpstreamStatus::Ready);
    for tool in ["well_formed_1", "well_formed_2", "well_formed_3"] {
        assert_eq!(
            text(&run.call(&format!("mcp:bad:{tool}"), json!({}))),
            format!("ran {tool}")
        );
    }
    assert_eq!(
        text(&run.call("mcp:bad:echo", json!({"text": "still here"}))),
        "still here"
    );
    let issues = issues(&run, "bad");
    for (tool, why) in [
        ("schema_array", "inputSchema is an array, not an object"),
        ("schema_string", "inputSchema is a string, not an object"),
        ("schema_true", "inputSchema is a boolean, not an object"),
        ("schema_deep", "MAX_MCP_MESSAGE_DEPTH"),
    ] {
        assert!(
            issues
                .iter()
                .any(|i| i.contains(&format!("\"{tool}\"")) && i.contains(why)),
            "{tool}: {issues:?}"
        );
        // Repaired, not dropped: the tool is listed with an empty schema.
        let described = run
            .session
            .describe(&json!({"id": format!("mcp:bad:{tool}")}));
        assert_eq!(described.body()["input_schema"], json!({}), "{described:?}");
    }
}

/// Issue 25, class 7. An answer that is not UTF-8 fails that call at once, naming the server and
/// the reason — not a wait for `callTimeoutMs` — and the connection goes on.
#[test]
fn hostile_upstream_invalid_utf8_fails_the_call_at_once_naming_the_server() {
    let mut server = hostile_server(&["--name", "utf"]);
    server["callTimeoutMs"] = json!(60_000);
    let run = Run::new(json!({"utf": server}), Mode::Tools);
    let before = text(&run.call("mcp:utf:pids", json!({})));
    let (kind, message) = failure(&run.call("mcp:utf:bad_utf8", json!({})));
    assert_ne!(kind, FailureKind::Timeout, "{message}");
    assert!(
        message.contains("\"utf\"") && message.contains("not valid UTF-8"),
        "{message}"
    );
    // The same process still answers on the same connection.
    assert_eq!(text(&run.call("mcp:utf:pids", json!({}))), before);
    assert_eq!(
        text(&run.call("mcp:utf:echo", json!({"text": "after"}))),
        "after"
    );
}

/// Live processes whose command line carries `--name <marker>` (zombies have none).
fn marked(marker: &str) -> Vec<u32> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(pid) = entry
            .file_name()
            .to_str()
            .and_then(|p| p.parse::<u32>().ok())
        else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if args
            .windows(2)
            .any(|w| w[0] == b"--name" && w[1] == marker.as_bytes())
            && !args.iter().any(|a| *a == b"__toolsearch-mcp-supervisor")
        {
            out.push(pid);
        }
    }
    out.sort_unstable();
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        !stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z'))
    })
}

/// Waits (bounded) until `check` holds.
fn wait_until(what: &str, seconds: u64, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(seconds);
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn serve_stdio(config: &std::path::Path) -> Child {
    Command::new(BIN)
        .args(["serve", "--mode", "tools", "--config"])
        .arg(config)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

/// Issue 25, class 11. An upstream's descendants — a child (the `npx` → `node` shape) and a
/// grandchild that called `setsid` — are gone soon after `serve` is killed with SIGKILL, and a
/// crash-looping server leaks no process per restart.
#[test]
fn hostile_upstream_descendants_never_outlive_serve_or_a_crashing_server() {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("reap-{}", std::process::id());
    let config = config_file(
        dir.path(),
        json!({"h": hostile_server(&["--descendants", "--name", &marker])}),
    );
    let mut serve = serve_stdio(&config);
    wait_until(
        "the server, its child and its setsid grandchild",
        30,
        || marked(&marker).len() == 3,
    );
    let pids = marked(&marker);
    let sessions: std::collections::BTreeSet<String> = pids
        .iter()
        .map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
            stat.rsplit_once(')')
                .unwrap()
                .1
                .split_whitespace()
                .nth(3)
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        sessions.len(),
        2,
        "the grandchild left the session: {sessions:?}"
    );
    serve.kill().unwrap(); // SIGKILL: no handler of serve runs
    serve.wait().unwrap();
    wait_until(
        "every descendant to be gone after kill -9 of serve",
        10,
        || pids.iter().all(|pid| !alive(*pid)),
    );

    // A server that exits 300 ms after each start, leaving its descendants behind.
    let marker = format!("crash-{}", std::process::id());
    let config = config_file(
        dir.path(),
        json!({"h": hostile_server(&["--descendants", "--exit-after", "300", "--name", &marker])}),
    );
    let mut serve = serve_stdio(&config);
    let mut generations = std::collections::BTreeSet::new();
    let mut most = 0;
    wait_until("four generations of the crashing server", 60, || {
        let live = marked(&marker);
        most = most.max(live.len());
        // The server is the oldest (lowest pid, usually) of a generation; count distinct sets.
        if let Some(first) = live.first() {
            generations.insert(*first);
        }
        generations.len() >= 4
    });
    assert!(
        most <= 6,
        "{most} processes of a crash-looping server were alive at once"
    );
    unsafe {
        libc::kill(serve.id() as i32, libc::SIGTERM);
    }
    serve.wait().unwrap();
    wait_until("every descendant to be gone after serve exited", 10, || {
        marked(&marker).is_empty()
    });
}
