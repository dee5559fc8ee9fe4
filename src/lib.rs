//! toolsearch — a gateway that lets LLM agents use catalogs of hundreds or thousands of tools
//! without sending every schema to the model.
//!
//! Start from a [`Session`]: one run built from a resolved [`Config`], a [`CatalogSnapshot`] and
//! a [`Policy`]. It gives an adapter everything it needs — the tool definitions per provider
//! [`Format`], the system-prompt sections, and [`Session::handle`], which answers a model's tool
//! call with the exact [`Reply`] the model reads. Below it, the [`Gateway`] is the one call path
//! (policy, approvals, hooks, validation, timeouts, scheduling, session log), and the sandbox runs
//! code cells in hardened single-use worker processes ([`Supervisor`], [`Limits`], [`Outcome`]).
//! A binary that may run code cells or hold MCP upstreams must call [`dispatch_role`] first
//! thing in `main` (it runs the sandbox's zygote and the MCP upstream supervisor roles).
//!
//! Modules, in dependency order (each names only types from modules before it); see
//! ARCHITECTURE.md for what each owns. All of them are private: this list of re-exports is the
//! API.

// Foundations.
mod config;
mod sync;
// (bounded caches, on the locks above)
mod cache;
mod telemetry;
// Tools: descriptors, snapshots, the `Tool` trait; the embedded demo catalog.
mod catalog;
#[cfg(feature = "demo")]
pub mod demo;
// Who may see what.
mod policy;
// Finding tools: signatures, ranking, the directory.
mod signature;
// (ranking, batch search, describe)
mod search;
// (the capability directory and namespace index)
mod directory;
// The one call path.
mod gateway;
// Code mode: QuickJS in hardened worker processes, reaching the gateway through `Bridge`.
mod sandbox;
// What the model sees, and dispatch back into the gateway.
mod surface;
// One run, as every entry point sees it.
mod session;
// MCP both ways: upstream servers as tool sources, and serve mode.
mod mcp;
// An adapter over a session: the agent loop against an OpenAI-compatible provider.
mod agent;
// The measurement wing: benches, the eval runner, the scripted mock provider and its scenarios,
// the load client (feature `lab`, on by default).
#[cfg(feature = "lab")]
pub mod lab;
// The command line (an adapter over `Session`).
mod cli;

pub use agent::{
    Agent, AgentOptions, AgentRun, CallRecord, CallStatus, CallStyle, ProviderConfig,
    ProviderError, RequestRecord, StopReason,
};
pub use catalog::file::{
    CatalogFileError, LineIssue, LoadedFile, load_catalog_file, parse_catalog,
};
pub use catalog::{
    BoxFuture, CallContext, CatalogIssue, CatalogMode, CatalogSnapshot, Descriptor, ExecutionMode,
    Executor, FailureKind, FnTool, NestedCalls, SentResult, Source, Tool, ToolError, ToolOutput,
    tool_id,
};
pub use config::{
    AgentLimits, Bounds, Config, ConfigError, DirectoryStyle, McpApproval, McpProtocol, McpServer,
    McpTransport, Mode, Profile, SearchLimits, SemanticSettings,
};
pub use gateway::{
    Approval, ApprovalHandler, BeforeToolCall, CallError, CallOutcome, ClientCall, Envelope,
    ErrorKind, Gateway, GatewayBuilder, GatewayError, GatewaySettings, GlobApprovals, HookDecision,
    Operation, Recovery, RunContext, ToolRef,
};
pub use mcp::serve::{HttpListener, ServeError, ServeOptions};
pub use mcp::{Upstream, UpstreamStatus, Upstreams};
pub use policy::{Authorized, Policy, PolicyError};
pub use sandbox::{
    ALLOWED_SYSCALLS, Bridge, BridgeOp, CallPhases, CellOptions, CellPhases, CellResult,
    CellTelemetry, GatewayBridge, LimitKind, Limits, LogLevel, LogLine, Outcome, PollWhen, Polling,
    SandboxError, Supervisor, SupervisorConfig,
};
pub use search::answer::MissingName;
pub use search::batch::{SearchResponse, Searched, SingleSearch};
/// Hybrid search: the lexical ranking fused with sentence-vector cosine.
#[cfg(feature = "semantic")]
pub use search::hybrid;
/// Sentence embeddings for hybrid search: the model directory, the embedder, the vector cache.
#[cfg(feature = "semantic")]
pub use search::semantic;
pub use search::{Hit, IndexCache, IndexStats, RankedHit, Ranking, SearchIndex, SearchSettings};
pub use session::{Reply, Session, SessionBuilder, SessionError};
pub use signature::{Signature, SignatureBounds, input_signature, output_signature};
pub use surface::{
    AutoDecision, Control, Format, Guidance, PromptSection, ProviderNames, Recovered, Surface,
    Target, ToolDefinition, Vocabulary,
};
pub use telemetry::SessionLog;

/// The `toolsearch` command line: parses `std::env::args`, runs the command, and returns the
/// process exit code (0 ok, 1 failed or refused, 2 usage).
pub fn run_cli() -> std::process::ExitCode {
    cli::main()
}

#[cfg(feature = "fuzzing")]
#[doc(hidden)]
pub mod fuzzing;

/// Runs a role of this binary if this process was started as one: the sandbox's zygote, or the
/// supervisor of an MCP upstream (`mcp/supervise.rs`).
///
/// Call it FIRST in `main()`, before any Tokio runtime or thread exists: both roles must stay
/// single-threaded. Returns `Some(exit code)` when argv\[1\] named a role (which has then run to
/// completion), `None` otherwise — and then this executable is known to run upstream
/// supervisors, so [`Upstreams::start`] puts one between the gateway and every stdio server.
pub fn dispatch_role() -> Option<std::process::ExitCode> {
    if std::env::args_os()
        .nth(1)
        .is_some_and(|role| role == mcp::supervise::ROLE)
    {
        return Some(mcp::supervise::supervisor_main());
    }
    let code = sandbox::dispatch_role();
    if code.is_none() {
        mcp::supervise::mark_available();
    }
    code
}
