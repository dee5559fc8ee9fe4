//! The payload and real-model benchmarks: the release-order scenario played per mode through
//! the real agent loop and a real session (SPEC ).
//!
//! Owns: [`payload`] — for each catalog and mode, one run against the in-process mock provider
//! on a loopback port, measured on the wire (declared tools, first-request bytes, request
//! bytes over the conversation, turns, what `auto` chose, whether the target ran once with the
//! right arguments and its nonce reached the answer) — and [`agent`] — the same scenario on a
//! 56-tool catalog against any OpenAI-compatible provider (a real model), recording per mode
//! whether the target ran with the right arguments, strict and lenient calls, turns, prompt
//! tokens, the server's time to first token and the time to the target's execution.
//!
//! Never does: print (the CLI renders the rows), skip a catalog it was given, or retry a
//! scenario that failed (a failure is a row with `completed: false`).

use std::path::Path;
use std::time::Instant;

use serde::Serialize;
use serde_json::Value;

use crate::catalog::{CatalogSnapshot, Descriptor};
use crate::config::{Config, Mode};
use crate::session::{Session, SessionError};

use super::mock::{MockError, MockProvider};
use super::scenario::{Executions, Scenario, release_order_tool, synthetic_tools};
use crate::agent::{Agent, AgentOptions, ProviderConfig, ProviderError, StopReason};

/// The modes every benchmark plays, in table order.
pub const MODES: [Mode; 5] = [
    Mode::Direct,
    Mode::Tools,
    Mode::Directory,
    Mode::Code,
    Mode::Auto,
];

/// The synthetic catalog sizes of `toolsearch bench payload`.
pub const SIZES: [usize; 6] = [10, 36, 100, 500, 1000, 5000];

/// Tools in the real-model benchmark's catalog (55 synthetic + the target).
pub const AGENT_BENCH_TOOLS: usize = 56;

/// A benchmark could not run (set-up, not a scenario failure).
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// A session could not be built.
    #[error(transparent)]
    Session(#[from] SessionError),
    /// The mock provider could not start.
    #[error(transparent)]
    Mock(#[from] MockError),
    /// The provider URL is unusable.
    #[error(transparent)]
    Provider(#[from] ProviderError),
    /// A task of the suite could not be set up.
    #[error("task suite: {0}")]
    Task(String),
}

/// A catalog to measure: its name and its tools (the target is added by the benchmark).
#[derive(Debug, Clone)]
pub struct BenchCatalog {
    /// `synthetic` or the file name.
    pub name: String,
    /// The tools, without the target.
    pub tools: Vec<Descriptor>,
}

impl BenchCatalog {
    /// A synthetic catalog of `size` tools in all (the target included).
    pub fn synthetic(size: usize) -> BenchCatalog {
        BenchCatalog {
            name: "synthetic".into(),
            tools: synthetic_tools(size.saturating_sub(1)),
        }
    }
}

/// One row of `toolsearch bench payload`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PayloadRow {
    /// The mode asked for.
    pub mode: String,
    /// Tools in the catalog (the target included).
    pub tools: usize,
    /// The catalog's name.
    pub catalog: String,
    /// Tools declared to the provider.
    pub declared_tools: usize,
    /// Bytes of the first request body.
    pub first_request_bytes: usize,
    /// Request bytes over the conversation.
    pub total_request_bytes: usize,
    /// Model turns.
    pub turns: usize,
    /// For `auto`: the mode it chose.
    pub auto_chose: Option<String>,
    /// The target ran exactly once with the right arguments and its nonce is in the answer.
    pub completed: bool,
    /// Why the run stopped (`answered`, `turn_limit`, `provider_error`, …).
    pub stop: String,
    /// The model's final answer, when the run did not complete (the reason, in its words).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub answer: Option<String>,
}

/// Plays the scenario per mode on every catalog against an in-process mock provider.
pub async fn payload(
    catalogs: &[BenchCatalog],
    worker_binary: &Path,
) -> Result<Vec<PayloadRow>, BenchError> {
    let scenario = Scenario::release_order();
    let mock = MockProvider::start(([127, 0, 0, 1], 0).into(), scenario.mock()).await?;
    let agent = Agent::new(
        ProviderConfig::new(mock.url(), "toolsearch-mock"),
        AgentOptions::default(),
    )?;
    let mut rows = Vec::new();
    for catalog in catalogs {
        for mode in MODES {
            let executions = Executions::default();
            let mut tools = catalog.tools.clone();
            tools.push(release_order_tool(&executions));
            let size = tools.len();
            let session = Session::builder(Config::default())
                .mode(mode)
                .catalog(CatalogSnapshot::build(tools))
                .worker_binary(worker_binary)
                .warm_pool(0)
                .build()
                .await?;
            let run = agent.run(&session, &scenario.prompt).await;
            session.finish().await;
            mock.clear();
            let ran = executions.all();
            let completed = run.stop == StopReason::Answered
                && ran.len() == 1
                && ran[0].arguments == scenario.arguments
                && run
                    .answer
                    .as_deref()
                    .is_some_and(|a| a.contains(&ran[0].nonce));
            rows.push(PayloadRow {
                mode: mode.to_string(),
                tools: size,
                catalog: catalog.name.clone(),
                declared_tools: run.declared_tools,
                first_request_bytes: run.requests.first().map_or(0, |r| r.bytes),
                total_request_bytes: run.total_request_bytes(),
                turns: run.turns,
                auto_chose: (mode == Mode::Auto).then(|| run.mode.clone()),
                completed,
                stop: run.stop.name().to_string(),
                answer: if completed { None } else { run.answer.clone() },
            });
        }
    }
    mock.shutdown().await;
    Ok(rows)
}

/// One row of `toolsearch bench agent`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentRow {
    /// The mode asked for.
    pub mode: String,
    /// The mode in force (after `auto`).
    pub chosen_mode: String,
    /// The target ran with the right arguments (the main metric).
    pub success: bool,
    /// How often the target ran.
    pub target_executions: usize,
    /// The confirmation nonce is in the final answer.
    pub answer_has_nonce: bool,
    /// Calls in `tool_calls`.
    pub strict_calls: usize,
    /// Calls parsed from text.
    pub lenient_calls: usize,
    /// Model turns.
    pub turns: usize,
    /// Prompt tokens of the first request, when reported.
    pub first_prompt_tokens: Option<u64>,
    /// Prompt tokens over the run, when reported.
    pub prompt_tokens: Option<u64>,
    /// Bytes of the first request.
    pub first_request_bytes: usize,
    /// The server's prompt time of the first request (its time to first token), when reported.
    pub first_token_ms: Option<f64>,
    /// From the start of the run to the target's first execution.
    pub target_ms: Option<f64>,
    /// Wall time of the run.
    pub wall_ms: f64,
    /// Why the run stopped.
    pub stop: String,
    /// The whole run (`toolsearch agent --json`'s object).
    pub run: Value,
}

/// Plays the scenario per mode against a real provider, on the 56-tool catalog.
pub async fn agent(
    provider: ProviderConfig,
    options: AgentOptions,
    modes: &[Mode],
    worker_binary: &Path,
) -> Result<Vec<AgentRow>, BenchError> {
    let scenario = Scenario::release_order();
    let agent = Agent::new(provider, options)?;
    let filler = synthetic_tools(AGENT_BENCH_TOOLS - 1);
    let mut rows = Vec::new();
    for &mode in modes {
        let executions = Executions::default();
        let mut tools = filler.clone();
        tools.push(release_order_tool(&executions));
        let session = Session::builder(Config::default())
            .mode(mode)
            .catalog(CatalogSnapshot::build(tools))
            .worker_binary(worker_binary)
            .warm_pool(0)
            .build()
            .await?;
        let started = Instant::now();
        let run = agent.run(&session, &scenario.prompt).await;
        session.finish().await;
        let ran = executions.all();
        let right = ran.iter().find(|e| e.arguments == scenario.arguments);
        let first = run.requests.first();
        let prompt_tokens: Vec<u64> = run
            .requests
            .iter()
            .filter_map(|r| r.prompt_tokens)
            .collect();
        rows.push(AgentRow {
            mode: mode.to_string(),
            chosen_mode: run.mode.clone(),
            success: right.is_some(),
            target_executions: ran.len(),
            answer_has_nonce: right
                .is_some_and(|e| run.answer.as_deref().is_some_and(|a| a.contains(&e.nonce))),
            strict_calls: run.strict_calls(),
            lenient_calls: run.lenient_calls(),
            turns: run.turns,
            first_prompt_tokens: first.and_then(|r| r.prompt_tokens),
            prompt_tokens: (!prompt_tokens.is_empty()).then(|| prompt_tokens.iter().sum()),
            first_request_bytes: first.map_or(0, |r| r.bytes),
            first_token_ms: first.and_then(|r| r.server_prompt_ms),
            target_ms: ran
                .first()
                .map(|e| e.at.saturating_duration_since(started).as_secs_f64() * 1000.0),
            wall_ms: run.wall.as_secs_f64() * 1000.0,
            stop: run.stop.name().to_string(),
            run: run.to_json(),
        });
    }
    Ok(rows)
}
