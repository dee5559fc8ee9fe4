//! The embedded demo catalog: 300+ realistic tools over two dozen owners, with real in-memory
//! implementations, for the CLI's default catalog, the docs, tests and benchmarks.
//!
//! Owns:
//! - The descriptors, kept as data in `catalog.json` (embedded with `include_str!`, parsed once
//!   into a `OnceLock`) and mapped to implementations by owner and tool name (`tools`).
//!   A JSON line whose tool has no implementation is still a descriptor, with
//!   [`Executor::Unavailable`]; client tools get [`Executor::Client`] (the gateway never runs
//!   them).
//! - [`DemoWorld`]: per-owner state (calendar, mail, drive, repositories, notes, tasks, …) seeded
//!   with fixtures and shared by every tool of one catalog. [`catalog`] uses one process-wide
//!   world, so a note written through one call is there for the next; [`catalog_with`] takes
//!   an isolated world (tests use `DemoWorld::seeded()` per case).
//! - [`example_args`]: a deterministic argument generator used by tests and docs.
//!
//! Never does: touch the host filesystem, network, environment, clock or processes. The core
//! primitives (`read`, `write`, `edit`, `apply_patch`, `exec`, `process`) work on an in-memory
//! file tree and a built-in command interpreter; "now" is a fixed demo clock
//! (2026-03-02T09:00:00Z, see `clock`); quotes, weather and web pages come from fixed tables.
//!
//! Invariants: ids are unique; every non-client tool has an implementation; a tool never just
//! returns its arguments; bad-but-valid input (unknown id, empty list) gives a [`ToolError`](crate::ToolError) or
//! a well-formed "not found" result, never a panic; results with an output schema validate
//! against it (tests check all of these for every tool).

mod args;
mod clock;
mod expr;
mod kit;
mod spec;
mod tools;
mod world;

use std::sync::Arc;
use std::time::Duration;

pub use args::example_args;
pub use world::DemoWorld;

use crate::catalog::{CatalogSnapshot, Descriptor, Executor, Source};

/// The demo descriptors, wired to the process-wide [`DemoWorld`].
pub fn descriptors() -> Vec<Descriptor> {
    descriptors_with(DemoWorld::shared())
}

/// The demo descriptors, wired to `world`.
pub fn descriptors_with(world: Arc<DemoWorld>) -> Vec<Descriptor> {
    spec::specs()
        .iter()
        .map(|spec| {
            let mut descriptor = Descriptor::new(spec.source, &spec.owner, &spec.name);
            descriptor.label = spec.label.clone();
            descriptor.description = spec.description.clone();
            descriptor.input_schema = std::sync::Arc::new(spec.input_schema.clone());
            descriptor.output_schema = spec.output_schema.clone();
            descriptor.catalog_mode = spec.catalog_mode;
            descriptor.execution_mode = spec.execution_mode;
            descriptor.timeout = spec.timeout_ms.map(Duration::from_millis);
            descriptor.requires_approval = spec.requires_approval;
            descriptor.executor = if spec.source == Source::Client {
                Executor::Client
            } else {
                match tools::handler(&spec.owner, &spec.name) {
                    Some(handler) => Executor::Tool(Arc::new(world::DemoTool {
                        world: world.clone(),
                        handler,
                    })),
                    None => Executor::Unavailable,
                }
            };
            descriptor
        })
        .collect()
}

/// The demo catalog over the process-wide [`DemoWorld`] (state persists for the process).
pub fn catalog() -> CatalogSnapshot {
    CatalogSnapshot::build(descriptors())
}

/// The demo catalog over `world` (isolated state, e.g. `DemoWorld::seeded()` per test).
pub fn catalog_with(world: Arc<DemoWorld>) -> CatalogSnapshot {
    CatalogSnapshot::build(descriptors_with(world))
}

/// Why the embedded catalog failed to parse, if it did (then the demo catalog is empty).
/// Always `None` for a correct build; tests assert it.
pub fn load_error() -> Option<&'static str> {
    spec::load_error()
}
