//! MCP both ways (SPEC R-13): upstream MCP servers as tool sources, and a [`Session`] served as
//! an MCP server in front of them.
//!
//! # Names and trust (read this before the code)
//! - A configured server's name (`mcp.servers.<name>`, 1–64 of `[A-Za-z0-9_-]`) is the owner of
//!   its tools: each tool is the catalog entry `mcp:<name>:<tool>`, source `mcp`, **untrusted**
//!   its hit says `input: "unknown"`, its schema is kept as given (even when it
//!   is not a valid JSON Schema), never indexed, never validated by the gateway (the server is
//!   its own execution boundary), never in the directory or the system prompt; the namespace
//!   index shows only the server's name and count.
//! - `<tool>` is the upstream's name when it satisfies MCP's rule (1–128 of `[A-Za-z0-9_.-]`),
//!   else a reversible escape of it ([`names`]); the raw name is what the upstream receives.
//!   Provider names are derived from the catalog name by the surface as for every tool.
//! - A tool annotated `destructiveHint: true` without `readOnlyHint: true` requires approval
//!   (fail closed: without an approval handler it is denied); `approval` per server changes
//!   that ("always", "never").
//!
//! # Upstreams ([`Upstreams`], [`upstream`])
//! Every server starts concurrently, each bounded by its own `startupTimeoutMs`; one slow or
//! broken server never delays another's tools. A server that fails to start or dies is marked
//! down with the reason: its tools — and any `mcp:<name>:…` id, listed or not — answer with the
//! outage message naming it and the rest of the catalog keeps working. Recovery clears
//! the outage and republishes the catalog snapshot; so does `notifications/tools/list_changed`.
//!
//! # Serving ([`serve`])
//! `toolsearch serve` runs one session as an MCP server over stdio (stdout carries only
//! JSON-RPC) or streamable HTTP (`/mcp`, loopback by default; a non-loopback bind needs a bearer
//! token). It exposes the session's surface — the three controls, or `tool_search_code`, plus
//! direct-only tools — over the union of the upstreams, catalog files and (with the `demo`
//! feature, when nothing else is configured) the demo catalog.
//!
//! Never does: decide what the model sees (the session and surface do) or run tools itself.

pub mod asking;
pub mod bounded;
pub mod front;
pub mod ingest;
pub mod names;
pub mod prompts;
pub mod resources;
pub mod serve;
pub mod supervise;
pub mod transport;
pub mod upstream;

use std::sync::{Arc, Mutex};

use tokio::sync::Notify;

pub use ingest::FilterError;
pub use upstream::{Offer, Upstream, UpstreamStatus};

use crate::catalog::{CatalogSnapshot, Descriptor};
use crate::config::McpServer;
use crate::session::Session;
use crate::sync::lock;

/// Where an upstream call's progress notifications go: `(progress, total, message)`.
pub type ProgressSink = Arc<dyn Fn(f64, Option<f64>, Option<String>) + Send + Sync>;

tokio::task_local! {
    /// The progress sink of the MCP request being served on this task, if any: an upstream
    /// call made while it is set forwards the upstream's progress notifications to it.
    pub static PROGRESS: ProgressSink;
}

/// What `serve` offers of its upstreams besides their tools.
#[derive(Clone, Default)]
pub struct Federated {
    /// Their resources and resource templates.
    pub resources: resources::Resources,
    /// Their prompts.
    pub prompts: prompts::Prompts,
}

impl Federated {
    /// What `upstreams` offer.
    pub fn of(upstreams: &Upstreams) -> Federated {
        Federated {
            resources: resources::Resources::of(upstreams),
            prompts: prompts::Prompts::of(upstreams),
        }
    }
}

/// Installs rustls's ring provider for HTTPS (upstreams and providers); idempotent.
pub fn install_tls_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// The configured MCP servers of a run, each on its own supervisor task.
pub struct Upstreams {
    servers: Vec<Arc<Upstream>>,
    changed: Arc<Notify>,
    offers: tokio::sync::broadcast::Sender<Offer>,
    tasks: Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

impl std::fmt::Debug for Upstreams {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.servers.iter()).finish()
    }
}

impl Upstreams {
    /// Starts every server concurrently (on the current Tokio runtime) and returns at once; see
    /// [`Upstreams::ready`]. A bad `enabledTools`/`disabledTools` glob is an error naming it.
    /// Each stdio server runs under a supervisor process (`mcp::supervise`) started from this
    /// executable when its `main` called `toolsearch::dispatch_role` (the `toolsearch` binary
    /// does), so that none of its descendants outlives the gateway or the server; otherwise the
    /// server is started directly (its process group is still killed when it is stopped).
    pub fn start(servers: &[McpServer]) -> Result<Upstreams, FilterError> {
        Upstreams::start_with(servers, supervise::default_binary())
    }

    /// [`Upstreams::start`] with the binary that runs the supervisor role given (a `toolsearch`
    /// binary), or `None` to start stdio servers directly.
    pub fn start_with(
        servers: &[McpServer],
        supervisor: Option<std::path::PathBuf>,
    ) -> Result<Upstreams, FilterError> {
        let changed = Arc::new(Notify::new());
        let (offers, _) = tokio::sync::broadcast::channel(upstream::OFFERS_BUFFER);
        let mut upstreams = Vec::with_capacity(servers.len());
        for server in servers {
            let filters = ingest::Filters::new(server)?;
            upstreams.push(Upstream::new(
                server.clone(),
                filters,
                changed.clone(),
                offers.clone(),
                supervisor.clone(),
            ));
        }
        let tasks = upstreams
            .iter()
            .map(|upstream| tokio::spawn(upstream.clone().run()))
            .collect();
        Ok(Upstreams {
            servers: upstreams,
            changed,
            offers,
            tasks: Mutex::new(tasks),
        })
    }

    /// The servers.
    pub fn servers(&self) -> &[Arc<Upstream>] {
        &self.servers
    }

    /// What the servers say changed besides their tools, from now on.
    pub fn offers(&self) -> tokio::sync::broadcast::Receiver<Offer> {
        self.offers.subscribe()
    }

    /// Whether no server is configured.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }

    /// Waits until every server has either listed its tools or failed its first start (each
    /// bounded by its own `startupTimeoutMs`, all concurrently).
    pub async fn ready(&self) {
        for server in &self.servers {
            let mut status = server.watch_status();
            let _ = status.wait_for(|s| *s != UpstreamStatus::Starting).await;
        }
    }

    /// `base` plus every server's current tools, as one snapshot.
    pub fn catalog(&self, base: &[Descriptor]) -> CatalogSnapshot {
        let mut all = base.to_vec();
        for server in &self.servers {
            all.extend(server.tools());
        }
        CatalogSnapshot::build(all)
    }

    /// Keeps `session` current: marks servers down and up and republishes the catalog
    /// (`base` plus the servers' tools) whenever a server's tools or status change. Runs until
    /// [`Upstreams::shutdown`].
    pub fn attach(&self, session: &Session, base: Vec<Descriptor>) {
        let this = UpstreamsView {
            servers: self.servers.clone(),
            changed: self.changed.clone(),
        };
        let session = session.clone();
        this.sync(&session, &base);
        let task = tokio::spawn(async move {
            loop {
                this.changed.notified().await;
                // Let a burst of changes (status, then tools) settle into one snapshot.
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                this.sync(&session, &base);
            }
        });
        lock(&self.tasks).push(task);
    }

    /// Stops every server (killing each child's process group) and the republishing task.
    pub async fn shutdown(&self) {
        for server in &self.servers {
            server.stop();
        }
        let tasks: Vec<_> = lock(&self.tasks).drain(..).collect();
        for task in tasks {
            task.abort();
            let _ = task.await;
        }
    }
}

impl Drop for Upstreams {
    fn drop(&mut self) {
        for server in &self.servers {
            server.stop();
        }
        for task in lock(&self.tasks).drain(..) {
            task.abort();
        }
    }
}

/// What the republishing task needs.
struct UpstreamsView {
    servers: Vec<Arc<Upstream>>,
    changed: Arc<Notify>,
}

impl UpstreamsView {
    fn sync(&self, session: &Session, base: &[Descriptor]) {
        let mut all = base.to_vec();
        for server in &self.servers {
            match server.status() {
                UpstreamStatus::Down(reason) => session.mark_server_down(server.name(), &reason),
                UpstreamStatus::Ready => session.mark_server_up(server.name()),
                UpstreamStatus::Starting | UpstreamStatus::Stopped => {}
            }
            all.extend(server.tools());
        }
        if let Err(error) = session.replace_catalog(CatalogSnapshot::build(all)) {
            tracing::warn!(%error, "the catalog could not be republished");
        }
    }
}
