//! The one integration-test binary. Each module carries a one-line purpose.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

/// Catalog files, snapshots, fingerprints, id clashes.
mod catalog;
/// The embedded demo catalog: size, mix, schemas, every tool called for real, search pins.
mod demo;
/// Exact names first in every form, over the pooled real and eval catalogs.
mod exact_names;
/// Fail-closed policy: a denied tool is invisible and cannot move rankings.
mod policy;
/// Ranking, seed examples, limits.
mod search;
/// `select:` and the partial-result signal of search answers, per surface.
mod search_answer;
/// Shared helpers: reference data location, running the binary.
mod support;

/// The agent loop against the real mock provider: the scenario per mode, faults, the
/// CLI's two processes, the payload benchmark.
mod agent;
/// The command line: JSON shapes and exit codes, through the real binary.
mod cli;
/// Code mode end to end: real cells against the real gateway.
mod code_mode;
/// JSON5 configuration: defaults, profiles, clamps, errors.
mod config;
/// Fault injection: stopped and killed zygotes, killed workers, panicking tools, a full disk
/// under the session log, SIGTERM to serve.
mod faults;
/// The call path: shapes, validation, hooks, approvals, timeouts, scheduling, session log.
mod gateway;
/// `serve --http` under attack: one test per hostile class of the HTTP front (issue 25).
mod hostile_http;
/// MCP both ways: real npm servers as tool sources, faults, serve mode with real clients.
mod mcp;
/// Code mode's sandbox: escape corpus, hardening, limits, bridge, load.
mod sandbox;
/// One run for every entry point: one config's limits everywhere, recovery wording per mode,
/// failure kinds across seams, one index build per key.
mod session;
/// Signature rendering through the public API.
mod signature;
/// What the model sees per mode, provider names, dispatch and hydration.
mod surface;
/// The task suite of `bench agent --tasks`, played by the scripted models in every mode.
mod tasks;
