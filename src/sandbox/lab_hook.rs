//! The measurement wing's one door into the sandbox's internals (crate-private, feature `lab`).
//!
//! Owns: nothing but re-exports. The in-process floor (`lab/floor.rs`) rebuilds a warm worker's
//! timed path inside the host so that the cell bench can say what the process boundary costs;
//! to do that it needs the isolate, its prelude and body compilers, the worker's caps and the
//! text filter the worker applies to console lines — exactly the items below, and nothing else.
//! Rules: only `lab` imports this module; product modules reach the sandbox through its public
//! API (`Supervisor`, `Bridge`, `Limits`, `Outcome`). Anything added here must be named in the
//! floor's module doc, with why the floor needs it.

pub(crate) use super::isolate::{
    INTERRUPT_MARGIN, Internals, Isolate, Refused, compile_body, compile_prelude, install_prelude,
};
pub(crate) use super::protocol::{Spin, WorkerConfig, mono_ns};
