//! `toolsearch serve`: one session as an MCP server over stdio or streamable HTTP.
//!
//! stdio: stdout carries only JSON-RPC; everything else goes to stderr. `--http ADDR` serves
//! `/mcp` and `/health` instead and prints the bound URL as the first line of stdout (so a
//! script can use port 0). The process exits when the client disconnects (stdio) or on SIGTERM
//! / Ctrl-C; the session is finished (`run_end`, sandbox stopped) and every MCP server child is
//! killed with its process group before it does.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde_json::json;

use super::{PlanArgs, WorkerArgs, build_session, start_upstreams};
use crate::config::Mode;
use crate::mcp::serve::{HttpListener, ServeOptions, serve_stdio};
use crate::mcp::upstream::without_stderr;
use crate::mcp::{UpstreamStatus, Upstreams};
use crate::telemetry::SessionLog;

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ServeMode {
    Tools,
    Code,
    Directory,
    Auto,
    Direct,
}

#[derive(Debug, Args)]
pub(super) struct ServeArgs {
    #[cfg(feature = "semantic")]
    #[command(flatten)]
    semantic: crate::search::hybrid::SemanticArgs,
    /// The surface to serve (default: the config's mode, else code).
    #[arg(long, value_enum)]
    mode: Option<ServeMode>,
    /// Serve streamable HTTP at http://ADDR/mcp instead of stdio (e.g. 127.0.0.1:8765; port 0
    /// picks a free one). A non-loopback address needs --auth-token.
    #[arg(long, value_name = "ADDR")]
    http: Option<SocketAddr>,
    /// The bearer token HTTP clients must send (Authorization: Bearer TOKEN); also read from
    /// the TOOLSEARCH_AUTH_TOKEN environment variable (which keeps it out of `ps`).
    #[arg(long, value_name = "TOKEN")]
    auth_token: Option<String>,
    /// An extra Host name HTTP clients may use (repeatable; loopback names always work).
    #[arg(long = "allowed-host", value_name = "HOST")]
    allowed_hosts: Vec<String>,
    /// Live HTTP sessions at most (clients that start with `initialize`; sessionless requests of
    /// MCP 2026-07-28 hold none).
    #[arg(long, default_value_t = 64)]
    max_sessions: usize,
    /// Seconds an idle HTTP session lives.
    #[arg(long, default_value_t = 600)]
    session_idle_secs: u64,
    /// Seconds a connection has to send a complete request head, whether new or idle between
    /// requests; it is closed after that.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    header_timeout_secs: f64,
    /// Seconds a request body has to arrive once its head has (else 408).
    #[arg(long, default_value_t = 30.0, value_name = "SECS")]
    body_timeout_secs: f64,
    /// Seconds the calls in flight may finish after SIGTERM or Ctrl-C; one still running then is
    /// answered with a JSON-RPC error saying so.
    #[arg(long, default_value_t = 10.0, value_name = "SECS")]
    grace_secs: f64,
    /// Client connections at most (lowered to stay below the descriptor limit); more wait in
    /// the listen backlog until one closes.
    #[arg(long, default_value_t = 256)]
    max_connections: usize,
    /// Tools per tools/list page.
    #[arg(long, default_value_t = 100)]
    page_size: usize,
    /// Approve tools that require approval (e.g. MCP tools annotated destructive) when their id
    /// or name matches this glob (repeatable); others are denied.
    #[arg(long = "approve", value_name = "GLOB")]
    approve: Vec<String>,
    /// Append the redacted session log (JSONL) to this file.
    #[arg(long, value_name = "FILE")]
    session_log: Option<PathBuf>,
    #[command(flatten)]
    plan: PlanArgs,
    #[command(flatten)]
    worker: WorkerArgs,
}

/// A positive, finite number of seconds (at most a day) as a duration.
fn seconds(value: f64, flag: &str) -> Result<Duration> {
    if !(value.is_finite() && value > 0.0 && value <= 86_400.0) {
        anyhow::bail!("{flag} must be a number of seconds above 0 and at most 86400, not {value}");
    }
    Ok(Duration::from_secs_f64(value))
}

impl ServeMode {
    /// The surface mode this flag value names.
    fn mode(self) -> Mode {
        match self {
            ServeMode::Tools => Mode::Tools,
            ServeMode::Code => Mode::Code,
            ServeMode::Directory => Mode::Directory,
            ServeMode::Auto => Mode::Auto,
            ServeMode::Direct => Mode::Direct,
        }
    }
}

/// The serve options from the flags (the token also from `TOOLSEARCH_AUTH_TOKEN`).
fn serve_options(args: &ServeArgs) -> Result<ServeOptions> {
    Ok(ServeOptions {
        page_size: args.page_size,
        auth_token: args
            .auth_token
            .clone()
            .or_else(|| std::env::var("TOOLSEARCH_AUTH_TOKEN").ok())
            .filter(|t| !t.is_empty()),
        allowed_hosts: args.allowed_hosts.clone(),
        max_sessions: args.max_sessions,
        session_idle: Duration::from_secs(args.session_idle_secs.max(1)),
        header_timeout: seconds(args.header_timeout_secs, "--header-timeout-secs")?,
        body_timeout: seconds(args.body_timeout_secs, "--body-timeout-secs")?,
        max_connections: args.max_connections.max(1),
        grace: seconds(args.grace_secs, "--grace-secs")?,
    })
}

/// The index cache with hybrid search, when a model is configured. Each catalog snapshot's
/// tool vectors are embedded in the background (one at a time); searches are lexical until
/// they are ready, and the session log says which ranker answered.
#[cfg(feature = "semantic")]
fn hybrid_cache(
    args: &crate::search::hybrid::SemanticArgs,
    settings: &crate::config::SemanticSettings,
) -> Result<Option<Arc<crate::search::IndexCache>>> {
    Ok(args.open(settings)?.map(|store| {
        eprintln!(
            "toolsearch: hybrid search with {}; tool vectors cached in {}",
            store.embedder().model().path.display(),
            store
                .cache_dir()
                .map_or("memory only".into(), |d| d.display().to_string())
        );
        super::semantic_cache(store, true)
    }))
}

/// Prints the bound MCP endpoint: its URL as stdout's first line, both URLs on stderr.
fn announce_http(addr: SocketAddr) -> Result<()> {
    let mut out = std::io::stdout().lock();
    writeln!(out, "http://{addr}/mcp")?;
    out.flush()?;
    drop(out);
    eprintln!("toolsearch: MCP endpoint http://{addr}/mcp, health http://{addr}/health");
    Ok(())
}

/// What `/health` adds about the MCP servers: each one's state and what ingestion repaired
/// or skipped.
fn upstream_health(upstreams: Arc<Upstreams>) -> impl Fn() -> serde_json::Value + Send + Sync {
    move || {
        let servers = upstreams.servers();
        let states: serde_json::Map<_, _> = servers
            .iter()
            .map(|server| {
                let status = match server.status() {
                    UpstreamStatus::Starting => json!("starting"),
                    UpstreamStatus::Ready => json!("ready"),
                    // Never the server's own stderr (it may print secrets).
                    UpstreamStatus::Down(reason) => {
                        json!({"down": without_stderr(&reason)})
                    }
                    UpstreamStatus::Stopped => json!("stopped"),
                };
                (server.name().to_string(), status)
            })
            .collect();
        // What ingestion repaired or skipped (named issues), per server.
        let issues: serde_json::Map<_, _> = servers
            .iter()
            .filter_map(|server| {
                let issues = server.issues();
                (!issues.is_empty()).then(|| (server.name().to_string(), json!(issues)))
            })
            .collect();
        json!({"upstreams": states, "upstream_issues": issues})
    }
}

pub(super) fn serve(args: ServeArgs) -> Result<ExitCode> {
    let plan = args.plan.plan()?;
    let options = serve_options(&args)?;
    let log = match &args.session_log {
        Some(path) => SessionLog::to_file(path)
            .with_context(|| format!("cannot open the session log {}", path.display()))?,
        None => SessionLog::discard(),
    };
    let mode = args.mode.map(ServeMode::mode);
    let approvals =
        crate::gateway::GlobApprovals::new(&args.approve).map_err(anyhow::Error::msg)?;
    #[cfg(feature = "semantic")]
    let hybrid = hybrid_cache(&args.semantic, &plan.config.semantic)?;
    let worker = args.worker.binary()?;
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?
        .block_on(async move {
            // Bind first, so a bad address fails before any MCP server starts.
            let listener = match args.http {
                Some(addr) => Some(HttpListener::bind(addr, &options).await?),
                None => None,
            };
            let upstreams = Arc::new(start_upstreams(&plan).await?);
            let session = build_session(plan, &upstreams, |mut builder| {
                builder = builder
                    .session_log(log)
                    .worker_binary(worker)
                    .approvals(Arc::new(approvals));
                if let Some(mode) = mode {
                    builder = builder.mode(mode);
                }
                #[cfg(feature = "semantic")]
                let builder = super::with_index_cache(builder, hybrid);
                builder
            })
            .await?;
            eprintln!(
                "toolsearch: serving {} tool(s) in {} mode ({} declared)",
                session.telemetry()["catalog_size"],
                session.mode(),
                session.tool_definitions().len()
            );
            let served = match listener {
                Some(listener) => {
                    announce_http(listener.local_addr())?;
                    listener
                        .serve(
                            session.clone(),
                            crate::mcp::Federated::of(&upstreams),
                            &options,
                            Arc::new(upstream_health(upstreams.clone())),
                        )
                        .await
                }
                None => {
                    serve_stdio(
                        session.clone(),
                        crate::mcp::Federated::of(&upstreams),
                        &options,
                    )
                    .await
                }
            };
            session.finish().await;
            upstreams.shutdown().await;
            served?;
            anyhow::Ok(ExitCode::SUCCESS)
        })
}
