//! The agent loop: an adapter that runs one [`Session`] against an OpenAI-compatible
//! `/v1/chat/completions` provider (SPEC ). The scripted mock provider and
//! the benchmarks built on this loop live in the measurement wing (`lab`).
//!
//! Owns: the conversation (system prompt = the caller's text + the session's prompt sections,
//! the user's prompt, assistant turns, tool results), the request per turn (the session's
//! OpenAI tool definitions, sent as-is), dispatching every tool call through
//! [`Session::handle`], and when a run stops — a final answer, the turn limit, the token
//! budget, a repeated identical call, a client tool (handed back to the caller, resumable with
//! [`Agent::resume`]) or a provider failure; each is a [`StopReason`], never a panic or a hang.
//! Calls the model wrote as text are parsed when [`AgentOptions::lenient`] is on (`lenient.rs`)
//! and reported apart from structured ones ([`CallStyle`]); so is a code cell written as text
//! (JavaScript calling `openclaw.tools` in a fence or on bare lines) when `tool_search_code` is
//! declared: it runs as that control's cell and counts as recovered.
//!
//! A model's mistakes are answered, not fatal: non-JSON arguments and a first identical repeat
//! get an error tool result; an empty answer to a tool result is asked again once per run; an unknown or undeclared name gets the session's own recovery
//! message; a call in the wrong shape that the session understood (a bridge function's name as
//! a tool, a fenced cell body…) runs and is counted ([`AgentRun::recovered_calls`]). Provider trouble is retried where that can help (`provider.rs`) and otherwise ends
//! the run with a [`ProviderError`].
//!
//! Never does: build a gateway, surface or sandbox, read configuration (the session does),
//! execute a client tool, or print anything (callers strip control characters from the
//! model's text before a terminal sees it).
//!
//! Bounds: [`AgentOptions::max_turns`] provider requests per run (default 10); tool results
//! put back into the conversation are cut to [`AgentOptions::max_tool_result_bytes`]; at most
//! [`AgentOptions::max_repeats`] identical repeats are answered before the run stops; every
//! request has the provider's timeout and body bound. Against a hostile provider: at most
//! [`AgentOptions::max_calls_per_turn`] calls of one answer run (64; the rest are answered
//! with an error naming `max_calls_per_turn`, not run); one answer per call id (a second call
//! under an id already used in the same answer gets its own id in the conversation and an error
//! naming the duplicate id, and does not run); at most
//! [`AgentOptions::max_run_result_bytes`] bytes of tool results are sent back over a run (16
//! MiB; then no further call runs and the run stops with [`StopReason::RunResultBytes`]); and
//! the whole run has a wall-clock deadline, [`AgentOptions::run_timeout`] (30 min; a provider
//! request or tool call still going then is dropped and the run stops with
//! [`StopReason::RunTimeout`]; time spent waiting for the application to run a client tool
//! does not count). Defaults: `config::AGENT_*`.

mod lenient;
mod provider;

pub use provider::{ProviderConfig, ProviderError};

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::{Value, json};

use crate::catalog::FailureKind;
use crate::gateway::ClientCall;
use crate::session::{Reply, Session};
use crate::surface::Format;
use provider::{Completion, ProviderClient, RawCall};

/// The code-mode control a cell written as text runs as.
const CODE_CONTROL: &str = "tool_search_code";

/// How the loop runs. `Default` suits a local model: 10 turns, no token budget, strict parsing,
/// one repeat answered, temperature 0.
#[derive(Debug, Clone)]
pub struct AgentOptions {
    /// Most provider requests in one run (clamped to 1–100). Default 10.
    pub max_turns: usize,
    /// Stop before the next request once this many tokens were used (prompt + completion as
    /// the provider reports them, else ⌈bytes / 4⌉ of requests and answers). Default: none.
    pub token_budget: Option<u64>,
    /// Parse calls written as text in `content` (`<tool_call>` blocks, fenced JSON). Default
    /// off: such content is then the final answer.
    pub lenient: bool,
    /// Identical calls (same name, same arguments) answered with a "you already did this"
    /// error before the run stops with [`StopReason::RepeatedCall`]. Default 1.
    pub max_repeats: usize,
    /// Text placed before the session's prompt sections in the system message.
    pub system: Option<String>,
    /// Sampling temperature sent with each request. Default `Some(0.0)`.
    pub temperature: Option<f64>,
    /// `max_tokens` sent with each request. Default `Some(1024)`.
    pub max_tokens: Option<u32>,
    /// Longest tool result put back into the conversation, in bytes (cut with a marker).
    /// Default 64 KiB.
    pub max_tool_result_bytes: usize,
    /// Most tool calls run from one model answer; later calls of that answer are answered with
    /// an error naming `max_calls_per_turn` and not run. Default 64 (clamped to 1–10,000).
    pub max_calls_per_turn: usize,
    /// Most bytes of tool results (and call errors) sent back to the provider over the run;
    /// once reached, no further call runs and the run stops. Default 16 MiB (clamped to
    /// 64 KiB–1 GiB).
    pub max_run_result_bytes: u64,
    /// The whole run's wall-clock deadline (provider requests and tool calls; not the time a
    /// client tool waits for the application). Default 30 min (clamped to 1 s–24 h).
    pub run_timeout: Duration,
    /// Send `tool_choice: "required"` with the first request (when tools are declared), so the
    /// provider constrains the first answer to a tool call (llama-server then constrains it from
    /// the first token). Later requests leave the choice to the model. Default off.
    pub require_tool_first: bool,
}

impl Default for AgentOptions {
    fn default() -> Self {
        AgentOptions {
            max_turns: 10,
            token_budget: None,
            lenient: false,
            max_repeats: 1,
            system: None,
            temperature: Some(0.0),
            max_tokens: Some(1024),
            max_tool_result_bytes: 64 * 1024,
            max_calls_per_turn: crate::config::AGENT_MAX_CALLS_PER_TURN.default as usize,
            max_run_result_bytes: crate::config::AGENT_MAX_RUN_RESULT_BYTES.default,
            run_timeout: Duration::from_millis(crate::config::AGENT_RUN_TIMEOUT_MS.default),
            require_tool_first: false,
        }
    }
}

/// Why a run stopped.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "reason", rename_all = "snake_case")]
pub enum StopReason {
    /// The model answered without calling a tool ([`AgentRun::answer`]).
    Answered,
    /// The run used its turns.
    TurnLimit {
        /// The limit in force.
        max_turns: usize,
    },
    /// The run used its token budget.
    TokenBudget {
        /// Tokens used.
        used: u64,
        /// The budget.
        budget: u64,
    },
    /// The model kept making the same call.
    RepeatedCall {
        /// The tool name.
        name: String,
        /// Its arguments.
        arguments: Value,
    },
    /// A client tool: run it and call [`Agent::resume`] with its result.
    ClientCall {
        /// The call to run.
        call: ClientCall,
    },
    /// The tool results sent back over the run reached `max_run_result_bytes`.
    RunResultBytes {
        /// Bytes sent back.
        used: u64,
        /// The bound in force.
        limit: u64,
    },
    /// The run's wall-clock deadline (`run_timeout`) passed.
    RunTimeout {
        /// The deadline in force, in milliseconds.
        timeout_ms: u64,
    },
    /// The provider could not answer a turn.
    ProviderError {
        /// A stable kind (`timeout`, `malformed`, `status`, …).
        kind: &'static str,
        /// The error, worded for a person.
        message: String,
        /// The error.
        #[serde(skip)]
        error: ProviderError,
    },
}

impl StopReason {
    /// A short name (`answered`, `turn_limit`, …).
    pub fn name(&self) -> &'static str {
        match self {
            StopReason::Answered => "answered",
            StopReason::TurnLimit { .. } => "turn_limit",
            StopReason::TokenBudget { .. } => "token_budget",
            StopReason::RepeatedCall { .. } => "repeated_call",
            StopReason::ClientCall { .. } => "client_call",
            StopReason::RunResultBytes { .. } => "run_result_bytes",
            StopReason::RunTimeout { .. } => "run_timeout",
            StopReason::ProviderError { .. } => "provider_error",
        }
    }

    fn provider(error: ProviderError) -> StopReason {
        StopReason::ProviderError {
            kind: error.kind(),
            message: error.to_string(),
            error,
        }
    }
}

/// How the model wrote a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStyle {
    /// In `message.tool_calls`.
    Strict,
    /// As text in `content`, parsed leniently.
    Lenient,
    /// A code cell written as text in `content` (a fence or bare lines calling
    /// `openclaw.tools`), parsed leniently and run as `tool_search_code`.
    CodeInText,
}

/// What became of one tool call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "status", content = "kind", rename_all = "snake_case")]
pub enum CallStatus {
    /// The session answered with a result.
    Ok,
    /// The session answered with an error of this kind (the model read it).
    Failed(FailureKind),
    /// A client tool, handed to the caller.
    ClientCall,
    /// The arguments were not JSON; an error went back to the model, nothing ran.
    InvalidJson,
    /// An identical earlier call; nothing ran.
    Repeated,
    /// Not run: past the bound named here (`max_calls_per_turn`, `duplicate_call_id`,
    /// `max_run_result_bytes`); an error naming it went back to the model.
    Refused(&'static str),
}

/// One tool call of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallRecord {
    /// The turn (1-based) whose answer held the call.
    pub turn: usize,
    /// The provider tool name.
    pub name: String,
    /// Strict or lenient.
    pub style: CallStyle,
    /// The arguments (for non-JSON arguments: `{"invalid_json": text}`).
    pub arguments: Value,
    /// What became of it.
    #[serde(flatten)]
    pub status: CallStatus,
    /// What a call in the wrong shape ran as (`tool_search_code`, `tool_search`, …), when the
    /// session recovered it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovered: Option<String>,
    /// When it was dispatched, from the start of the run (ms).
    pub at_ms: f64,
    /// How long the session took to answer it (ms).
    pub duration_ms: f64,
}

/// One provider request of a run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RequestRecord {
    /// The turn (1-based).
    pub turn: usize,
    /// Bytes of the request body.
    pub bytes: usize,
    /// Bytes of the last answer body.
    pub response_bytes: usize,
    /// Attempts (1 + retries).
    pub attempts: u32,
    /// The last HTTP status.
    pub status: Option<u16>,
    /// `usage.prompt_tokens`, when reported.
    pub prompt_tokens: Option<u64>,
    /// `usage.completion_tokens`, when reported.
    pub completion_tokens: Option<u64>,
    /// The server's prompt-processing time (llama.cpp `timings.prompt_ms`), when reported.
    pub server_prompt_ms: Option<f64>,
    /// Wall time of the request, retries included (ms).
    pub elapsed_ms: f64,
}

/// A call waiting in the conversation.
#[derive(Debug, Clone)]
struct PendingCall {
    id: String,
    turn: usize,
    style: CallStyle,
    call: RawCall,
    /// Why it will not run, when a bound of its answer already decided that.
    refused: Option<Refusal>,
}

/// Why a call of an answer is answered with an error instead of being run.
#[derive(Debug, Clone)]
enum Refusal {
    /// It came after `max_calls_per_turn` calls of the same answer.
    PastTurnLimit {
        /// Its 1-based place in the answer.
        position: usize,
        /// Calls in the answer.
        total: usize,
    },
    /// The answer already had a call with this id.
    DuplicateId(String),
}

impl Refusal {
    fn bound(&self) -> &'static str {
        match self {
            Refusal::PastTurnLimit { .. } => "max_calls_per_turn",
            Refusal::DuplicateId(_) => "duplicate_call_id",
        }
    }
}

/// The conversation so far (what the next request carries) and the loop's state.
#[derive(Debug, Clone, Default)]
struct Conversation {
    messages: Vec<Value>,
    pending: VecDeque<PendingCall>,
    /// A client call handed out: (provider call id, gateway call id).
    awaiting: Option<(String, String)>,
    seen: HashMap<String, usize>,
    /// The next step a call's result named (a code cell's `next`), by the call's repeat key:
    /// an identical repeat is answered with it.
    next_of: HashMap<String, String>,
    tokens_used: u64,
    /// Bytes of tool messages sent back so far (`max_run_result_bytes`).
    result_bytes: u64,
    /// When the run's deadline passes (`run_timeout`), moved on by the time a client tool
    /// waited for the application.
    deadline: Option<Instant>,
    /// Since when the run waits for the application to complete a client call.
    paused: Option<Instant>,
    /// An empty answer after a tool result was already answered with a nudge.
    nudged: bool,
}

/// What the loop says once when the model answers a tool result with nothing at all.
const EMPTY_ANSWER_NUDGE: &str = "Your last answer was empty. If the tool result above answers my request, answer me now with what it returned; otherwise make the next call.";

/// The record of one run: why it stopped, the answer, and what every request and call cost.
#[derive(Debug, Clone)]
pub struct AgentRun {
    /// Why it stopped.
    pub stop: StopReason,
    /// The final answer, when the model gave one (untrusted text: strip controls to print it).
    pub answer: Option<String>,
    /// The session's mode.
    pub mode: String,
    /// Tools declared to the provider.
    pub declared_tools: usize,
    /// Model turns answered.
    pub turns: usize,
    /// Every request, in order.
    pub requests: Vec<RequestRecord>,
    /// Every tool call, in order.
    pub calls: Vec<CallRecord>,
    /// Time from the start of the run to the first call of each tool name.
    pub first_call: BTreeMap<String, Duration>,
    /// Wall time of the run (across resumes).
    pub wall: Duration,
    started: Instant,
    conversation: Conversation,
}

impl AgentRun {
    /// Calls the model wrote in `tool_calls`.
    pub fn strict_calls(&self) -> usize {
        self.calls
            .iter()
            .filter(|c| c.style == CallStyle::Strict)
            .count()
    }

    /// Calls parsed from text.
    pub fn lenient_calls(&self) -> usize {
        self.calls
            .iter()
            .filter(|c| matches!(c.style, CallStyle::Lenient | CallStyle::CodeInText))
            .count()
    }

    /// Calls in the wrong shape the session ran as their structured equivalent.
    pub fn recovered_calls(&self) -> usize {
        self.calls.iter().filter(|c| c.recovered.is_some()).count()
    }

    /// Request bytes over the whole conversation.
    pub fn total_request_bytes(&self) -> usize {
        self.requests.iter().map(|r| r.bytes).sum()
    }

    /// The messages of the conversation (system, user, assistant, tool), as sent.
    pub fn messages(&self) -> &[Value] {
        &self.conversation.messages
    }

    /// The run as one JSON object (what `toolsearch agent --json` prints).
    pub fn to_json(&self) -> Value {
        let sum = |f: fn(&RequestRecord) -> Option<u64>| -> Option<u64> {
            let values: Vec<u64> = self.requests.iter().filter_map(f).collect();
            (!values.is_empty()).then(|| values.iter().sum())
        };
        json!({
            "stop": self.stop,
            "answer": self.answer,
            "mode": self.mode,
            "declared_tools": self.declared_tools,
            "turns": self.turns,
            "requests": self.requests,
            "request_bytes": self.requests.iter().map(|r| r.bytes).collect::<Vec<_>>(),
            "total_request_bytes": self.total_request_bytes(),
            "prompt_tokens": sum(|r| r.prompt_tokens),
            "completion_tokens": sum(|r| r.completion_tokens),
            "tool_calls": self.calls,
            "strict_calls": self.strict_calls(),
            "lenient_calls": self.lenient_calls(),
            "recovered_calls": self.recovered_calls(),
            "first_call_ms": self.first_call.iter()
                .map(|(name, at)| (name.clone(), json!(ms(*at))))
                .collect::<serde_json::Map<_, _>>(),
            "wall_ms": ms(self.wall),
        })
    }
}

fn ms(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

/// What the loop does after one batch of calls.
enum Next {
    Continue,
    Stop(StopReason),
}

/// Runs sessions against one provider. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Agent {
    client: ProviderClient,
    options: AgentOptions,
}

impl Agent {
    /// An agent for `provider`; fails only on an unusable URL or TLS set-up.
    pub fn new(provider: ProviderConfig, options: AgentOptions) -> Result<Agent, ProviderError> {
        let mut options = options;
        options.max_turns = options.max_turns.clamp(1, 100);
        options.max_calls_per_turn = crate::config::AGENT_MAX_CALLS_PER_TURN
            .clamp(options.max_calls_per_turn as u64) as usize;
        options.max_run_result_bytes =
            crate::config::AGENT_MAX_RUN_RESULT_BYTES.clamp(options.max_run_result_bytes);
        options.run_timeout = Duration::from_millis(
            crate::config::AGENT_RUN_TIMEOUT_MS.clamp(options.run_timeout.as_millis() as u64),
        );
        Ok(Agent {
            client: ProviderClient::new(provider)?,
            options,
        })
    }

    /// The options in force.
    pub fn options(&self) -> &AgentOptions {
        &self.options
    }

    /// The provider configuration in force.
    pub fn provider(&self) -> &ProviderConfig {
        self.client.config()
    }

    /// Runs `prompt` in `session` until it stops.
    pub async fn run(&self, session: &Session, prompt: &str) -> AgentRun {
        let mut messages = Vec::new();
        let system = [self.options.system.clone(), Some(session.system_prompt())]
            .into_iter()
            .flatten()
            .filter(|text| !text.is_empty())
            .collect::<Vec<_>>()
            .join("\n\n");
        if !system.is_empty() {
            messages.push(json!({"role": "system", "content": system}));
        }
        messages.push(json!({"role": "user", "content": prompt}));
        let mut run = AgentRun {
            stop: StopReason::Answered,
            answer: None,
            mode: session.mode().to_string(),
            declared_tools: session.tool_definitions().len(),
            turns: 0,
            requests: Vec::new(),
            calls: Vec::new(),
            first_call: BTreeMap::new(),
            wall: Duration::ZERO,
            started: Instant::now(),
            conversation: Conversation {
                messages,
                deadline: Instant::now().checked_add(self.options.run_timeout),
                ..Conversation::default()
            },
        };
        self.drive(session, &mut run).await;
        run
    }

    /// Continues a run that stopped with [`StopReason::ClientCall`], with the application's
    /// result of that call (`Ok(details)` or a failure message). A run that is not waiting for
    /// a client call is returned unchanged.
    pub async fn resume(
        &self,
        session: &Session,
        mut run: AgentRun,
        result: Result<Value, String>,
    ) -> AgentRun {
        let Some((tool_call_id, call_id)) = run.conversation.awaiting.take() else {
            return run;
        };
        // The time the application took to run the client tool is not the run's own.
        if let Some(paused) = run.conversation.paused.take() {
            run.conversation.deadline = run
                .conversation
                .deadline
                .and_then(|deadline| deadline.checked_add(paused.elapsed()));
        }
        let reply = session.complete_client_call(&call_id, result);
        self.push_tool_result(&mut run.conversation, &tool_call_id, &reply);
        self.drive(session, &mut run).await;
        run
    }

    async fn drive(&self, session: &Session, run: &mut AgentRun) {
        let tools = session.tools(Format::OpenAi);
        let code_declared = tools.as_array().is_some_and(|tools| {
            tools
                .iter()
                .any(|t| t.pointer("/function/name").and_then(Value::as_str) == Some(CODE_CONTROL))
        });
        let stop = loop {
            if let Next::Stop(stop) = self.dispatch_pending(session, run).await {
                if matches!(stop, StopReason::ClientCall { .. }) {
                    run.conversation.paused = Some(Instant::now());
                }
                break stop;
            }
            if run.turns >= self.options.max_turns {
                break StopReason::TurnLimit {
                    max_turns: self.options.max_turns,
                };
            }
            if let Some(budget) = self.options.token_budget
                && run.conversation.tokens_used >= budget
            {
                break StopReason::TokenBudget {
                    used: run.conversation.tokens_used,
                    budget,
                };
            }
            if run.conversation.result_bytes >= self.options.max_run_result_bytes {
                break self.result_bytes_stop(&run.conversation);
            }
            let turn = run.turns + 1;
            let body = self.request_body(&tools, &run.conversation.messages, turn);
            let sent = Instant::now();
            let completed = match self.deadline(&run.conversation) {
                Some(deadline) => {
                    tokio::time::timeout_at(deadline, self.client.complete(body.as_bytes())).await
                }
                None => Ok(self.client.complete(body.as_bytes()).await),
            };
            let Ok((result, exchange)) = completed else {
                run.requests.push(RequestRecord {
                    turn,
                    bytes: body.len(),
                    response_bytes: 0,
                    attempts: 1,
                    status: None,
                    prompt_tokens: None,
                    completion_tokens: None,
                    server_prompt_ms: None,
                    elapsed_ms: ms(sent.elapsed()),
                });
                break self.timeout_stop();
            };
            let mut record = RequestRecord {
                turn,
                bytes: body.len(),
                response_bytes: exchange.response_bytes,
                attempts: exchange.attempts,
                status: exchange.status,
                prompt_tokens: None,
                completion_tokens: None,
                server_prompt_ms: None,
                elapsed_ms: ms(exchange.elapsed),
            };
            let completion = match result {
                Ok(completion) => completion,
                Err(error) => {
                    run.requests.push(record);
                    break StopReason::provider(error);
                }
            };
            run.turns = turn;
            record.prompt_tokens = completion.prompt_tokens;
            record.completion_tokens = completion.completion_tokens;
            record.server_prompt_ms = completion.server_prompt_ms;
            run.conversation.tokens_used +=
                match (completion.prompt_tokens, completion.completion_tokens) {
                    // Not reported: estimate from the bytes, as the config does.
                    (None, None) => {
                        (body.len().div_ceil(4) + exchange.response_bytes.div_ceil(4)) as u64
                    }
                    (prompt, answer) => prompt.unwrap_or(0) + answer.unwrap_or(0),
                };
            run.requests.push(record);
            if !self.take_turn(run, turn, completion, code_declared) {
                break StopReason::Answered;
            }
        };
        run.stop = stop;
        run.wall = run.started.elapsed();
    }

    /// Appends the assistant's turn; queues its calls. Returns false when it is a final
    /// answer.
    /// A code cell written as text runs as `tool_search_code` only when `code_declared`.
    fn take_turn(
        &self,
        run: &mut AgentRun,
        turn: usize,
        completion: Completion,
        code_declared: bool,
    ) -> bool {
        let (calls, style, content) = if !completion.tool_calls.is_empty() {
            (completion.tool_calls, CallStyle::Strict, completion.content)
        } else {
            let parsed = match completion.content.as_deref() {
                Some(text) if self.options.lenient => lenient::parse(text),
                _ => (Vec::new(), String::new()),
            };
            if !parsed.0.is_empty() {
                (parsed.0, CallStyle::Lenient, Some(parsed.1))
            } else {
                let code = match completion.content.as_deref() {
                    Some(text) if self.options.lenient && code_declared => {
                        lenient::code_in_text(text)
                    }
                    _ => None,
                };
                let Some(code) = code else {
                    let content = completion.content.unwrap_or_default();
                    // Small models sometimes answer a failed call with nothing: that is not a
                    // final answer. Once per run, the loop asks again.
                    let after_tool = run
                        .conversation
                        .messages
                        .last()
                        .is_some_and(|m| m["role"] == "tool");
                    if content.trim().is_empty() && after_tool && !run.conversation.nudged {
                        run.conversation.nudged = true;
                        run.conversation
                            .messages
                            .push(json!({"role": "user", "content": EMPTY_ANSWER_NUDGE}));
                        return true;
                    }
                    run.answer = Some(content);
                    return false;
                };
                let call = RawCall {
                    id: None,
                    name: CODE_CONTROL.to_string(),
                    arguments: Ok(json!({ "code": code })),
                };
                (vec![call], CallStyle::CodeInText, None)
            }
        };
        let total = calls.len();
        let mut wire = Vec::with_capacity(calls.len());
        let mut ids: HashSet<String> = HashSet::with_capacity(calls.len());
        for (i, call) in calls.into_iter().enumerate() {
            let (given, generated) = match (&call.id, style) {
                (Some(id), _) if !id.is_empty() => (id.clone(), false),
                (_, CallStyle::Strict) => (format!("call_{turn}_{i}"), true),
                (_, CallStyle::Lenient | CallStyle::CodeInText) => {
                    (format!("lenient_{turn}_{i}"), true)
                }
            };
            let mut refused = None;
            let id = if ids.contains(&given) {
                // Every call gets exactly one answer under its own id: a second call under an
                // id the answer already used is renamed in the conversation and refused (a
                // generated id that happens to clash is only renamed).
                if !generated {
                    refused = Some(Refusal::DuplicateId(given.clone()));
                }
                let mut n = 2;
                let mut fresh = format!("{given}~{n}");
                while ids.contains(&fresh) {
                    n += 1;
                    fresh = format!("{given}~{n}");
                }
                fresh
            } else {
                given
            };
            ids.insert(id.clone());
            if refused.is_none() && i >= self.options.max_calls_per_turn {
                refused = Some(Refusal::PastTurnLimit {
                    position: i + 1,
                    total,
                });
            }
            let arguments = match &call.arguments {
                Ok(value) => value.to_string(),
                Err(text) => text.clone(),
            };
            wire.push(json!({
                "id": id,
                "type": "function",
                "function": {"name": call.name, "arguments": arguments},
            }));
            run.conversation.pending.push_back(PendingCall {
                id,
                turn,
                style,
                call,
                refused,
            });
        }
        let content = content.filter(|c| !c.trim().is_empty());
        run.conversation.messages.push(json!({
            "role": "assistant",
            "content": content,
            "tool_calls": wire,
        }));
        true
    }

    /// Dispatches queued calls in order; stops at a client call (the rest stay queued) or a
    /// repeat past the limit.
    async fn dispatch_pending(&self, session: &Session, run: &mut AgentRun) -> Next {
        while let Some(pending) = run.conversation.pending.pop_front() {
            let at = run.started.elapsed();
            run.first_call
                .entry(pending.call.name.clone())
                .or_insert(at);
            let mut record = CallRecord {
                turn: pending.turn,
                name: pending.call.name.clone(),
                style: pending.style,
                arguments: match &pending.call.arguments {
                    Ok(value) => value.clone(),
                    Err(text) => json!({"invalid_json": text}),
                },
                status: CallStatus::Ok,
                recovered: None,
                at_ms: ms(at),
                duration_ms: 0.0,
            };
            let bound = match &pending.refused {
                Some(refusal) => Some((refusal.bound(), self.refusal_error(refusal))),
                None if run.conversation.result_bytes >= self.options.max_run_result_bytes => {
                    Some(("max_run_result_bytes", self.result_bytes_error()))
                }
                None => None,
            };
            if let Some((bound, error)) = bound {
                record.status = CallStatus::Refused(bound);
                run.calls.push(record);
                self.push_tool_text(&mut run.conversation, &pending.id, error.to_string());
                continue;
            }
            let arguments = match &pending.call.arguments {
                Ok(arguments) => arguments,
                Err(text) => {
                    record.status = CallStatus::InvalidJson;
                    run.calls.push(record);
                    let error = invalid_json_error(&pending.call.name, text);
                    self.push_tool_text(&mut run.conversation, &pending.id, error.to_string());
                    continue;
                }
            };
            let key = format!("{}\u{0}{}", pending.call.name, canonical(arguments));
            let seen = run.conversation.seen.entry(key.clone()).or_insert(0);
            *seen += 1;
            let repeats = *seen - 1;
            if repeats > 0 {
                record.status = CallStatus::Repeated;
                run.calls.push(record);
                if repeats > self.options.max_repeats {
                    return Next::Stop(StopReason::RepeatedCall {
                        name: pending.call.name.clone(),
                        arguments: arguments.clone(),
                    });
                }
                let next = run.conversation.next_of.get(&key).map(String::as_str);
                let error = repeated_error(&pending.call.name, next);
                self.push_tool_text(&mut run.conversation, &pending.id, error.to_string());
                continue;
            }
            let started = Instant::now();
            let handle = async {
                match (pending.style, arguments.get("code").and_then(Value::as_str)) {
                    (CallStyle::CodeInText, Some(code)) => session.handle_code_in_text(code).await,
                    _ => session.handle(&pending.call.name, arguments).await,
                }
            };
            let handled = match self.deadline(&run.conversation) {
                Some(deadline) => tokio::time::timeout_at(deadline, handle).await,
                None => Ok(handle.await),
            };
            record.duration_ms = ms(started.elapsed());
            let Ok(reply) = handled else {
                // The deadline passed while the call ran: it was dropped (cancelled).
                record.status = CallStatus::Failed(FailureKind::Timeout);
                run.calls.push(record);
                let error = self.timeout_error(&pending.call.name);
                self.push_tool_text(&mut run.conversation, &pending.id, error.to_string());
                return Next::Stop(self.timeout_stop());
            };
            record.status = match reply.unwrapped() {
                Reply::Ok(_) | Reply::Done(_) | Reply::Searched(_) | Reply::Recovered { .. } => {
                    CallStatus::Ok
                }
                Reply::Failed { kind, .. } => CallStatus::Failed(*kind),
                Reply::ClientCall(_) => CallStatus::ClientCall,
            };
            record.recovered = reply.recovered().map(|r| r.ran_as.clone());
            run.calls.push(record);
            if let Reply::ClientCall(call) = reply.unwrapped() {
                let call = call.clone();
                run.conversation.awaiting = Some((pending.id.clone(), call.call_id.clone()));
                return Next::Stop(StopReason::ClientCall { call });
            }
            if let Some(next) = reply.body().get("next").and_then(Value::as_str) {
                run.conversation.next_of.insert(key, next.to_string());
            }
            self.push_tool_result(&mut run.conversation, &pending.id, &reply);
        }
        Next::Continue
    }

    fn push_tool_result(&self, conversation: &mut Conversation, id: &str, reply: &Reply) {
        self.push_tool_text(conversation, id, reply.text());
    }

    fn push_tool_text(&self, conversation: &mut Conversation, id: &str, mut text: String) {
        let limit = self.options.max_tool_result_bytes;
        if text.len() > limit {
            let total = text.len();
            crate::sandbox::truncate_to(&mut text, limit);
            text.push_str(&format!(" …[cut: {total} bytes in all]"));
        }
        conversation.result_bytes = conversation.result_bytes.saturating_add(text.len() as u64);
        conversation.messages.push(json!({
            "role": "tool",
            "tool_call_id": id,
            "content": text,
        }));
    }

    /// The run's deadline as Tokio's instant (`None`: too far to represent).
    fn deadline(&self, conversation: &Conversation) -> Option<tokio::time::Instant> {
        conversation.deadline.map(tokio::time::Instant::from_std)
    }

    fn timeout_stop(&self) -> StopReason {
        StopReason::RunTimeout {
            timeout_ms: self.options.run_timeout.as_millis() as u64,
        }
    }

    fn result_bytes_stop(&self, conversation: &Conversation) -> StopReason {
        StopReason::RunResultBytes {
            used: conversation.result_bytes,
            limit: self.options.max_run_result_bytes,
        }
    }

    /// The error a refused call gets back.
    fn refusal_error(&self, refusal: &Refusal) -> Value {
        let message = match refusal {
            Refusal::PastTurnLimit { position, total } => {
                let limit = self.options.max_calls_per_turn;
                format!(
                    "Not run: one answer may make at most {limit} tool calls (max_calls_per_turn = {limit}); this was call {position} of {total}. Make fewer calls at once."
                )
            }
            Refusal::DuplicateId(id) => format!(
                "Not run: your answer had more than one tool call with the id {:?} (duplicate_call_id); only the first one ran. Give every call of an answer its own id.",
                crate::config::input::echo(id)
            ),
        };
        json!({"error": {"kind": "limit_exceeded", "bound": refusal.bound(), "message": message}})
    }

    /// The error a call gets once the run's result bytes reached their bound.
    fn result_bytes_error(&self) -> Value {
        let limit = self.options.max_run_result_bytes;
        json!({"error": {"kind": "limit_exceeded", "bound": "max_run_result_bytes", "message": format!(
            "Not run: the tool results sent back in this run reached {limit} bytes (max_run_result_bytes = {limit}); the run stops here."
        )}})
    }

    /// The error of a call cut by the run's deadline.
    fn timeout_error(&self, name: &str) -> Value {
        let ms = self.options.run_timeout.as_millis();
        json!({"error": {"kind": "timeout", "bound": "run_timeout", "message": format!(
            "The run's deadline passed (run_timeout = {ms} ms) while your {} call ran; it was cancelled and the run stops.", crate::config::input::echo(name)
        )}})
    }

    fn request_body(&self, tools: &Value, messages: &[Value], turn: usize) -> String {
        let mut body = serde_json::Map::new();
        body.insert("model".into(), json!(self.client.config().model));
        body.insert("messages".into(), json!(messages));
        if tools.as_array().is_some_and(|t| !t.is_empty()) {
            body.insert("tools".into(), tools.clone());
            if turn == 1 && self.options.require_tool_first {
                body.insert("tool_choice".into(), json!("required"));
            }
        }
        body.insert("stream".into(), json!(false));
        if let Some(temperature) = self.options.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        if let Some(max_tokens) = self.options.max_tokens {
            body.insert("max_tokens".into(), json!(max_tokens));
        }
        Value::Object(body).to_string()
    }
}

/// The error a model reads for arguments that are not JSON.
fn invalid_json_error(name: &str, text: &str) -> Value {
    let reason = match serde_json::from_str::<Value>(text) {
        Err(error) => error.to_string(),
        Ok(_) => "not a JSON value".to_string(),
    };
    json!({"error": {
        "kind": "bad_arguments",
        "message": format!(
            "The arguments of your {name} call are not valid JSON ({reason}). Nothing ran. Send the arguments as one JSON object, e.g. {{\"key\": \"value\"}}."
        ),
    }})
}

/// The error a model reads for an identical repeat: the step its result named, when it named
/// one (a 1.5B model that searched in code mode searched again instead of sending it), else to
/// use the result.
fn repeated_error(name: &str, next: Option<&str>) -> Value {
    let then = next.unwrap_or("Use that result: answer the user, or make a different call.");
    json!({"error": {
        "kind": "repeated_call",
        "message": format!(
            "You already made this exact {name} call; its result is above and it was not run again. {then}"
        ),
    }})
}

/// JSON with object keys sorted at every level (the repeat key).
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut entries: Vec<(&String, &Value)> = map.iter().collect();
                entries.sort_by(|a, b| a.0.cmp(b.0));
                let mut out = serde_json::Map::new();
                for (k, v) in entries {
                    out.insert(k.clone(), sorted(v));
                }
                Value::Object(out)
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    sorted(value).to_string()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn canonical_ignores_key_order() {
        let a = json!({"b": 1, "a": {"d": [1, {"y": 2, "x": 1}], "c": null}});
        let b = json!({"a": {"c": null, "d": [1, {"x": 1, "y": 2}]}, "b": 1});
        assert_eq!(canonical(&a), canonical(&b));
        assert_ne!(canonical(&json!({"a": 1})), canonical(&json!({"a": 2})));
    }

    #[test]
    fn model_facing_errors_name_the_fix() {
        let e = invalid_json_error("tool_call", "{oops");
        let m = e["error"]["message"].as_str().unwrap();
        assert!(
            m.contains("tool_call") && m.contains("not valid JSON") && m.contains("Nothing ran")
        );
        let r = repeated_error("tool_search", None);
        let m = r["error"]["message"].as_str().unwrap();
        assert!(
            m.contains("not run again") && m.contains("answer the user"),
            "{m}"
        );
        let step = "Now call tool_search_code with {\"code\": \"return 1;\"}.";
        let r = repeated_error("tool_search_code", Some(step));
        let m = r["error"]["message"].as_str().unwrap();
        assert!(m.contains("not run again") && m.ends_with(step), "{m}");
    }
}
