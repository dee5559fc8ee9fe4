//! toolsearch — a gateway that lets LLM agents use catalogs of hundreds or thousands of tools
//! without sending every schema to the model.
//!
//! Modules, in dependency order (each names only types from modules before it):
//! `config`, `telemetry` → `catalog` (with the [`catalog::Tool`] trait) → `demo` → `policy` →
//! `signature` → `search` → `directory` → `gateway` → `surface` → `cli`. See ARCHITECTURE.md.

pub mod config;
pub mod telemetry;

pub mod catalog;
pub mod demo;
pub mod directory;
pub mod policy;
pub mod search;

pub mod gateway;

pub mod signature;
pub mod surface;

pub mod cli;

pub use catalog::{CatalogSnapshot, Descriptor, Source, Tool};
pub use gateway::{CallOutcome, Gateway, GatewayBuilder};
pub use policy::{Authorized, Policy};
pub use search::{Hit, IndexCache, SearchIndex};
