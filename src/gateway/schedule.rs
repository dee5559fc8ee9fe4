//! Per-run scheduling of final tool executions (SPEC ).
//!
//! One [`Schedule`] per run, shared by every surface and code cell of the run. Only final tool
//! executions take a slot (search and describe never do): a `sequential` tool holds the
//! exclusive slot, so nothing else of the run executes while it runs; `parallel` tools share
//! slots and overlap.
//!
//! Reentrancy: a tool body that calls back into the gateway (nested call) runs inside the task
//! that holds its slot. A nested call that needs the exclusive slot, or any nested call made
//! while holding the exclusive slot, would wait on itself forever; it fails with
//! [`ScheduleError::Reentrant`] instead. A nested parallel call inside a parallel slot runs
//! under the outer slot.

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::RwLock;

use crate::catalog::ExecutionMode;

static NEXT_SCHEDULE: AtomicU64 = AtomicU64::new(1);

tokio::task_local! {
    /// The slot the current task holds: (schedule id, mode).
    static HELD: (u64, ExecutionMode);
}

/// A nested call that would deadlock.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The call would wait for a slot its own caller holds.
    #[error(
        "reentrant call: {tool} would wait for the run's schedule that its caller ({holder} slot) already holds; sequential tools cannot call tools of the same run, and no tool can call a sequential one"
    )]
    Reentrant {
        /// The tool being called.
        tool: String,
        /// The mode of the slot held by the caller.
        holder: &'static str,
    },
}

/// The schedule of one run. Cheap to clone; clones share the schedule.
#[derive(Clone, Debug)]
pub struct Schedule {
    id: u64,
    lock: Arc<RwLock<()>>,
}

impl Default for Schedule {
    fn default() -> Self {
        Schedule::new()
    }
}

fn mode_name(mode: ExecutionMode) -> &'static str {
    match mode {
        ExecutionMode::Parallel => "parallel",
        ExecutionMode::Sequential => "sequential",
    }
}

impl Schedule {
    /// A fresh schedule.
    pub fn new() -> Schedule {
        Schedule {
            id: NEXT_SCHEDULE.fetch_add(1, Ordering::Relaxed),
            lock: Arc::new(RwLock::new(())),
        }
    }

    /// Runs `body` in a slot of `mode`, or fails when that would deadlock on the caller's slot.
    pub async fn run<F: Future>(
        &self,
        tool: &str,
        mode: ExecutionMode,
        body: F,
    ) -> Result<F::Output, ScheduleError> {
        let held = HELD.try_with(|held| *held).ok();
        if let Some((schedule, held_mode)) = held
            && schedule == self.id
        {
            if held_mode == ExecutionMode::Sequential || mode == ExecutionMode::Sequential {
                return Err(ScheduleError::Reentrant {
                    tool: tool.to_string(),
                    holder: mode_name(held_mode),
                });
            }
            // Parallel inside parallel: already covered by the caller's shared slot.
            return Ok(body.await);
        }
        match mode {
            ExecutionMode::Sequential => {
                let _guard = self.lock.write().await;
                Ok(HELD.scope((self.id, mode), body).await)
            }
            ExecutionMode::Parallel => {
                let _guard = self.lock.read().await;
                Ok(HELD.scope((self.id, mode), body).await)
            }
        }
    }
}
