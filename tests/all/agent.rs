//! The agent loop end to end (R-12.1, R-11.2, R-9.5): a fake plugin of 55 tools, the real
//! mock provider on a loopback port, every mode; provider faults; the CLI's two processes.

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::lab::{Fault, MockProvider, MockScenario, SmallModel};
use toolsearch::{
    Agent, AgentOptions, AgentRun, CallStatus, CallStyle, CatalogMode, CatalogSnapshot, Config,
    Descriptor, Executor, FnTool, Mode, Policy, ProviderConfig, Session, SessionLog, Source,
    StopReason, ToolOutput,
};

use crate::support::{BIN, rt};

const TARGET: &str = "lookup_release_order";
const TARGET_ID: &str = "plugin:depot:lookup_release_order";
const FIELD: &str = "release_order_ref";
const DECOY: &str = "release_order_lookup_v1";
const DIRECT_ONLY: &str = "ask_operator";
const PROMPT: &str = "What is the release status of release order RO-20417?";

/// What the target's executions saw: (arguments, nonce).
type Runs = Arc<Mutex<Vec<(Value, String)>>>;

fn nonce() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos();
    format!("NONCE-{clock:x}-{}", N.fetch_add(1, Ordering::Relaxed))
}

/// The fake plugin: 52 filler tools with long descriptions, the target, a direct-only tool
/// and a decoy that the policy denies.
fn plugin(runs: &Runs) -> Vec<Descriptor> {
    let echo = || {
        Arc::new(FnTool(|_ctx, args: Value| async move {
            Ok(ToolOutput::json(json!({"echo": args})))
        }))
    };
    let nouns = [
        "pallet", "dock", "carrier", "manifest", "bin", "forklift", "shift", "invoice", "cycle",
        "picker", "tote", "zone", "rack",
    ];
    let verbs = ["list", "inspect", "assign", "audit"];
    let mut tools = Vec::new();
    for noun in nouns {
        for verb in verbs {
            tools.push(
                Descriptor::new(Source::Plugin, "depot", &format!("{verb}_{noun}"))
                    .description(format!(
                        "{verb} the {noun} records of the depot. This tool works on every {noun} \
                         the operator may see, keeps the audit trail of each change, honours the \
                         retention windows configured per site, and reports which {noun} entries \
                         it touched, with their identifiers, timestamps and the operator who \
                         approved the change. Paginated; newest first."
                    ))
                    .input_schema(json!({
                        "type": "object",
                        "properties": {
                            format!("{noun}_id"): {"type": "string", "description": format!("The {noun} identifier")},
                            "site": {"type": "string", "description": "Depot site code"},
                            "limit": {"type": "integer", "minimum": 1, "maximum": 50}
                        },
                        "required": [format!("{noun}_id")],
                        "additionalProperties": false
                    }))
                    .tool(echo()),
            );
        }
    }
    let runs = runs.clone();
    tools.push(
        Descriptor::new(Source::Plugin, "depot", TARGET)
            .description(
                "Look up a warehouse release order by its reference and return its release \
                 status together with the confirmation code issued by the depot.",
            )
            .input_schema(json!({
                "type": "object",
                "properties": {FIELD: {"type": "string", "pattern": "^RO-[0-9]{4,8}$"}},
                "required": [FIELD],
                "additionalProperties": false
            }))
            .tool(Arc::new(FnTool(move |_ctx, args: Value| {
                let runs = runs.clone();
                async move {
                    let nonce = nonce();
                    runs.lock().unwrap().push((args.clone(), nonce.clone()));
                    Ok(ToolOutput::json(
                        json!({"status": "released", "confirmation": nonce}),
                    ))
                }
            }))),
    );
    let mut ask = Descriptor::new(Source::Core, "core", DIRECT_ONLY)
        .description("Ask the depot operator a question")
        .input_schema(json!({"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]}))
        .tool(echo());
    ask.catalog_mode = CatalogMode::DirectOnly;
    tools.push(ask);
    tools.push(
        Descriptor::new(Source::Plugin, "depot", DECOY)
            .description("Look up a release order in the old system and return its status")
            .input_schema(json!({"type": "object", "properties": {FIELD: {"type": "string"}}, "required": [FIELD]}))
            .tool(echo()),
    );
    tools
}

fn policy() -> Policy {
    Policy::from_json(&json!({"session": {"deny": [format!("*{DECOY}")]}})).unwrap()
}

fn scenario() -> MockScenario {
    MockScenario {
        target: TARGET.into(),
        arguments: json!({FIELD: "RO-20417"}),
        queries: vec!["release order status".into(), "depot release lookup".into()],
        ..MockScenario::default()
    }
}

fn agent(mock: &MockProvider) -> Agent {
    Agent::new(
        ProviderConfig::new(mock.url(), "toolsearch-mock"),
        AgentOptions::default(),
    )
    .unwrap()
}

/// One lane's evidence.
struct Lane {
    run: AgentRun,
    runs: Vec<(Value, String)>,
    bodies: Vec<String>,
    declared: Vec<BTreeSet<String>>,
    log: Vec<Value>,
    session_mode: Mode,
}

async fn lane(mock: &MockProvider, mode: Mode) -> Lane {
    mock.clear();
    let runs: Runs = Arc::default();
    let log = SessionLog::in_memory();
    let session = Session::builder(Config::default())
        .mode(mode)
        .catalog(CatalogSnapshot::build(plugin(&runs)))
        .policy(policy())
        .session_log(log.clone())
        .worker_binary(BIN)
        .warm_pool(0)
        .build()
        .await
        .unwrap();
    let run = agent(mock).run(&session, PROMPT).await;
    let session_mode = session.mode();
    session.finish().await;
    let requests = mock.requests();
    Lane {
        bodies: requests.iter().map(|r| r.body.clone().unwrap()).collect(),
        declared: requests
            .iter()
            .map(|r| r.tool_names.iter().cloned().collect())
            .collect(),
        runs: runs.lock().unwrap().clone(),
        log: log.lines(),
        run,
        session_mode,
    }
}

fn set(names: &[&str]) -> BTreeSet<String> {
    names.iter().map(|s| s.to_string()).collect()
}

fn records<'a>(log: &'a [Value], kind: &str) -> Vec<&'a Value> {
    log.iter().filter(|r| r["type"] == kind).collect()
}

/// R-12.1 in every mode: the target runs exactly once with the right arguments, its nonce
/// appears only after it ran, the declared set is exactly the mode's, the decoy never reaches
/// the provider, deferred modes do not leak the target's schema, tools mode batches its two
/// queries into one search, and the session log answers R-11.2's four questions.
#[test]
fn scenario_in_every_mode() {
    let rt = rt();
    let mock = rt
        .block_on(MockProvider::start(([127, 0, 0, 1], 0).into(), scenario()))
        .unwrap();
    let mut direct_first = 0;
    for mode in [
        Mode::Direct,
        Mode::Tools,
        Mode::Directory,
        Mode::Code,
        Mode::Auto,
    ] {
        let lane = rt.block_on(lane(&mock, mode));
        let label = mode.to_string();
        assert_eq!(lane.run.stop, StopReason::Answered, "{label}");
        assert!(
            lane.bodies.len() <= 10,
            "{label}: {} requests",
            lane.bodies.len()
        );
        assert_eq!(lane.bodies.len(), lane.run.requests.len(), "{label}");

        // The target ran exactly once, with the right arguments.
        assert_eq!(lane.runs.len(), 1, "{label}");
        let (arguments, nonce) = &lane.runs[0];
        assert_eq!(arguments, &json!({FIELD: "RO-20417"}), "{label}");
        // The nonce: absent from the first request, in the tool result and the answer.
        assert!(!lane.bodies[0].contains(nonce.as_str()), "{label}");
        let tool_results: Vec<&Value> = lane
            .run
            .messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .collect();
        assert!(
            tool_results
                .iter()
                .any(|m| m["content"].as_str().unwrap().contains(nonce.as_str())),
            "{label}"
        );
        assert!(
            lane.run.answer.as_deref().unwrap().contains(nonce.as_str()),
            "{label}"
        );
        // The decoy never reaches the provider.
        for body in &lane.bodies {
            assert!(!body.contains(DECOY), "{label}");
        }

        // The declared set is exactly the mode's, and the same on every request.
        let expected = match lane.session_mode {
            Mode::Direct => {
                let mut names: BTreeSet<String> = plugin(&Arc::default())
                    .iter()
                    .map(|t| t.name.clone())
                    .collect();
                names.remove(DECOY);
                names
            }
            Mode::Tools | Mode::Directory => {
                set(&["tool_search", "tool_describe", "tool_call", DIRECT_ONLY])
            }
            Mode::Code => set(&["tool_search_code", DIRECT_ONLY]),
            Mode::Auto => unreachable!(),
        };
        for declared in &lane.declared {
            assert_eq!(declared, &expected, "{label}");
        }
        if mode == Mode::Auto {
            assert_eq!(
                lane.session_mode,
                Mode::Code,
                "55 allowed tools: auto defers"
            );
        }
        if lane.session_mode == Mode::Direct {
            // Direct exposes the fake schemas.
            assert!(lane.bodies[0].contains(FIELD));
            direct_first = lane.bodies[0].len();
        } else {
            // A deferred first request does not carry the target's schema, and is smaller.
            assert!(!lane.bodies[0].contains(FIELD), "{label}");
            assert!(lane.bodies[0].len() < direct_first, "{label}");
        }

        // The calls the model made.
        let names: Vec<&str> = lane.run.calls.iter().map(|c| c.name.as_str()).collect();
        match lane.session_mode {
            Mode::Direct | Mode::Directory => assert_eq!(names, vec![TARGET], "{label}"),
            Mode::Tools => {
                assert_eq!(names, vec!["tool_search", "tool_describe", "tool_call"]);
                let search = lane.run.calls[0].arguments["queries"].as_array().unwrap();
                assert_eq!(search.len(), 2);
                let text = tool_results[0]["content"].as_str().unwrap();
                let (json, note) = text.split_once('\n').unwrap();
                let result: Value = serde_json::from_str(json).unwrap();
                assert!(is_search_note(note), "{note}");
                assert_eq!(result["results"].as_array().unwrap().len(), 2, "two groups");
            }
            Mode::Code => assert_eq!(names, vec!["tool_search_code"], "{label}"),
            Mode::Auto => unreachable!(),
        }
        assert!(lane.run.calls.iter().all(|c| c.status == CallStatus::Ok));

        // R-11.2 from the session log: schemas up front, searches and describes, the final
        // tool and its source.
        let start = records(&lane.log, "run_start");
        assert_eq!(
            start[0]["schemas_visible_up_front"],
            json!(expected.len()),
            "{label}"
        );
        let (searches, describes) = match lane.session_mode {
            Mode::Tools | Mode::Code => (1, 1),
            _ => (0, 0),
        };
        assert_eq!(records(&lane.log, "search").len(), searches, "{label}");
        if searches == 1 {
            let queries = records(&lane.log, "search")[0]["queries"].clone();
            let expect = if lane.session_mode == Mode::Tools {
                2
            } else {
                1
            };
            assert_eq!(queries, json!(expect), "{label}");
        }
        assert_eq!(records(&lane.log, "describe").len(), describes, "{label}");
        let calls = records(&lane.log, "call");
        assert_eq!(calls.len(), 1, "{label}");
        assert_eq!(calls[0]["tool_id"], TARGET_ID, "{label}");
        assert_eq!(calls[0]["source"], "plugin", "{label}");
        assert_eq!(calls[0]["status"], "ok", "{label}");
        if mode == Mode::Auto {
            let decision = records(&lane.log, "auto_decision");
            assert_eq!(decision[0]["chosen"], "code");
        }
    }
    rt.block_on(mock.shutdown());
}

/// A client tool stops the run and is handed to the caller; `resume` completes it.
#[test]
fn client_tools_are_returned_to_the_caller() {
    let rt = rt();
    let mut open = Descriptor::new(Source::Client, "app", "open_ticket")
        .description("Open a support ticket in the user's app")
        .input_schema(json!({"type": "object", "properties": {"title": {"type": "string"}}, "required": ["title"]}));
    open.executor = Executor::Client;
    let mock = rt
        .block_on(MockProvider::start(
            ([127, 0, 0, 1], 0).into(),
            MockScenario {
                target: "open_ticket".into(),
                arguments: json!({"title": "printer on fire"}),
                ..MockScenario::default()
            },
        ))
        .unwrap();
    let session = rt
        .block_on(
            Session::builder(Config::default())
                .mode(Mode::Direct)
                .catalog(CatalogSnapshot::build([open]))
                .build(),
        )
        .unwrap();
    let agent = agent(&mock);
    let run = rt.block_on(agent.run(&session, "open a ticket"));
    let StopReason::ClientCall { call } = &run.stop else {
        panic!("{:?}", run.stop)
    };
    assert_eq!(call.tool.id, "client:client:open_ticket");
    assert_eq!(call.args, json!({"title": "printer on fire"}));
    assert_eq!(run.calls[0].status, CallStatus::ClientCall);
    let run = rt.block_on(agent.resume(&session, run, Ok(json!({"ticket": "T-77"}))));
    assert_eq!(run.stop, StopReason::Answered);
    assert!(
        run.answer.as_deref().unwrap().contains("T-77"),
        "{:?}",
        run.answer
    );
}

/// A run against a mock with `faults`, in `mode`, on the fake plugin.
fn faulty_run(
    mode: Mode,
    scenario: MockScenario,
    tune: impl FnOnce(&mut ProviderConfig, &mut AgentOptions),
) -> (
    AgentRun,
    Vec<(Value, String)>,
    Vec<toolsearch::lab::RecordedRequest>,
) {
    let rt = rt();
    let mock = rt
        .block_on(MockProvider::start(([127, 0, 0, 1], 0).into(), scenario))
        .unwrap();
    let runs: Runs = Arc::default();
    let mut provider = ProviderConfig::new(mock.url(), "toolsearch-mock");
    provider.initial_backoff = std::time::Duration::from_millis(10);
    let mut options = AgentOptions::default();
    tune(&mut provider, &mut options);
    let agent = Agent::new(provider, options).unwrap();
    let run = rt.block_on(async {
        let session = Session::builder(Config::default())
            .mode(mode)
            .catalog(CatalogSnapshot::build(plugin(&runs)))
            .policy(policy())
            .build()
            .await
            .unwrap();
        let run = agent.run(&session, PROMPT).await;
        session.finish().await;
        run
    });
    let requests = mock.requests();
    let runs = runs.lock().unwrap().clone();
    (run, runs, requests)
}

fn with_faults(faults: &[Fault]) -> MockScenario {
    MockScenario {
        faults: faults.to_vec(),
        ..scenario()
    }
}

/// 500, then 429 (Retry-After: 1), then 200: one turn, three attempts, the scenario completes.
#[test]
fn retries_500_and_429_then_completes() {
    let (run, runs, requests) = faulty_run(
        Mode::Tools,
        with_faults(&[Fault::Status(500), Fault::Status(429)]),
        |_, _| {},
    );
    assert_eq!(run.stop, StopReason::Answered);
    assert_eq!(run.requests[0].attempts, 3);
    assert_eq!(run.requests[0].status, Some(200));
    assert_eq!(requests[0].action, "fault status 500");
    assert_eq!(requests[1].action, "fault status 429");
    assert_eq!(runs.len(), 1);
}

/// Retries are bounded: a provider that always fails ends the run with its status.
#[test]
fn persistent_5xx_is_a_clear_outcome() {
    let (run, runs, requests) = faulty_run(
        Mode::Tools,
        with_faults(&[Fault::Status(503); 8]),
        |provider, _| provider.max_retries = 2,
    );
    let StopReason::ProviderError { kind, message, .. } = &run.stop else {
        panic!("{:?}", run.stop)
    };
    assert_eq!(*kind, "status");
    assert!(message.contains("503"), "{message}");
    assert_eq!(run.requests[0].attempts, 3);
    assert_eq!(requests.len(), 3);
    assert!(runs.is_empty());
}

/// A malformed answer is retried; when it persists the run stops saying why.
#[test]
fn malformed_json_is_retried_then_reported() {
    let (run, runs, _) = faulty_run(Mode::Direct, with_faults(&[Fault::Malformed]), |_, _| {});
    assert_eq!(run.stop, StopReason::Answered);
    assert_eq!(run.requests[0].attempts, 2);
    assert_eq!(runs.len(), 1);

    let (run, runs, _) = faulty_run(
        Mode::Direct,
        with_faults(&[Fault::Malformed; 8]),
        |provider, _| provider.max_retries = 1,
    );
    let StopReason::ProviderError { kind, message, .. } = &run.stop else {
        panic!("{:?}", run.stop)
    };
    assert_eq!(*kind, "malformed");
    assert!(message.contains("not JSON"), "{message}");
    assert!(runs.is_empty());
}

/// An unknown tool name gets the session's recovery answer; the model goes on.
#[test]
fn unknown_tool_is_answered_not_fatal() {
    let (run, runs, requests) =
        faulty_run(Mode::Tools, with_faults(&[Fault::UnknownTool]), |_, _| {});
    assert_eq!(run.stop, StopReason::Answered);
    assert_eq!(run.calls[0].name, "no_such_tool");
    // A name that is no tool runs as a search for its words; nothing is called, and the
    // model reads so.
    assert_eq!(run.calls[0].recovered.as_deref(), Some("tool_search"));
    let fed_back = requests[1].body.as_deref().unwrap();
    assert!(
        fed_back.contains("Nothing ran: there is no tool \\\"no_such_tool\\\"."),
        "{fed_back}"
    );
    assert_eq!(runs.len(), 1);
}

/// Non-JSON arguments are answered with an error; nothing runs for that call.
#[test]
fn non_json_arguments_are_answered_not_run() {
    let (run, runs, requests) =
        faulty_run(Mode::Direct, with_faults(&[Fault::BadArguments]), |_, _| {});
    assert_eq!(run.stop, StopReason::Answered);
    assert_eq!(run.calls[0].name, TARGET);
    assert_eq!(run.calls[0].status, CallStatus::InvalidJson);
    assert_eq!(
        run.calls[0].arguments,
        json!({"invalid_json": "{\"query\": \"unterminated"})
    );
    assert!(
        requests[1]
            .body
            .as_deref()
            .unwrap()
            .contains("not valid JSON")
    );
    assert_eq!(runs.len(), 1, "only the corrected call ran");
}

/// A model that repeats a call forever is answered once, then stopped.
#[test]
fn a_call_repeated_forever_is_detected() {
    let scenario = MockScenario {
        repeat_forever: true,
        ..scenario()
    };
    let (run, runs, requests) = faulty_run(Mode::Direct, scenario, |_, _| {});
    let StopReason::RepeatedCall { name, arguments } = &run.stop else {
        panic!("{:?}", run.stop)
    };
    assert_eq!(name, TARGET);
    assert_eq!(arguments, &json!({FIELD: "RO-20417"}));
    assert_eq!(runs.len(), 1, "a repeat never runs the tool again");
    assert_eq!(requests.len(), 3);
    let statuses: Vec<CallStatus> = run.calls.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses,
        vec![CallStatus::Ok, CallStatus::Repeated, CallStatus::Repeated]
    );
}

/// A provider that never answers is cut off by the request timeout.
#[test]
fn a_stalled_provider_times_out() {
    let (run, runs, _) = faulty_run(
        Mode::Tools,
        with_faults(&[Fault::Stall(60)]),
        |provider, _| provider.request_timeout = std::time::Duration::from_secs(1),
    );
    let StopReason::ProviderError { kind, .. } = &run.stop else {
        panic!("{:?}", run.stop)
    };
    assert_eq!(*kind, "timeout");
    assert_eq!(run.requests[0].attempts, 1, "a timeout is not retried");
    assert!(runs.is_empty());
}

/// Calls written as text: parsed and counted apart when lenient, the final answer otherwise.
#[test]
fn text_calls_are_lenient_only_when_enabled() {
    let scenario = MockScenario {
        text_calls: true,
        ..scenario()
    };
    let (run, runs, _) = faulty_run(Mode::Tools, scenario.clone(), |_, options| {
        options.lenient = true
    });
    assert_eq!(run.stop, StopReason::Answered);
    assert_eq!((run.strict_calls(), run.lenient_calls()), (0, 3));
    assert!(run.calls.iter().all(|c| c.style == CallStyle::Lenient));
    assert_eq!(runs.len(), 1);

    let (run, runs, _) = faulty_run(Mode::Tools, scenario, |_, _| {});
    assert_eq!(run.stop, StopReason::Answered);
    assert!(run.calls.is_empty());
    assert!(run.answer.unwrap().contains("<tool_call>"));
    assert!(runs.is_empty());
}

/// The turn limit and the token budget stop a run before the next request.
#[test]
fn turn_limit_and_token_budget() {
    let (run, runs, requests) =
        faulty_run(Mode::Tools, scenario(), |_, options| options.max_turns = 2);
    assert_eq!(run.stop, StopReason::TurnLimit { max_turns: 2 });
    assert_eq!(requests.len(), 2);
    assert!(runs.is_empty());

    let (run, _, requests) = faulty_run(Mode::Tools, scenario(), |_, options| {
        options.token_budget = Some(100)
    });
    let StopReason::TokenBudget { used, budget } = run.stop else {
        panic!("{:?}", run.stop)
    };
    assert_eq!(budget, 100);
    assert!(used >= 100);
    assert_eq!(requests.len(), 1);
}

/// Nothing listening: retried, then reported; never a hang.
#[test]
fn an_unreachable_provider_is_reported() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let rt = rt();
    let mut provider = ProviderConfig::new(format!("http://127.0.0.1:{port}"), "m");
    provider.initial_backoff = std::time::Duration::from_millis(10);
    let agent = Agent::new(provider, AgentOptions::default()).unwrap();
    let run = rt.block_on(async {
        let session = Session::builder(Config::default())
            .mode(Mode::Tools)
            .build()
            .await
            .unwrap();
        agent.run(&session, "hi").await
    });
    let StopReason::ProviderError { kind, .. } = &run.stop else {
        panic!("{:?}", run.stop)
    };
    assert_eq!(*kind, "unreachable");
    assert_eq!(run.requests[0].attempts, 4);
    assert!(Agent::new(ProviderConfig::new("ftp://x", "m"), AgentOptions::default()).is_err());
}

/// Kills the child on drop (the mock provider process of a test).
struct Reaped(Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// As a new user following the README: `toolsearch mock-provider` in one process,
/// `toolsearch agent` in another, in every mode, on the embedded demo catalog.
#[test]
fn cli_agent_against_cli_mock_provider_in_every_mode() {
    let mut child = Command::new(BIN)
        .args(["mock-provider", "--listen", "127.0.0.1:0"])
        .env("RUST_LOG", "warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mock = Reaped(child);
    let mut url = String::new();
    BufReader::new(stdout).read_line(&mut url).unwrap();
    let url = url.trim().to_string();
    assert!(url.starts_with("http://127.0.0.1:"), "{url}");

    for mode in ["direct", "tools", "directory", "code", "auto"] {
        let output = Command::new(BIN)
            .args([
                "agent",
                "--provider",
                &url,
                "--mode",
                mode,
                "--prompt",
                "Convert 10 km to miles",
                "--json",
            ])
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{mode}: {text}\n{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let run: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(run["stop"]["reason"], "answered", "{mode}");
        let answer = run["answer"].as_str().unwrap();
        assert!(answer.contains("6.21"), "{mode}: {answer}");
        assert!(run["turns"].as_u64().unwrap() <= 4, "{mode}");
        assert!(run["total_request_bytes"].as_u64().unwrap() > 0);
        assert_eq!(
            run["request_bytes"].as_array().unwrap().len() as u64,
            run["turns"].as_u64().unwrap()
        );
    }

    // The mock recorded every request; the text answer path and exit codes too.
    let rt = rt();
    let recorded: Value = rt.block_on(async {
        let _ = rustls::crypto::ring::default_provider().install_default();
        reqwest::get(format!("{url}/debug/requests"))
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    let requests = recorded["requests"].as_array().unwrap();
    assert!(requests.len() >= 10, "{}", requests.len());
    assert!(requests.iter().all(|r| r["body"].is_null()));
    assert_eq!(requests[0]["mode"], "direct");
    assert!(requests[0]["declared_tools"].as_u64().unwrap() > 300);
    drop(mock);
}

/// `agent` exit codes: 1 when the run stops without an answer, 2 for usage.
#[test]
fn cli_agent_exit_codes() {
    // Port 1: outside the ephemeral range, so no other test's server (bound to port 0) can take
    // it between here and the agent's connect, as a port freed by this test could be.
    let port = 1;
    let output = Command::new(BIN)
        .args([
            "agent",
            "--provider",
            &format!("http://127.0.0.1:{port}"),
            "--mode",
            "tools",
            "--prompt",
            "hi",
            "--json",
        ])
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let run: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(run["stop"]["reason"], "provider_error");
    assert_eq!(run["stop"]["kind"], "unreachable");
    let usage = Command::new(BIN)
        .args(["agent", "--prompt", "hi"])
        .output()
        .unwrap();
    assert_eq!(usage.status.code(), Some(2));
    let remote = Command::new(BIN)
        .args(["mock-provider", "--listen", "0.0.0.0:0"])
        .output()
        .unwrap();
    assert_eq!(remote.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&remote.stderr).contains("loopback"));
}

/// Nine one-line tools with one parameter each (plus the benchmark's target): a catalog whose
/// direct schemas are smaller than the structured controls.
fn compact_catalog() -> toolsearch::lab::agent::BenchCatalog {
    let names = [
        "get_time",
        "get_weather",
        "send_note",
        "list_files",
        "read_file",
        "add_event",
        "find_contact",
        "get_quote",
        "translate_text",
    ];
    toolsearch::lab::agent::BenchCatalog {
        name: "compact".into(),
        tools: names
            .iter()
            .map(|name| {
                Descriptor::new(Source::Plugin, "app", name)
                    .description(format!("{}.", name.replace('_', " ")))
                    .input_schema(json!({
                        "type": "object",
                        "properties": {"q": {"type": "string"}},
                        "required": ["q"]
                    }))
            })
            .collect(),
    }
}

/// The payload benchmark (R-9.5): deferred modes shrink the first request by orders of
/// magnitude on large catalogs, direct stays cheaper on tiny ones, and `auto` follows.
#[test]
fn payload_benchmark_ratios() {
    use toolsearch::lab::agent::{BenchCatalog, PayloadRow, payload};
    let rt = rt();
    let mut catalogs: Vec<BenchCatalog> = [10, 1000, 5000]
        .into_iter()
        .map(BenchCatalog::synthetic)
        .collect();
    catalogs.push(compact_catalog());
    let rows = rt
        .block_on(payload(&catalogs, std::path::Path::new(BIN)))
        .unwrap();
    assert_eq!(rows.len(), 20);
    let row = |mode: &str, tools: usize, catalog: &str| -> &PayloadRow {
        rows.iter()
            .find(|r| r.mode == mode && r.tools == tools && r.catalog == catalog)
            .unwrap_or_else(|| panic!("no row {mode} {tools} {catalog}"))
    };
    let synthetic = |mode: &str, tools: usize| row(mode, tools, "synthetic");
    for r in &rows {
        assert!(r.completed, "{r:?}");
        assert!((2..=10).contains(&r.turns), "{r:?}");
        assert!(r.total_request_bytes > r.first_request_bytes, "{r:?}");
    }
    let ratio = |mode: &str, tools: usize| {
        synthetic(mode, tools).first_request_bytes as f64
            / synthetic("direct", tools).first_request_bytes as f64
    };
    for mode in ["tools", "code"] {
        assert!(
            ratio(mode, 1000) <= 0.03,
            "{mode} at 1,000: {}",
            ratio(mode, 1000)
        );
        assert!(
            ratio(mode, 5000) <= 0.006,
            "{mode} at 5,000: {}",
            ratio(mode, 5000)
        );
    }
    assert_eq!(synthetic("direct", 1000).declared_tools, 1000);
    assert_eq!(synthetic("tools", 5000).declared_tools, 3);
    assert_eq!(synthetic("code", 5000).declared_tools, 1);
    assert_eq!(synthetic("auto", 5000).auto_chose.as_deref(), Some("code"));

    // Ten tools: auto stays direct. With these schemas direct costs less than tools mode over
    // the conversation (two requests against four)…
    let auto = synthetic("auto", 10);
    assert_eq!(auto.auto_chose.as_deref(), Some("direct"));
    assert_eq!(
        auto.first_request_bytes,
        synthetic("direct", 10).first_request_bytes
    );
    assert!(
        synthetic("direct", 10).total_request_bytes < synthetic("tools", 10).total_request_bytes
    );
    // …and with one-line tools its first request is smaller than the controls too.
    let compact = |mode: &str| row(mode, 10, "compact");
    assert!(compact("direct").first_request_bytes < compact("tools").first_request_bytes);
    assert!(compact("direct").first_request_bytes < compact("directory").first_request_bytes);
    assert_eq!(compact("auto").auto_chose.as_deref(), Some("direct"));
    assert_eq!(
        compact("auto").first_request_bytes,
        compact("direct").first_request_bytes
    );
}

/// `toolsearch bench payload --json` prints the documented row shape, real catalogs included.
#[test]
fn cli_bench_payload_json() {
    let catalog = crate::support::shared().join("catalogs/github_mcp_server.jsonl");
    let output = crate::support::toolsearch(&[
        "bench",
        "payload",
        "--sizes",
        "36",
        "--catalog",
        catalog.to_str().unwrap(),
        "--json",
    ]);
    assert!(
        output.status.success(),
        "{}",
        crate::support::stderr(&output)
    );
    let table: Value = serde_json::from_str(&crate::support::stdout(&output)).unwrap();
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10, "5 modes × 2 catalogs");
    for row in rows {
        for key in [
            "mode",
            "tools",
            "catalog",
            "declared_tools",
            "first_request_bytes",
            "total_request_bytes",
            "turns",
        ] {
            assert!(!row[key].is_null(), "{key} in {row}");
        }
        assert_eq!(row["completed"], true, "{row}");
    }
    assert!(
        rows.iter()
            .any(|r| r["catalog"] == "github_mcp_server.jsonl" && r["mode"] == "tools")
    );
    // The text table: a header and one line per row.
    let text =
        crate::support::toolsearch(&["bench", "payload", "--sizes", "10", "--synthetic-only"]);
    assert!(text.status.success(), "{}", crate::support::stderr(&text));
    let lines: Vec<String> = crate::support::stdout(&text)
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 6, "{lines:?}");
    assert!(lines[0].starts_with("mode"));
    assert!(lines[5].starts_with("auto→direct"), "{}", lines[5]);
    // Bad input: a clear usage error, no panic.
    let bad = crate::support::toolsearch(&["bench", "payload", "--sizes", "1", "--synthetic-only"]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(crate::support::stderr(&bad).contains("out of range"));
}

/// A run of the hostile scripted provider (`faults`) against one tool, `plugin:test:tally`, that
/// accepts any arguments and counts its executions; returns the run and the count.
fn hostile_run(
    faults: &[Fault],
    tune: impl FnOnce(&mut ProviderConfig, &mut AgentOptions),
) -> (AgentRun, usize) {
    let rt = rt();
    let scenario = MockScenario {
        target: "tally".into(),
        arguments: json!({"n": 1}),
        queries: vec!["tally".into()],
        faults: faults.to_vec(),
        ..MockScenario::default()
    };
    let mock = rt
        .block_on(MockProvider::start(([127, 0, 0, 1], 0).into(), scenario))
        .unwrap();
    let count = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = count.clone();
    let tally = Descriptor::new(Source::Plugin, "test", "tally")
        .description("Count one call")
        .input_schema(json!({"type": "object"}))
        .tool(Arc::new(FnTool(move |_ctx, _args: Value| {
            let n = counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1;
            async move { Ok(ToolOutput::json(json!({"count": n}))) }
        })));
    let mut provider = ProviderConfig::new(mock.url(), "toolsearch-mock");
    provider.initial_backoff = std::time::Duration::from_millis(10);
    let mut options = AgentOptions::default();
    tune(&mut provider, &mut options);
    let agent = Agent::new(provider, options).unwrap();
    let run = rt.block_on(async {
        let session = Session::builder(Config::default())
            .mode(Mode::Direct)
            .catalog(CatalogSnapshot::build([tally]))
            .build()
            .await
            .unwrap();
        let run = agent.run(&session, "count").await;
        session.finish().await;
        run
    });
    (run, count.load(std::sync::atomic::Ordering::SeqCst))
}

/// The tool messages of a run: (tool_call_id, content).
fn tool_messages(run: &AgentRun) -> Vec<(String, String)> {
    run.messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .map(|m| {
            (
                m["tool_call_id"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Issue 25, class 4. A hostile provider answers one turn with 10,000 calls: only
/// `max_calls_per_turn` (64) run, every other call is answered with an error naming the bound;
/// two calls under one id run once (the second gets its own id and an error naming the
/// duplicate); the bytes sent back over a run and its wall time are bounded, each stop naming
/// its bound.
#[test]
fn hostile_agent_calls_per_turn_ids_bytes_and_deadline_are_bounded() {
    // 10,000 calls in one answer.
    let (run, ran) = hostile_run(&[Fault::Flood(10_000)], |_, _| {});
    assert_eq!(ran, 64, "only max_calls_per_turn calls run");
    assert_eq!(run.stop, StopReason::Answered, "{:?}", run.stop);
    let refused = run
        .calls
        .iter()
        .filter(|c| c.status == CallStatus::Refused("max_calls_per_turn"))
        .count();
    assert_eq!(refused, 10_000 - 64);
    let messages = tool_messages(&run);
    let ids: BTreeSet<&str> = messages.iter().map(|(id, _)| id.as_str()).collect();
    assert_eq!(ids.len(), messages.len(), "one answer per call id");
    assert!(
        messages
            .iter()
            .filter(|(_, text)| text.contains("max_calls_per_turn = 64"))
            .count()
            == refused
    );

    // Two calls under one id: the first runs, the second is answered with an error.
    let (run, ran) = hostile_run(&[Fault::DuplicateIds], |_, _| {});
    assert_eq!(ran, 1, "a duplicate id runs once");
    let statuses: Vec<CallStatus> = run.calls.iter().map(|c| c.status).collect();
    assert_eq!(
        statuses[..2],
        [CallStatus::Ok, CallStatus::Refused("duplicate_call_id")]
    );
    let messages = tool_messages(&run);
    assert_eq!(messages[0].0, "call_0_dup");
    assert_eq!(messages[1].0, "call_0_dup~2");
    assert!(messages[1].1.contains("duplicate_call_id"), "{messages:?}");
    let echoed: Vec<&str> = run
        .messages()
        .iter()
        .find(|m| m["role"] == "assistant")
        .unwrap()["tool_calls"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(echoed, ["call_0_dup", "call_0_dup~2"]);

    // The bytes sent back over the run: once 64 KiB went back, nothing more runs and it stops.
    let (run, ran) = hostile_run(&[Fault::Flood(5_000)], |_, options| {
        options.max_calls_per_turn = 10_000;
        options.max_run_result_bytes = 64 * 1024;
    });
    let StopReason::RunResultBytes { used, limit } = run.stop else {
        panic!("{:?}", run.stop)
    };
    assert_eq!(limit, 64 * 1024);
    assert!(used >= limit);
    assert!(ran < 5_000, "{ran}");
    assert!(
        run.calls
            .iter()
            .any(|c| c.status == CallStatus::Refused("max_run_result_bytes"))
    );
    assert_eq!(run.requests.len(), 1, "no request after the bound");

    // The whole run's deadline: a provider that stalls is cut by it, not by the request timeout.
    let (run, ran) = hostile_run(&[Fault::Stall(60)], |_, options| {
        options.run_timeout = std::time::Duration::from_secs(1);
    });
    assert_eq!(run.stop, StopReason::RunTimeout { timeout_ms: 1000 });
    assert_eq!(ran, 0);
}

/// Issue 25, class 4, from the command line: `--max-calls-per-turn` and the config's
/// `agent.maxCallsPerTurn` bound a flooding provider's answer.
#[test]
fn hostile_agent_cli_bounds_calls_per_turn_by_flag_and_config() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("toolsearch.json5");
    std::fs::write(
        &config,
        "{agent: {maxCallsPerTurn: 2, runTimeoutMs: 600000}}",
    )
    .unwrap();
    for (extra, bound) in [
        (vec!["--max-calls-per-turn", "3"], 3),
        (vec!["--config", config.to_str().unwrap()], 2),
    ] {
        let mut child = Command::new(BIN)
            .args([
                "mock-provider",
                "--listen",
                "127.0.0.1:0",
                "--faults",
                "flood:40",
            ])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mock = Reaped(child);
        let mut url = String::new();
        BufReader::new(stdout).read_line(&mut url).unwrap();
        let url = url.trim().to_string();
        let output = Command::new(BIN)
            .args(["agent", "--provider", &url, "--mode", "direct"])
            .args(["--prompt", "Convert 10 km to miles", "--json"])
            .args(&extra)
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        let run: Value = serde_json::from_str(&text).unwrap();
        let first: Vec<&Value> = run["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["turn"] == 1)
            .collect();
        assert_eq!(first.len(), 40, "{text}");
        let refused = first
            .iter()
            .filter(|c| c["status"] == "refused" && c["kind"] == "max_calls_per_turn")
            .count();
        assert_eq!(refused, 40 - bound, "{extra:?}: {text}");
        drop(mock);
    }
}

// ---- Issue 27: calls in the wrong shape, from scripted small models -------------------------

/// One run of a scripted small model in `mode` on the fake plugin (lenient parsing on when the
/// model writes its calls as text).
fn small_model_lane(model: SmallModel, mode: Mode, text_calls: bool) -> Lane {
    let rt = rt();
    let scenario = MockScenario {
        small_model: Some(model),
        text_calls,
        ..scenario()
    };
    let mock = rt
        .block_on(MockProvider::start(([127, 0, 0, 1], 0).into(), scenario))
        .unwrap();
    let lane = rt.block_on(async {
        let runs: Runs = Arc::default();
        let log = SessionLog::in_memory();
        let session = Session::builder(Config::default())
            .mode(mode)
            .catalog(CatalogSnapshot::build(plugin(&runs)))
            .policy(policy())
            .session_log(log.clone())
            .worker_binary(BIN)
            .warm_pool(0)
            .build()
            .await
            .unwrap();
        let options = AgentOptions {
            lenient: text_calls,
            ..AgentOptions::default()
        };
        let agent =
            Agent::new(ProviderConfig::new(mock.url(), "toolsearch-mock"), options).unwrap();
        let run = agent.run(&session, PROMPT).await;
        let session_mode = session.mode();
        session.finish().await;
        let requests = mock.requests();
        Lane {
            bodies: requests.iter().map(|r| r.body.clone().unwrap()).collect(),
            declared: requests
                .iter()
                .map(|r| r.tool_names.iter().cloned().collect())
                .collect(),
            runs: runs.lock().unwrap().clone(),
            log: log.lines(),
            run,
            session_mode,
        }
    });
    rt.block_on(mock.shutdown());
    lane
}

/// The scenario completed: the target ran once with the right arguments, its nonce is in the
/// answer, the decoy never reached the provider; `recovered` calls were recovered, each counted
/// in the run, the telemetry and the session log (name called, what it ran as), each answered
/// with one hint line naming the declared control.
fn assert_completed(lane: &Lane, label: &str, recovered: &[&str]) {
    assert_eq!(
        lane.run.stop,
        StopReason::Answered,
        "{label}: {:?}",
        lane.run.answer
    );
    assert_eq!(lane.runs.len(), 1, "{label}: the target ran once");
    let (arguments, nonce) = &lane.runs[0];
    assert_eq!(arguments, &json!({FIELD: "RO-20417"}), "{label}");
    assert!(
        lane.run.answer.as_deref().unwrap().contains(nonce.as_str()),
        "{label}: {:?}",
        lane.run.answer
    );
    for body in &lane.bodies {
        assert!(!body.contains(DECOY), "{label}");
    }
    let recovered_calls: Vec<&str> = lane
        .run
        .calls
        .iter()
        .filter(|c| c.recovered.is_some())
        .map(|c| c.name.as_str())
        .collect();
    assert_eq!(recovered_calls, recovered, "{label}");
    assert_eq!(lane.run.recovered_calls(), recovered.len(), "{label}");
    assert_eq!(
        lane.run.to_json()["recovered_calls"],
        json!(recovered.len()),
        "{label}"
    );
    let logged = records(&lane.log, "recovered_call");
    assert_eq!(
        logged
            .iter()
            .map(|r| r["name"].as_str().unwrap())
            .collect::<Vec<_>>(),
        recovered,
        "{label}"
    );
    let declared_controls = match lane.session_mode {
        Mode::Code => vec!["tool_search_code"],
        _ => vec!["tool_search", "tool_describe", "tool_call"],
    };
    for record in &logged {
        let ran_as = record["ran_as"].as_str().unwrap();
        assert!(declared_controls.contains(&ran_as), "{label}: {record}");
        assert_eq!(record["ok"], true, "{label}: {record}");
    }
    let end = records(&lane.log, "run_end");
    assert_eq!(
        end[0]["telemetry"]["counters"]["recovered_calls"],
        json!(recovered.len()),
        "{label}"
    );
    // Each recovered call's answer ends with one hint line naming a declared control.
    let hints: Vec<&str> = lane
        .run
        .messages()
        .iter()
        .filter(|m| m["role"] == "tool")
        .filter_map(|m| m["content"].as_str())
        // After the JSON: a search's note (how many tools matched), then a recovered call's hint.
        .filter_map(|text| text.lines().skip(1).find(|line| !is_search_note(line)))
        .collect();
    assert_eq!(hints.len(), recovered.len(), "{label}: {hints:?}");
    for hint in hints {
        assert!(!hint.contains('\n'), "{label}: one line: {hint}");
        assert!(
            declared_controls.iter().any(|c| hint.contains(c)),
            "{label}: {hint}"
        );
    }
}

const SMALL_MODEL_MODES: [Mode; 3] = [Mode::Code, Mode::Auto, Mode::Tools];

#[test]
fn small_model_bridge_names_as_tool_calls_complete_in_code_auto_and_tools_mode() {
    for mode in SMALL_MODEL_MODES {
        let lane = small_model_lane(SmallModel::BridgeNames, mode, false);
        assert_completed(
            &lane,
            &mode.to_string(),
            &[
                "openclaw.tools.search",
                "openclaw_tools_describe",
                "openclaw-tools-call",
            ],
        );
        if lane.session_mode == Mode::Code {
            // Each ran as the cell a right-shape call would have sent.
            assert_eq!(records(&lane.log, "cell").len(), 3, "{mode}");
        }
    }
}

#[test]
fn small_model_bridge_names_written_as_text_complete_in_code_auto_and_tools_mode() {
    for mode in SMALL_MODEL_MODES {
        let lane = small_model_lane(SmallModel::BridgeNames, mode, true);
        assert_completed(
            &lane,
            &mode.to_string(),
            &[
                "openclaw.tools.search",
                "openclaw_tools_describe",
                "openclaw-tools-call",
            ],
        );
        assert_eq!(lane.run.lenient_calls(), 3, "{mode}");
    }
}

#[test]
fn small_model_bare_names_with_positional_arguments_complete_in_code_auto_and_tools_mode() {
    for mode in SMALL_MODEL_MODES {
        let lane = small_model_lane(SmallModel::BareNames, mode, false);
        assert_completed(&lane, &mode.to_string(), &["search", "describe", "call"]);
    }
}

#[test]
fn small_model_structured_controls_complete_in_code_auto_and_tools_mode() {
    for mode in SMALL_MODEL_MODES {
        let lane = small_model_lane(SmallModel::StructuredControls, mode, false);
        let label = mode.to_string();
        match lane.session_mode {
            // tool_search_code with search arguments, then the tools-mode controls.
            Mode::Code => assert_completed(
                &lane,
                &label,
                &["tool_search_code", "tool_describe", "tool_call"],
            ),
            // In tools mode these are the declared controls: nothing to recover.
            _ => assert_completed(&lane, &label, &[]),
        }
    }
}

#[test]
fn small_model_fenced_code_completes_in_code_auto_and_tools_mode() {
    for mode in SMALL_MODEL_MODES {
        let lane = small_model_lane(SmallModel::FencedCode, mode, false);
        let label = mode.to_string();
        if lane.session_mode == Mode::Code {
            assert_completed(&lane, &label, &["tool_search_code"]);
            assert_eq!(
                records(&lane.log, "recovered_call")[0]["form"],
                "fenced_body",
                "{label}"
            );
            assert!(
                lane.run.calls[0].arguments["code"]
                    .as_str()
                    .unwrap()
                    .starts_with("```js")
            );
        } else {
            assert_completed(&lane, &label, &[]);
        }
    }
}

#[test]
fn small_model_code_without_return_completes_in_code_auto_and_tools_mode() {
    for mode in SMALL_MODEL_MODES {
        let lane = small_model_lane(SmallModel::NoReturn, mode, false);
        let label = mode.to_string();
        if lane.session_mode == Mode::Code {
            assert_completed(&lane, &label, &["tool_search_code", "tool_search_code"]);
            for record in records(&lane.log, "recovered_call") {
                assert_eq!(record["form"], "implicit_return", "{label}");
            }
            assert!(
                !lane.run.calls[0].arguments["code"]
                    .as_str()
                    .unwrap()
                    .contains("return")
            );
        } else {
            assert_completed(&lane, &label, &[]);
        }
    }
}

/// A model that writes its cells as text in a fence (no tool call at all), as
/// Qwen2.5-Coder-1.5B does after its first search: with lenient parsing each cell runs as
/// `tool_search_code`, counted as recovered, and the search's answer names the next step — the
/// cell that calls the target by its exact id — which is all the scripted model goes by.
/// A small model that sends its search cell again instead of the next step: the repeat is not
/// run, its answer names the next step, and the model completes the scenario through it.
#[test]
fn a_repeated_search_cell_is_answered_with_its_next_step_in_code_and_auto_mode() {
    for mode in SMALL_MODEL_MODES {
        let lane = small_model_lane(SmallModel::RepeatsSearch, mode, false);
        let label = mode.to_string();
        assert_completed(&lane, &label, &[]);
        if lane.session_mode != Mode::Code {
            continue;
        }
        let statuses: Vec<&CallStatus> = lane.run.calls.iter().map(|c| &c.status).collect();
        assert_eq!(
            statuses,
            [&CallStatus::Ok, &CallStatus::Repeated, &CallStatus::Ok],
            "{label}"
        );
        let repeat: Value = lane
            .run
            .messages()
            .iter()
            .filter(|m| m["role"] == "tool")
            .nth(1)
            .and_then(|m| m["content"].as_str())
            .and_then(|text| serde_json::from_str(text).ok())
            .unwrap();
        assert_eq!(
            repeat["error"]["kind"], "repeated_call",
            "{label}: {repeat}"
        );
        let message = repeat["error"]["message"].as_str().unwrap();
        assert!(message.contains("not run again"), "{label}: {message}");
        assert!(
            message.contains(&format!(
                "return await openclaw.tools.call(\\\"{TARGET_ID}\\\", {{{FIELD}: ?}});"
            )) && message.ends_with("in place of each ?."),
            "{label}: {message}"
        );
    }
}

/// A model that writes `openclaw.tools.search` as a JSON object in its text gets the next step
/// as the bridge call it would write (`openclaw.tools.call` with the hit's id and a `?` per
/// argument), not as a `tool_search_code` cell, and completes by sending that call as text.
#[test]
fn a_bridge_call_written_as_text_gets_its_next_step_as_a_bridge_call_in_code_and_auto_mode() {
    for mode in SMALL_MODEL_MODES {
        let lane = small_model_lane(SmallModel::BridgeSteps, mode, true);
        let label = mode.to_string();
        if lane.session_mode != Mode::Code {
            assert_completed(&lane, &label, &[]);
            continue;
        }
        assert_completed(
            &lane,
            &label,
            &["openclaw.tools.search", "openclaw.tools.call"],
        );
        assert_eq!(lane.run.lenient_calls(), 2, "{label}");
        for record in records(&lane.log, "recovered_call") {
            assert_eq!(record["form"], "bridge_name", "{label}");
            assert_eq!(record["ran_as"], "tool_search_code", "{label}");
        }
        let first = lane
            .run
            .messages()
            .iter()
            .find(|m| m["role"] == "tool")
            .and_then(|m| m["content"].as_str())
            .unwrap()
            .to_string();
        let (json_part, hint) = first.split_once('\n').unwrap();
        let body: Value = serde_json::from_str(json_part).unwrap();
        assert_eq!(
            body["next"],
            format!(
                "Now call openclaw.tools.call with {{\"id\": \"{TARGET_ID}\", \"args\": {{\"{FIELD}\": ?}}}} with the values from the request in place of each ?."
            ),
            "{label}: {body}"
        );
        assert!(!json_part.contains("tool_search_code"), "{label}: {first}");
        assert_eq!(
            hint, "Send the call in \"next\" now; it runs through tool_search_code.",
            "{label}"
        );
    }
}

#[test]
fn small_model_code_written_as_text_completes_through_the_next_step_in_code_and_auto_mode() {
    for mode in SMALL_MODEL_MODES {
        let lane = small_model_lane(SmallModel::CodeAsText, mode, true);
        let label = mode.to_string();
        if lane.session_mode != Mode::Code {
            assert_completed(&lane, &label, &[]);
            continue;
        }
        assert_completed(&lane, &label, &["tool_search_code", "tool_search_code"]);
        for record in records(&lane.log, "recovered_call") {
            assert_eq!(record["form"], "code_in_text", "{label}");
        }
        assert_eq!(lane.run.lenient_calls(), 2, "{label}");
        assert!(
            lane.run
                .calls
                .iter()
                .all(|c| c.style == toolsearch::CallStyle::CodeInText),
            "{label}"
        );
        // The first cell (a bare search, no return) answered with the hits and the next step.
        let first = lane
            .run
            .messages()
            .iter()
            .find(|m| m["role"] == "tool")
            .and_then(|m| m["content"].as_str())
            .unwrap();
        let body: Value = serde_json::Deserializer::from_str(first)
            .into_iter::<Value>()
            .next()
            .unwrap()
            .unwrap();
        assert!(body.get("telemetry").is_none(), "{label}: {body}");
        let next = body["next"].as_str().unwrap();
        assert!(
            next.contains(&format!(
                "return await openclaw.tools.call(\\\"{TARGET_ID}\\\", {{{FIELD}: ?}});"
            )),
            "{label}: {next}"
        );
        assert!(
            next.ends_with("with the values from the request in place of each ?."),
            "{label}: {next}"
        );
    }
}

/// A wrong-shape call to a policy-denied tool is refused exactly as the right-shape call is:
/// the same error (kind and message), nothing about the policy, nothing ran; a wrong-shape
/// search never lists it.
#[test]
fn small_model_wrong_shape_call_to_a_denied_tool_is_refused_like_a_right_shape_one() {
    let rt = rt();
    let decoy_id = format!("plugin:depot:{DECOY}");
    let args = json!({FIELD: "RO-20417"});
    for mode in [Mode::Code, Mode::Tools] {
        let runs: Runs = Arc::default();
        let session = rt
            .block_on(
                Session::builder(Config::default())
                    .mode(mode)
                    .catalog(CatalogSnapshot::build(plugin(&runs)))
                    .policy(policy())
                    .worker_binary(BIN)
                    .warm_pool(0)
                    .build(),
            )
            .unwrap();
        for selector in [decoy_id.as_str(), DECOY] {
            let right = match mode {
                Mode::Code => rt.block_on(session.handle(
                    "tool_search_code",
                    &json!({"code": format!("return await openclaw.tools.call({}, {args});", json!(selector))}),
                )),
                _ => rt.block_on(session.handle("tool_call", &json!({"id": selector, "args": args}))),
            };
            assert!(right.is_error(), "{mode}: {right:?}");
            let wrong_shapes = [
                ("openclaw.tools.call", json!({"id": selector, "args": args})),
                ("openclaw_tools_call", json!([selector, args])),
                ("call", json!({"id": selector, "args": args})),
                ("tool_call", json!({"id": selector, "args": args})),
            ];
            for (name, arguments) in wrong_shapes {
                let wrong = rt.block_on(session.handle(name, &arguments));
                let label = format!("{mode} {name} {selector}");
                assert!(
                    wrong.recovered().is_some() || (mode == Mode::Tools && name == "tool_call"),
                    "{label}"
                );
                assert!(wrong.is_error(), "{label}: {wrong:?}");
                assert_eq!(wrong.body()["error"], right.body()["error"], "{label}");
                let text = wrong.text().to_lowercase();
                assert!(
                    !text.contains("policy") && !text.contains("denied"),
                    "{label}: {text}"
                );
            }
        }
        // A recovered search does not list it.
        let hits = rt.block_on(session.handle(
            "openclaw.tools.search",
            &json!({"query": "release order lookup old system", "limit": 20}),
        ));
        assert!(!hits.is_error(), "{mode}: {hits:?}");
        assert!(!hits.text().contains(DECOY), "{mode}");
        assert!(runs.lock().unwrap().is_empty());
        rt.block_on(session.finish());
    }
}

/// `toolsearch agent --json` against `toolsearch mock-provider --small-model …`: the run
/// completes and reports its recovered calls.
#[test]
fn cli_agent_json_reports_recovered_calls() {
    for (behaviour, mode, expected) in [
        ("bridge-names", "code", 3),
        ("bare-names", "tools", 3),
        ("fenced-code", "code", 1),
    ] {
        let mut child = Command::new(BIN)
            .args([
                "mock-provider",
                "--listen",
                "127.0.0.1:0",
                "--small-model",
                behaviour,
            ])
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdout = child.stdout.take().unwrap();
        let mock = Reaped(child);
        let mut url = String::new();
        BufReader::new(stdout).read_line(&mut url).unwrap();
        let output = Command::new(BIN)
            .args([
                "agent",
                "--provider",
                url.trim(),
                "--mode",
                mode,
                "--prompt",
                "Convert 10 km to miles",
                "--json",
            ])
            .env("RUST_LOG", "warn")
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{behaviour}: {text}");
        let run: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(run["stop"]["reason"], "answered", "{behaviour}");
        assert!(
            run["answer"].as_str().unwrap().contains("6.21"),
            "{behaviour}: {text}"
        );
        assert_eq!(run["recovered_calls"], expected, "{behaviour}");
        let ran_as: Vec<&str> = run["tool_calls"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|c| c["recovered"].as_str())
            .collect();
        assert_eq!(ran_as.len(), expected as usize, "{behaviour}");
        drop(mock);
    }
    let bad = Command::new(BIN)
        .args(["mock-provider", "--small-model", "nonsense"])
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("bridge-names"));
}

/// Whether a line is the note a search answer carries beside its hits.
fn is_search_note(line: &str) -> bool {
    [
        "matching tool",
        "selected tool",
        "No tool matched",
        "no tool is named",
    ]
    .iter()
    .any(|words| line.contains(words))
}

/// Every character class the one terminal filter removes: C0 (ESC, BEL, CR), DEL, C1 (CSI),
/// bidirectional overrides, isolates and marks, zero-width characters.
const HOSTILE: &str =
    "ok \u{1b}[2J\u{7}\r\u{7f}\u{9b}31m\u{202e}\u{2066}\u{200f}\u{61c}\u{200b}\u{2060}\u{feff}done";
/// What is left of [`HOSTILE`] once filtered (also inside a JSON excerpt, which escapes the C0
/// controls as text).
const HOSTILE_RESIDUE: &str = "31mdone";

fn unsafe_for_terminal(c: char) -> bool {
    matches!(c, '\u{0}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}'
        | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200b}'..='\u{200f}'
        | '\u{61c}' | '\u{2060}' | '\u{feff}')
}

/// A provider on a loopback port that answers every request with `status` and `body`.
fn canned_provider(status: u16, body: String) -> String {
    use std::io::{Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
            }
            let mut request = vec![0u8; length];
            let _ = reader.read_exact(&mut request);
            let _ = write!(
                stream,
                "HTTP/1.1 {status} X\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// The agent's human transcript (answer on stdout, summary and stop reason on stderr, every log
/// line on) carries no control, bidi or zero-width character from the provider's text.
#[test]
fn hostile_provider_text_reaches_the_agent_transcript_terminal_safe() {
    let answer = json!({"choices": [{"message": {"role": "assistant", "content": HOSTILE},
        "finish_reason": "stop"}], "usage": {"prompt_tokens": 1, "completion_tokens": 1}});
    let refusal = json!({"error": {"message": HOSTILE}});
    for (status, body, expect_success) in [(200, answer, true), (400, refusal, false)] {
        let url = canned_provider(status, body.to_string());
        let output = Command::new(BIN)
            .args([
                "agent",
                "--provider",
                &url,
                "--mode",
                "tools",
                "--prompt",
                "hi",
            ])
            .env("RUST_LOG", "debug")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(output.status.success(), expect_success, "{status}: {text}");
        assert!(text.contains(HOSTILE_RESIDUE), "{status}: {text:?}");
        assert!(
            !text.chars().any(unsafe_for_terminal),
            "{status} printed a control: {:?}",
            text.chars()
                .filter(|c| unsafe_for_terminal(*c))
                .collect::<String>()
        );
    }
}
