//! The live-worker slots, shared fairly between clients (R-8.3 with many callers).
//!
//! Owns: [`Slots`] — `capacity` slots; a cell takes one for its whole run. While all are taken,
//! waiting cells queue per client ([`CLIENT`], e.g. one MCP connection of `serve`), and a freed
//! slot goes to the clients in turn (round robin), each client's own cells in arrival order: a
//! client that queued a dozen looping cells delays another client's cell by at most one running
//! cell, not by its whole queue. A wait is bounded by its deadline, and a named client may have
//! at most [`MAX_QUEUED_PER_CLIENT`] cells waiting: past either the cell is answered [`Busy`]
//! instead of waiting on.
//! Never does: run or time cells (the supervisor does), or let a slot leak when a waiting or
//! granted cell is dropped.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::sync::Locked;
use tokio::sync::oneshot;

/// Cells one client may have waiting for a slot at once; a further one is answered busy.
pub const MAX_QUEUED_PER_CLIENT: usize = 64;

tokio::task_local! {
    /// Who the cell run on this task is for (e.g. `serve`'s MCP session or connection). Cells
    /// without one share the anonymous client.
    pub static CLIENT: Arc<str>;
}

/// The current task's client, if one is set (`None`: the anonymous client, e.g. a library
/// caller or `toolsearch exec`, whose waiting cells are not capped).
pub fn current_client() -> Option<Arc<str>> {
    CLIENT.try_with(Arc::clone).ok()
}

/// Why a cell got no slot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Busy {
    /// The wait reached its deadline.
    Deadline {
        /// How long it waited.
        waited: Duration,
        /// Cells running then (every slot).
        running: usize,
        /// Cells still waiting then, all clients.
        queued: usize,
    },
    /// The client (a named one) already has [`MAX_QUEUED_PER_CLIENT`] cells waiting.
    ClientQueueFull,
    /// The sandbox is shutting down.
    Closed,
}

struct Waiter {
    id: u64,
    grant: oneshot::Sender<Slot>,
}

#[derive(Default)]
struct State {
    free: usize,
    /// Clients with waiting cells, in turn order; each with its cells in arrival order.
    queues: VecDeque<(Arc<str>, VecDeque<Waiter>)>,
    next_id: u64,
    closed: bool,
}

impl State {
    fn queued(&self) -> usize {
        self.queues.iter().map(|(_, q)| q.len()).sum()
    }
}

/// The slots (cheap to clone; clones share them).
#[derive(Clone)]
pub struct Slots {
    inner: Arc<Inner>,
}

struct Inner {
    capacity: usize,
    state: Mutex<State>,
}

/// One slot, held while a cell runs; given back (to the next client in turn) when dropped.
pub struct Slot {
    inner: Option<Arc<Inner>>,
}

impl Drop for Slot {
    fn drop(&mut self) {
        if let Some(inner) = self.inner.take() {
            release(&inner);
        }
    }
}

fn state(inner: &Inner) -> MutexGuard<'_, State> {
    inner.state.locked()
}

/// Hands a freed slot to the next waiting cell in turn, or counts it free.
fn release(inner: &Arc<Inner>) {
    let mut state = state(inner);
    if !state.closed {
        while let Some((client, mut waiters)) = state.queues.pop_front() {
            let next = waiters.pop_front();
            if !waiters.is_empty() {
                // This client's turn is used: it goes to the back of the line.
                state.queues.push_back((client, waiters));
            }
            let Some(next) = next else { continue };
            let slot = Slot {
                inner: Some(inner.clone()),
            };
            match next.grant.send(slot) {
                Ok(()) => return,
                // The waiter gave up (its future was dropped): the slot comes back here, and its
                // drop must not re-enter this lock; defuse it and try the next waiter.
                Err(mut slot) => slot.inner = None,
            }
        }
    }
    state.free += 1;
}

impl Slots {
    /// `capacity` slots (at least one).
    pub fn new(capacity: usize) -> Slots {
        let capacity = capacity.max(1);
        Slots {
            inner: Arc::new(Inner {
                capacity,
                state: Mutex::new(State {
                    free: capacity,
                    ..State::default()
                }),
            }),
        }
    }

    /// Free slots now.
    pub fn available(&self) -> usize {
        state(&self.inner).free
    }

    /// Refuses every waiting and future cell ([`Busy::Closed`]).
    pub fn close(&self) {
        let mut state = state(&self.inner);
        state.closed = true;
        // Dropping the senders wakes the waiters with an error.
        state.queues.clear();
    }

    /// A slot for `client` (`None`: the anonymous client), waiting at most `deadline` in its
    /// turn.
    pub async fn acquire(
        &self,
        client: Option<Arc<str>>,
        deadline: Duration,
    ) -> Result<Slot, Busy> {
        let capped = client.is_some();
        let client = client.unwrap_or_else(|| Arc::from(""));
        let (id, granted) = {
            let mut state = state(&self.inner);
            if state.closed {
                return Err(Busy::Closed);
            }
            if state.free > 0 && state.queues.is_empty() {
                state.free -= 1;
                return Ok(Slot {
                    inner: Some(self.inner.clone()),
                });
            }
            let id = state.next_id;
            state.next_id += 1;
            let (grant, granted) = oneshot::channel();
            let waiter = Waiter { id, grant };
            match state.queues.iter_mut().find(|(c, _)| *c == client) {
                Some((_, waiters)) if capped && waiters.len() >= MAX_QUEUED_PER_CLIENT => {
                    return Err(Busy::ClientQueueFull);
                }
                Some((_, waiters)) => waiters.push_back(waiter),
                None => state.queues.push_back((client, VecDeque::from([waiter]))),
            }
            (id, granted)
        };
        let started = tokio::time::Instant::now();
        let mut granted = granted;
        match tokio::time::timeout(deadline, &mut granted).await {
            Ok(Ok(slot)) => Ok(slot),
            Ok(Err(_)) => Err(Busy::Closed),
            Err(_elapsed) => {
                let mut state = state(&self.inner);
                // Granted in the meantime: take it after all.
                if let Ok(slot) = granted.try_recv() {
                    return Ok(slot);
                }
                for (_, waiters) in state.queues.iter_mut() {
                    waiters.retain(|w| w.id != id);
                }
                state.queues.retain(|(_, waiters)| !waiters.is_empty());
                Err(Busy::Deadline {
                    waited: started.elapsed(),
                    running: self.inner.capacity - state.free,
                    queued: state.queued(),
                })
            }
        }
    }
}

impl Busy {
    /// The model-facing message: what happened and what to do.
    pub fn message(&self) -> String {
        match self {
            Busy::Deadline {
                waited,
                running,
                queued,
            } => format!(
                "the sandbox is busy: {running} cell(s) are running and {queued} more are \
                 waiting, and this cell got no turn within {:.1} s (its queue deadline, the \
                 cell's own timeout); it did not run. Retry shortly, or use fewer concurrent \
                 cells",
                waited.as_secs_f64()
            ),
            Busy::ClientQueueFull => format!(
                "the sandbox is busy: this client already has {MAX_QUEUED_PER_CLIENT} cells \
                 waiting for a turn (MAX_QUEUED_PER_CLIENT); this cell did not run. Wait for \
                 your earlier cells to finish"
            ),
            Busy::Closed => "the sandbox is shutting down; the cell did not run".into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A pool of one slot, and that slot taken by client `a`.
    async fn one_slot_taken() -> (Slots, Slot) {
        let slots = Slots::new(1);
        let held = slots
            .acquire(Some("a".into()), Duration::from_secs(5))
            .await;
        let Ok(held) = held else {
            panic!("the first slot is free")
        };
        (slots, held)
    }

    #[tokio::test]
    async fn a_freed_slot_goes_to_the_clients_in_turn() {
        let (slots, held) = one_slot_taken().await;
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        // Client a queues three cells first, then client b one.
        for (client, tag) in [("a", "a1"), ("a", "a2"), ("a", "a3"), ("b", "b1")] {
            let (slots, order) = (slots.clone(), order.clone());
            tasks.push(tokio::spawn(async move {
                let slot = slots
                    .acquire(Some(client.into()), Duration::from_secs(5))
                    .await;
                order.locked().push(tag);
                tokio::time::sleep(Duration::from_millis(5)).await;
                drop(slot);
            }));
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        drop(held);
        for task in tasks {
            let _ = task.await;
        }
        let order = order.locked().clone();
        assert_eq!(order, ["a1", "b1", "a2", "a3"]);
        assert_eq!(slots.available(), 1);
    }

    #[tokio::test]
    async fn a_wait_past_its_deadline_is_busy_and_leaks_nothing() {
        let (slots, held) = one_slot_taken().await;
        let busy = slots
            .acquire(Some("b".into()), Duration::from_millis(20))
            .await;
        assert!(matches!(busy, Err(Busy::Deadline { running: 1, .. })));
        // A waiter whose future is dropped gives its place up.
        let dropped = tokio::time::timeout(
            Duration::from_millis(10),
            slots.acquire(Some("c".into()), Duration::from_secs(5)),
        )
        .await;
        assert!(dropped.is_err());
        drop(held);
        assert_eq!(slots.available(), 1);
    }
}
