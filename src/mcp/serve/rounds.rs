//! Tool calls in rounds (SEP-2322), for clients of the 2026-07-28 revision: such a client takes
//! no requests from its server, so when an upstream asks something during its call (sampling,
//! elicitation, roots), the call is answered `input_required` with what was asked and keeps
//! running here, parked under an opaque `requestState`, until the client retries it with the
//! answers.
//!
//! Owns: a call's task ([`Running`]: every call runs on its own, so that its client's request
//! can be answered while it waits), the parked calls ([`Rounds`], at most [`MAX_PARKED`], of one
//! client [`MAX_PARKED_PER_CLIENT`]; swept when one parks or resumes), their states (128 random
//! bits, good for one retry of the same tool, while what they ask still waits), and matching a
//! retry's answers to what was asked.
//!
//! Never does: decide what is asked or check it (`crate::mcp::asking`), or read an answer.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rmcp::model::{ErrorData as McpError, InputRequests, InputRequiredResult, InputResponses};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::mcp::asking::Pending;
use crate::session::Reply;
use crate::sync::lock;

/// Calls parked at once, across clients; one more is refused naming this bound.
pub const MAX_PARKED: usize = 1024;

/// Calls of one client parked at once.
pub const MAX_PARKED_PER_CLIENT: usize = 64;

/// How long a parked call is kept, at least, so that a late retry still gets how it ended.
const KEEP_GIVEN_UP: Duration = Duration::from_secs(60);

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
    /// Its task panicked (a bug).
    Panicked,
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
    pub async fn turn(
        mut self,
        rounds: &Rounds,
        tool: &str,
        client: &Arc<str>,
    ) -> Result<Turn, McpError> {
        loop {
            let first = tokio::select! {
                biased;
                ended = &mut self.task => return Ok(match ended {
                    Ok(ended) => Turn::Ended(ended),
                    Err(_) => Turn::Panicked,
                }),
                Some(first) = self.asks.recv() => first,
            };
            // What else the call asks at the same moment (an upstream's several requests of one
            // round are asked at once) goes in the same round.
            tokio::task::yield_now().await;
            let mut requests = InputRequests::new();
            let mut next = Some(first);
            while let Some(pending) = next {
                // One whose asker gave up meanwhile is not asked.
                if !pending.answer.is_closed() {
                    self.asked += 1;
                    let key = format!("toolsearch-{}", self.asked);
                    requests.insert(key.clone(), pending.request);
                    self.waiting.insert(key, pending.answer);
                }
                next = self.asks.try_recv().ok();
            }
            if requests.is_empty() {
                continue;
            }
            let state = rounds.park(tool, client, self)?;
            return Ok(Turn::Asking(InputRequiredResult::new(
                Some(requests),
                Some(state),
            )));
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
}

/// The parked calls, by state.
#[derive(Default)]
pub struct Rounds(Mutex<HashMap<String, Parked>>);

struct Parked {
    tool: String,
    /// The client it was parked for (its HTTP session or connection): counted against
    /// [`MAX_PARKED_PER_CLIENT`].
    client: Arc<str>,
    call: Running,
    since: Instant,
}

impl Parked {
    /// Whether it is given up: nothing it asked still waits (each asker gave up, its time ran
    /// out or the server went on without it) and a retry had [`KEEP_GIVEN_UP`] more to fetch
    /// what the call ended with meanwhile.
    fn stale(&self) -> bool {
        self.call.waiting.values().all(oneshot::Sender::is_closed)
            && self.since.elapsed() >= KEEP_GIVEN_UP
    }
}

impl Rounds {
    /// Parks `call` of `tool` for `client` until its retry; its state.
    fn park(&self, tool: &str, client: &Arc<str>, call: Running) -> Result<String, McpError> {
        let mut parked = lock(&self.0);
        parked.retain(|_, parked| !parked.stale());
        let theirs = parked.values().filter(|p| &p.client == client).count();
        if parked.len() >= MAX_PARKED || theirs >= MAX_PARKED_PER_CLIENT {
            return Err(McpError::internal_error(
                format!(
                    "too many tool calls are waiting on their clients' answers ({} in all, \
                     {theirs} of this client; at most {MAX_PARKED} and {MAX_PARKED_PER_CLIENT} \
                     per client): this call's upstream asked something and the call was given \
                     up; answer or abandon the others and try again",
                    parked.len()
                ),
                None,
            ));
        }
        let state = random_state()?;
        parked.insert(
            state.clone(),
            Parked {
                tool: tool.to_string(),
                client: client.clone(),
                call,
                since: Instant::now(),
            },
        );
        Ok(state)
    }

    /// The call `state` names, for a retry of `tool` (one that ended meanwhile gives its
    /// result on its next turn).
    pub fn resume(&self, state: &str, tool: &str) -> Result<Running, McpError> {
        let mut parked = lock(&self.0);
        let found = parked.remove(state);
        parked.retain(|_, parked| !parked.stale());
        match found {
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
                "unknown or expired requestState: the call it named was already resumed by \
                 another retry, or what it asked was not answered in time (each request waits \
                 at most its server's callTimeoutMs); call the tool again"
                    .to_string(),
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
