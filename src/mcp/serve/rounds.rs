//! Tool calls in rounds (SEP-2322), for clients of the 2026-07-28 revision: such a client takes
//! no requests from its server, so when an upstream asks something during its call (sampling,
//! elicitation, roots), the call is answered `input_required` with what was asked and keeps
//! running here, parked under an opaque `requestState`, until the client retries it with the
//! answers.
//!
//! Owns: a call's task ([`Running`]: every call runs on its own, so that its client's request
//! can be answered while it waits), the parked calls ([`Rounds`], at most [`MAX_PARKED`]), their
//! states (128 random bits, good for the same tool only, and only while what they ask still
//! waits), and matching a retry's answers to what was asked.
//!
//! Never does: decide what is asked or check it (`crate::mcp::asking`), or read an answer.

use std::collections::HashMap;
use std::sync::Mutex;

use rmcp::model::{ErrorData as McpError, InputRequests, InputRequiredResult, InputResponses};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::mcp::asking::{MAX_ASKS_PER_CALL, Pending};
use crate::session::Reply;

/// Calls parked at once, across clients; one more is refused naming this bound.
pub const MAX_PARKED: usize = 1024;

/// What a call ends with: its reply, or `Err` when the shutdown's grace period ran out.
pub type Ended = Result<Reply, ()>;

/// A call running on its own task (aborted when this is dropped: the client gave up, or its
/// state was never used), and what it waits on its client for.
pub struct Running {
    task: JoinHandle<Ended>,
    asks: mpsc::Receiver<Pending>,
    /// What the last `input_required` result asked, by its key there.
    waiting: HashMap<String, oneshot::Sender<Value>>,
    asked: u32,
}

impl Drop for Running {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How far a call got in one round.
pub enum Turn {
    /// It ended.
    Ended(Ended),
    /// It asks the client something: the result to answer the client's request with.
    Asking(InputRequiredResult),
}

impl Running {
    /// Starts `call` on its own task; what is asked during it arrives through `asks`.
    pub fn start(
        call: impl Future<Output = Ended> + Send + 'static,
        asks: mpsc::Receiver<Pending>,
    ) -> Running {
        Running {
            task: tokio::spawn(call),
            asks,
            waiting: HashMap::new(),
            asked: 0,
        }
    }

    /// Waits until the call ends or asks its client something; in that case it is parked in
    /// `rounds` for `tool` and the `input_required` result names its state.
    pub async fn turn(mut self, rounds: &Rounds, tool: &str) -> Result<Turn, McpError> {
        tokio::select! {
            biased;
            ended = &mut self.task => Ok(Turn::Ended(ended.unwrap_or(Err(())))),
            Some(first) = self.asks.recv() => {
                let mut requests = InputRequests::new();
                let mut next = Some(first);
                while let Some(pending) = next {
                    self.asked += 1;
                    let key = format!("toolsearch-{}", self.asked);
                    requests.insert(key.clone(), pending.request);
                    self.waiting.insert(key, pending.answer);
                    next = self.asks.try_recv().ok();
                }
                let state = rounds.park(tool, self)?;
                Ok(Turn::Asking(InputRequiredResult::new(Some(requests), Some(state))))
            }
        }
    }

    /// Gives each request the last round asked its answer in `responses` (one left unanswered
    /// is refused to the server that asked).
    pub fn answer(&mut self, mut responses: InputResponses) {
        for (key, answer) in self.waiting.drain() {
            if let Some(response) = responses.remove(&key) {
                let _ = answer.send(response);
            }
        }
    }

    /// Whether nothing it asked still waits (each gave up: the time it may wait ran out).
    fn stale(&self) -> bool {
        self.task.is_finished() || self.waiting.values().all(oneshot::Sender::is_closed)
    }
}

/// The parked calls, by state.
#[derive(Default)]
pub struct Rounds(Mutex<HashMap<String, Parked>>);

struct Parked {
    tool: String,
    call: Running,
}

impl Rounds {
    /// Parks `call` of `tool` until its client retries; its state.
    fn park(&self, tool: &str, call: Running) -> Result<String, McpError> {
        let mut parked = lock(&self.0);
        parked.retain(|_, parked| !parked.call.stale());
        if parked.len() >= MAX_PARKED {
            return Err(McpError::internal_error(
                format!(
                    "{MAX_PARKED} tool calls are already waiting on their clients' answers; this \
                     call's upstream asked something and it was given up: try again later"
                ),
                None,
            ));
        }
        let state = random_state()?;
        parked.insert(
            state.clone(),
            Parked {
                tool: tool.to_string(),
                call,
            },
        );
        Ok(state)
    }

    /// The call `state` names, for a retry of `tool`.
    pub fn resume(&self, state: &str, tool: &str) -> Result<Running, McpError> {
        let mut parked = lock(&self.0);
        parked.retain(|_, parked| !parked.call.stale());
        match parked.remove(state) {
            Some(found) if found.tool == tool => Ok(found.call),
            Some(found) => {
                let tool = found.tool.clone();
                parked.insert(state.to_string(), found);
                Err(McpError::invalid_params(
                    format!(
                        "this requestState belongs to a call of {tool:?}: retry that call with it"
                    ),
                    None,
                ))
            }
            None => Err(McpError::invalid_params(
                format!(
                    "unknown or expired requestState: the call it named ended, or what it asked \
                     was not answered in time (each request waits at most its server's \
                     callTimeoutMs; a call asks at most {MAX_ASKS_PER_CALL}); call the tool again"
                ),
                None,
            )),
        }
    }
}

/// 128 bits from the operating system's generator, as hex.
fn random_state() -> Result<String, McpError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| {
        McpError::internal_error(format!("no random state for a call in rounds ({e})"), None)
    })?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}
