//! toolsearch — a gateway that lets LLM agents use catalogs of hundreds or thousands of tools
//! without sending every schema to the model.
//!
//! Modules, in dependency order (each names only types from modules before it); see
//! ARCHITECTURE.md for what each owns.

// Foundations.
pub mod config;
pub mod telemetry;
// Tools: descriptors, snapshots, the `Tool` trait; the embedded demo catalog.
pub mod catalog;
pub mod demo;
// Who may see what.
pub mod policy;
// Finding tools: signatures, ranking, the directory.
pub mod signature;
// (ranking, batch search, describe)
pub mod search;
// (the capability directory and namespace index)
pub mod directory;
// The one call path.
pub mod gateway;
// Code mode: QuickJS in hardened worker processes, reaching the gateway through `Bridge`.
pub mod sandbox;
// What the model sees, and dispatch back into the gateway.
pub mod surface;
// The command line.
pub mod cli;

pub use catalog::{CatalogSnapshot, Descriptor, Source, Tool};
pub use gateway::{CallOutcome, Gateway, GatewayBuilder};
pub use policy::{Authorized, Policy};
pub use search::{Hit, IndexCache, SearchIndex};
