//! The command line: parse, build, dispatch on a subcommand, map errors to exit codes.
//!
//! Exit codes: 0 ok, 1 failed or refused, 2 usage. Skipped catalog lines are reported on stderr
//! with a count and do not change the exit code unless nothing loaded at all.
//!
//! Every command that touches the call path is an adapter over a [`Session`]: it loads the
//! config, catalog and policy the flags name, builds the session, and renders its answers. No
//! command builds a gateway, surface or sandbox supervisor itself, or reads config values.

mod agent;
mod code;
mod serve;
mod surface;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Value, json};

use crate::catalog::{CatalogSnapshot, Descriptor, Source, file};
use crate::config::{Config, Mode};
use crate::mcp::{UpstreamStatus, Upstreams};
use crate::policy::Policy;
use crate::session::{Reply, Session, SessionBuilder};
use crate::telemetry::terminal_safe;

/// toolsearch — progressive disclosure of large tool catalogs for LLM agents.
#[derive(Debug, Parser)]
#[command(name = "toolsearch", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Rank catalog tools for a query.
    Search(SearchArgs),
    /// Show a tool's compact hit and exact schemas.
    Describe(DescribeArgs),
    /// Call a tool through the gateway's full call path.
    Call(CallArgs),
    /// Run one JavaScript cell in the sandbox against the gateway (code mode, R-8).
    Exec(code::ExecArgs),
    /// Show what a provider request carries in a mode.
    Surface(surface::SurfaceArgs),
    /// Serve the catalog (MCP servers of the config, catalog files, or the demo) as an MCP
    /// server over stdio, or streamable HTTP with --http.
    Serve(serve::ServeArgs),
    /// Measure search quality on a catalog and a query file.
    #[cfg(feature = "lab")]
    Eval(crate::lab::command::EvalArgs),
    /// Measure search quality (needs the default build).
    #[cfg(not(feature = "lab"))]
    Eval(NotBuilt),
    /// Run one prompt against an OpenAI-compatible provider, every tool call through a session.
    Agent(agent::AgentArgs),
    /// Serve the scripted OpenAI-compatible mock provider (loopback only by default).
    #[cfg(feature = "lab")]
    MockProvider(crate::lab::command::MockArgs),
    /// The scripted mock provider (needs the default build).
    #[cfg(not(feature = "lab"))]
    MockProvider(NotBuilt),
    /// Serve a tool listing over stdio, every tool a nonce-producing stub (the task suite's
    /// upstream MCP server).
    #[cfg(feature = "lab")]
    #[command(hide = true)]
    StubMcp(crate::lab::stub_mcp::StubMcpArgs),
    /// The task suite's stub MCP server (needs the default build).
    #[cfg(not(feature = "lab"))]
    #[command(hide = true)]
    StubMcp(NotBuilt),
    /// Benchmarks.
    #[cfg(feature = "lab")]
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Benchmarks (need the default build).
    #[cfg(not(feature = "lab"))]
    Bench(NotBuilt),
}

/// The arguments of a command of the measurement wing in a build without it: taken as they
/// come, so that the command answers with what it needs instead of a usage error.
#[cfg(not(feature = "lab"))]
#[derive(Debug, Args)]
struct NotBuilt {
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, hide = true)]
    rest: Vec<String>,
}

/// The answer of `bench`, `eval`, `mock-provider` and `stub-mcp` in a build without the
/// measurement wing.
#[cfg(not(feature = "lab"))]
fn not_built(command: &str) -> Result<ExitCode> {
    eprintln!(
        "toolsearch: `{command}` is part of the measurement wing, which this binary was built \
         without (cargo feature `lab`); use the default build: cargo build --release"
    );
    Ok(ExitCode::from(2))
}

#[cfg(feature = "lab")]
#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Code cells doing search + describe + call on the demo catalog: warm pool, cold fork, and a
    /// Node.js child per cell (the reference architecture), in the same run.
    Cells(crate::lab::command::BenchCellsArgs),
    /// Provider request bytes per mode: the scripted scenario on synthetic catalogs of 10 to
    /// 5,000 tools and on the reference catalogs, against the in-process mock provider.
    Payload(crate::lab::command::PayloadArgs),
    /// The scenario per mode against a real model behind any OpenAI-compatible server.
    Agent(agent::BenchAgentArgs),
    /// A load test of `serve --http` on loopback: N concurrent MCP clients doing searches,
    /// search → describe → call chains and code cells for a fixed time, then a soak of
    /// consecutive cells; throughput, p50/p99, RSS, descriptors and workers of the server.
    Serve(crate::lab::serve_load::BenchServeArgs),
    /// Per-query search latency at N tools (default 10,000, the pooled eval catalogs grown):
    /// English dev queries with and without typo tolerance and the lexicon, the same queries
    /// misspelled, non-English requests; p50 / p99 / mean of each.
    Search(crate::lab::eval::BenchSearchArgs),
}

/// What names a run's plan: the catalog and policy flags, then the config flags.
#[derive(Debug, Args, Clone)]
pub(crate) struct PlanArgs {
    #[command(flatten)]
    catalog: CatalogArgs,
    #[command(flatten)]
    config: ConfigArgs,
}

/// The binary that runs code-mode workers (a hidden flag; default: this executable).
#[derive(Debug, Args, Clone)]
pub(crate) struct WorkerArgs {
    /// The binary that runs code-mode workers (default: this executable).
    #[arg(long, hide = true)]
    worker_binary: Option<PathBuf>,
}

impl WorkerArgs {
    /// The binary the flag names, if any.
    pub(crate) fn explicit(&self) -> Option<&PathBuf> {
        self.worker_binary.as_ref()
    }

    /// The binary the flag names, else this executable.
    pub(crate) fn binary(&self) -> Result<PathBuf> {
        match &self.worker_binary {
            Some(path) => Ok(path.clone()),
            None => std::env::current_exe().context("cannot locate the toolsearch executable"),
        }
    }
}

/// The surface mode a command runs in (the order of the values is the order `--help` lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ModeArg {
    Direct,
    Tools,
    Directory,
    Code,
    Auto,
}

impl ModeArg {
    /// The surface mode this flag value names.
    fn mode(self) -> Mode {
        match self {
            ModeArg::Direct => Mode::Direct,
            ModeArg::Tools => Mode::Tools,
            ModeArg::Directory => Mode::Directory,
            ModeArg::Code => Mode::Code,
            ModeArg::Auto => Mode::Auto,
        }
    }
}

/// Configuration file and profile.
#[derive(Debug, Args, Clone)]
pub(crate) struct ConfigArgs {
    /// A JSON5 config file: {profile?, tools: {toolSearch: …}}.
    #[arg(long = "config", value_name = "FILE")]
    config: Option<PathBuf>,
    /// The profile of defaults: default or local.
    #[arg(long, value_name = "PROFILE")]
    profile: Option<String>,
}

impl ConfigArgs {
    /// The resolved configuration; clamps are reported on stderr.
    pub(crate) fn load(&self) -> Result<crate::config::Config> {
        let profile = match &self.profile {
            None => None,
            Some(name) => Some(crate::config::Profile::parse(name).ok_or_else(|| {
                anyhow::anyhow!("invalid --profile {name:?}; expected default or local")
            })?),
        };
        let config = match &self.config {
            None => crate::config::Config::for_profile(
                profile.unwrap_or(crate::config::Profile::Default),
            ),
            Some(path) => crate::config::Config::from_file(path, profile)?,
        };
        for warning in &config.warnings {
            eprintln!("toolsearch: {warning}");
        }
        Ok(config)
    }
}

/// Where tools come from and which are allowed.
#[derive(Debug, Args, Clone)]
pub(crate) struct CatalogArgs {
    /// A catalog file (JSONL, JSON array, or MCP tools/list answer); repeatable. Without it the
    /// embedded demo catalog is used.
    #[arg(long = "catalog", value_name = "FILE")]
    catalogs: Vec<PathBuf>,
    /// Load the --catalog files as untrusted tools of this source instead of trusted plugins.
    #[arg(long, value_enum, value_name = "SOURCE")]
    catalog_source: Option<CatalogSource>,
    /// A policy file.
    #[arg(long, value_name = "FILE")]
    policy: Option<PathBuf>,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum CatalogSource {
    Mcp,
    Client,
}

#[derive(Debug, Args)]
struct SearchArgs {
    /// What to find, in a few English words; a tool's name; or "select:NAME,NAME" for exactly
    /// those tools, in that order.
    query: String,
    /// How many hits (default from the config: 8, max 20; local profile 5, max 10).
    #[arg(long)]
    limit: Option<i64>,
    #[command(flatten)]
    plan: PlanArgs,
    /// Print JSON: {"hits": [...], "matched": N, "truncated": bool, "not_found"?: [...] (names
    /// of a select: query that matched no tool), "note": "...", "ranker": "lexical"|"hybrid"}.
    #[arg(long)]
    json: bool,
    /// Show each hit's score and whether it matched a literal term.
    #[arg(long)]
    explain: bool,
    #[cfg(feature = "semantic")]
    #[command(flatten)]
    semantic: crate::search::hybrid::SemanticArgs,
}

#[derive(Debug, Args)]
struct DescribeArgs {
    /// Tool ids or names.
    #[arg(required = true)]
    ids: Vec<String>,
    #[command(flatten)]
    plan: PlanArgs,
    /// Print JSON (an object, or an array for several ids).
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct CallArgs {
    /// The tool id (or an unambiguous name).
    id: String,
    /// The arguments as a JSON object.
    #[arg(long, default_value = "{}")]
    args: String,
    #[command(flatten)]
    plan: PlanArgs,
    /// Approve tools that require approval when their id or name matches this glob
    /// (repeatable); others are denied.
    #[arg(long = "approve", value_name = "GLOB")]
    approve: Vec<String>,
    /// Print the envelope (or the error) as JSON.
    #[arg(long)]
    json: bool,
}

/// Runs the CLI; returns the process exit code.
pub fn main() -> ExitCode {
    crate::telemetry::init_stderr_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(error) => {
            let code = if error.use_stderr() { 2 } else { 0 };
            let _ = error.print();
            return ExitCode::from(code);
        }
    };
    match run(cli) {
        Ok(code) => code,
        Err(error) => {
            if is_broken_pipe(&error) {
                return ExitCode::SUCCESS;
            }
            // An error can carry untrusted text (an MCP server's message, a provider's answer).
            eprintln!("toolsearch: {}", terminal_safe(&format!("{error:#}")));
            ExitCode::from(1)
        }
    }
}

fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

fn run(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Search(args) => search(args),
        Command::Describe(args) => describe(args),
        Command::Call(args) => call(args),
        Command::Exec(args) => code::exec(args),
        Command::Surface(args) => surface::surface(args),
        Command::Serve(args) => serve::serve(args),
        Command::Agent(args) => agent::agent(args),
        #[cfg(feature = "lab")]
        Command::Bench(command) => match command {
            BenchCommand::Cells(args) => crate::lab::command::bench_cells(args),
            BenchCommand::Payload(args) => crate::lab::command::bench_payload(args),
            BenchCommand::Agent(args) => agent::bench_agent(args),
            BenchCommand::Serve(args) => crate::lab::serve_load::bench_serve(args),
            BenchCommand::Search(args) => crate::lab::eval::bench_search(args),
        },
        #[cfg(feature = "lab")]
        Command::MockProvider(args) => crate::lab::command::mock_provider(args),
        #[cfg(feature = "lab")]
        Command::StubMcp(args) => crate::lab::stub_mcp::stub_mcp(args),
        #[cfg(feature = "lab")]
        Command::Eval(args) => crate::lab::command::eval(args),
        #[cfg(not(feature = "lab"))]
        Command::Bench(_) => not_built("bench"),
        #[cfg(not(feature = "lab"))]
        Command::MockProvider(_) => not_built("mock-provider"),
        #[cfg(not(feature = "lab"))]
        Command::StubMcp(_) => not_built("stub-mcp"),
        #[cfg(not(feature = "lab"))]
        Command::Eval(_) => not_built("eval"),
    }
}

/// The catalog files the arguments name, reporting skipped lines.
pub(crate) fn load_catalog(args: &CatalogArgs) -> Result<CatalogSnapshot> {
    let source = match args.catalog_source {
        None => Source::Plugin,
        Some(CatalogSource::Mcp) => Source::Mcp,
        Some(CatalogSource::Client) => Source::Client,
    };
    load_files(&args.catalogs, source)
}

/// The catalog when no `--catalog` is given: the embedded demo catalog.
#[cfg(feature = "demo")]
pub(crate) fn default_catalog() -> Result<CatalogSnapshot> {
    Ok(crate::demo::catalog())
}

/// Without the `demo` feature there is no default catalog.
#[cfg(not(feature = "demo"))]
pub(crate) fn default_catalog() -> Result<CatalogSnapshot> {
    bail!(
        "no --catalog FILE given (this build has no embedded demo catalog: it was built without the `demo` feature)"
    )
}

/// Loads catalog files as `source`; bad lines are reported on stderr and skipped.
pub(crate) fn load_files(paths: &[PathBuf], source: Source) -> Result<CatalogSnapshot> {
    let mut descriptors: Vec<Descriptor> = Vec::new();
    let mut skipped = 0;
    for path in paths {
        let loaded = file::load_catalog_file(path, source)?;
        for issue in &loaded.issues {
            eprintln!("toolsearch: {}: skipped {issue}", path.display());
        }
        skipped += loaded.issues.len();
        descriptors.extend(loaded.descriptors);
    }
    if skipped > 0 {
        eprintln!("toolsearch: skipped {skipped} catalog line(s)");
    }
    if descriptors.is_empty() {
        bail!("no tool loaded from the catalog file(s)");
    }
    let snapshot = CatalogSnapshot::build(descriptors);
    for issue in snapshot.issues() {
        eprintln!("toolsearch: {issue}");
    }
    Ok(snapshot)
}

pub(crate) fn load_policy(args: &CatalogArgs) -> Result<Policy> {
    match &args.policy {
        None => Ok(Policy::allow_all()),
        Some(path) => Ok(Policy::from_file(path)?),
    }
}

/// What the flags name for a run: the resolved config (with its MCP servers), the static part
/// of the catalog and the policy. The static catalog is the `--catalog` files; without any,
/// the demo catalog — unless the config names MCP servers, which then are the catalog.
pub(crate) struct Plan {
    config: Config,
    base: Vec<Descriptor>,
    policy: Policy,
}

impl PlanArgs {
    /// The plan of the run the flags describe.
    pub(crate) fn plan(&self) -> Result<Plan> {
        let config = self.config.load()?;
        #[cfg(not(feature = "semantic"))]
        if config.semantic.model.is_some() {
            anyhow::bail!(
                "tools.toolSearch.semantic.model needs hybrid search, which this build does not have (cargo build --release --features semantic)"
            );
        }
        let snapshot = if !self.catalog.catalogs.is_empty() {
            Some(load_catalog(&self.catalog)?)
        } else if config.mcp.is_empty() {
            Some(default_catalog()?)
        } else {
            None
        };
        let base = snapshot.map_or_else(Vec::new, |snapshot| {
            snapshot
                .tools()
                .iter()
                .chain(snapshot.direct_only())
                .cloned()
                .collect()
        });
        Ok(Plan {
            config,
            base,
            policy: load_policy(&self.catalog)?,
        })
    }
}

/// Starts the plan's MCP servers and waits until each listed its tools or failed (bounded by
/// its `startupTimeoutMs`); failures are reported on stderr.
pub(crate) async fn start_upstreams(plan: &Plan) -> Result<Upstreams> {
    let upstreams = Upstreams::start(&plan.config.mcp)?;
    upstreams.ready().await;
    for server in upstreams.servers() {
        if let UpstreamStatus::Down(reason) = server.status() {
            eprintln!(
                "toolsearch: MCP server {} is unavailable: {}",
                server.name(),
                terminal_safe(&reason)
            );
        }
        for issue in server.issues() {
            eprintln!(
                "toolsearch: MCP server {}: {}",
                server.name(),
                terminal_safe(&issue)
            );
        }
    }
    Ok(upstreams)
}

/// Builds the plan's session (`configure` adds what only the command knows: a mode, approvals,
/// the worker binary) over its static catalog and its MCP servers' tools, and keeps it current
/// while they change.
pub(crate) async fn build_session(
    plan: Plan,
    upstreams: &Upstreams,
    configure: impl FnOnce(SessionBuilder) -> SessionBuilder,
) -> Result<Session> {
    let snapshot = upstreams.catalog(&plan.base);
    let session = configure(
        Session::builder(plan.config)
            .catalog(snapshot)
            .policy(plan.policy),
    )
    .build()
    .await?;
    upstreams.attach(&session, plan.base);
    Ok(session)
}

/// Builds the plan's session and runs `body` with it on a current-thread runtime; the run is
/// finished (`run_end`, sandbox stopped, MCP servers stopped) afterwards.
pub(crate) fn with_session<T>(
    plan: Plan,
    configure: impl FnOnce(SessionBuilder) -> SessionBuilder,
    body: impl AsyncFnOnce(&Session) -> T,
) -> Result<T> {
    runtime()?.block_on(async move {
        let upstreams = start_upstreams(&plan).await?;
        let session = build_session(plan, &upstreams, configure).await?;
        let out = body(&session).await;
        session.finish().await;
        upstreams.shutdown().await;
        Ok(out)
    })
}

/// The index cache of hybrid search over `store`'s tool vectors; `background`: a new index's
/// tools are embedded in the background (it answers lexically meanwhile), else before it is
/// handed out.
#[cfg(feature = "semantic")]
fn semantic_cache(
    store: std::sync::Arc<crate::search::semantic::VectorStore>,
    background: bool,
) -> std::sync::Arc<crate::search::IndexCache> {
    std::sync::Arc::new(crate::search::IndexCache::new().with_semantic(
        crate::search::hybrid::Semantic {
            store,
            fusion: crate::search::hybrid::Fusion::default(),
            background,
        },
    ))
}

/// `builder` with hybrid search's index cache, when there is one.
#[cfg(feature = "semantic")]
fn with_index_cache(
    builder: SessionBuilder,
    cache: Option<std::sync::Arc<crate::search::IndexCache>>,
) -> SessionBuilder {
    match cache {
        Some(cache) => builder.index_cache(cache),
        None => builder,
    }
}

/// A command's set-up outcome. `--json` always prints exactly one object: there a set-up
/// failure is printed as `failure(error)` on stdout and becomes exit code 1 (the inner `Err`);
/// without `--json` the failure is the command's error.
fn setup_or_json<T>(
    setup: Result<T>,
    json: bool,
    failure: impl FnOnce(&anyhow::Error) -> Value,
) -> Result<Result<T, ExitCode>> {
    match setup {
        Ok(value) => Ok(Ok(value)),
        Err(error) if json => {
            write_json(&mut std::io::stdout().lock(), &failure(&error))?;
            Ok(Err(ExitCode::from(1)))
        }
        Err(error) => Err(error),
    }
}

/// Writes `value` as pretty-printed JSON on a line of its own.
fn write_json(out: &mut impl Write, value: &impl serde::Serialize) -> Result<()> {
    writeln!(out, "{}", serde_json::to_string_pretty(value)?)?;
    Ok(())
}

/// The model-facing error message of a failed reply (for stderr).
/// Terminal-safe: the message can carry an upstream's or a tool's text.
fn reply_message(reply: &Reply) -> String {
    let body = reply.body();
    let message = body["error"]["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| body.to_string());
    terminal_safe(&message).into_owned()
}

fn search(args: SearchArgs) -> Result<ExitCode> {
    // Searching needs no sandbox: the structured controls' session, with the config's limits.
    let plan = args.plan.plan()?;
    let limit = args.limit.map(Value::from);
    // Hybrid: the tool vectors (cached, or embedded now) are ready before the query runs.
    #[cfg(feature = "semantic")]
    let hybrid = args
        .semantic
        .open(&plan.config.semantic)?
        .map(|store| semantic_cache(store, false));
    let answered = with_session(
        plan,
        |b| {
            let b = b.mode(Mode::Tools);
            #[cfg(feature = "semantic")]
            let b = with_index_cache(b, hybrid);
            b
        },
        async |session| {
            let max = session.config().search_limits.max_limit();
            session
                .explain(&args.query, limit.as_ref())
                .map(|response| (response, max))
        },
    )?;
    let (response, max) = match answered {
        Ok(answered) => answered,
        Err(reply) => bail!(reply_message(&reply)),
    };
    let crate::search::batch::SearchResponse::Single(single) = &response else {
        bail!("one query gave a batch answer");
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        // `{"hits": [...], "matched": N, "truncated": bool, "not_found"?: [...], "note": "...",
        // "ranker": "lexical"|"hybrid"}`.
        let mut object = response.to_object(max);
        if let Some(ranker) = response.ranker() {
            object["ranker"] = json!(ranker.as_str());
        }
        if args.explain
            && let Some(hits) = object["hits"].as_array_mut()
        {
            for (value, r) in hits.iter_mut().zip(single.ranked()) {
                value["score"] = json!(r.score);
                value["exact"] = json!(r.exact);
                value["literal"] = json!(r.literal);
            }
        }
        write_json(&mut out, &object)?;
        return Ok(ExitCode::SUCCESS);
    }
    if single.hits.is_empty() && single.not_found().is_empty() {
        writeln!(out, "no tools match {:?}", terminal_safe(&args.query))?;
        return Ok(ExitCode::SUCCESS);
    }
    for (rank, (hit, r)) in single.hits.iter().zip(single.ranked()).enumerate() {
        // Catalog text may come from third parties: no escape sequence reaches the terminal.
        writeln!(
            out,
            "{:>2}. {}  [{}]",
            rank + 1,
            terminal_safe(&hit.id),
            hit.source
        )?;
        if !hit.description.is_empty() {
            writeln!(out, "    {}", terminal_safe(&hit.description))?;
        }
        writeln!(out, "    input: {}", terminal_safe(&hit.input))?;
        if let Some(output) = &hit.output {
            writeln!(out, "    output: {}", terminal_safe(output))?;
        }
        if args.explain {
            writeln!(
                out,
                "    score {:.4}{}{}",
                r.score,
                if r.exact { ", exact match" } else { "" },
                if r.literal {
                    ", literal term"
                } else {
                    ", expansion only"
                }
            )?;
        }
    }
    if let Some(note) = response.note(max) {
        writeln!(out, "{}", terminal_safe(&note))?;
    }
    Ok(ExitCode::SUCCESS)
}

fn describe(args: DescribeArgs) -> Result<ExitCode> {
    let plan = args.plan.plan()?;
    let replies = with_session(
        plan,
        |b| b.mode(Mode::Tools),
        async |session| {
            args.ids
                .iter()
                .map(|id| session.describe(&Value::String(id.clone())))
                .collect::<Vec<Reply>>()
        },
    )?;
    let mut described = Vec::new();
    let mut failed = false;
    for reply in &replies {
        match reply.unwrapped() {
            Reply::Ok(value) => described.push(value.clone()),
            other => {
                eprintln!("toolsearch: {}", reply_message(other));
                failed = true;
            }
        }
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let value = if args.ids.len() == 1 {
            described.first().cloned().unwrap_or(Value::Null)
        } else {
            Value::Array(described.clone())
        };
        if !(failed && args.ids.len() == 1) {
            write_json(&mut out, &value)?;
        }
    } else {
        for d in &described {
            let text = |key: &str| terminal_safe(d[key].as_str().unwrap_or_default()).into_owned();
            writeln!(out, "{}  [{}]", text("id"), text("source"))?;
            if !text("description").is_empty() {
                writeln!(out, "  {}", text("description"))?;
            }
            if d.get("input").is_some() {
                writeln!(out, "  input: {}", text("input"))?;
            }
            writeln!(
                out,
                "  input_schema: {}",
                terminal_safe(&serde_json::to_string_pretty(&d["input_schema"])?)
                    .replace('\n', "\n  ")
            )?;
            if let Some(schema) = d.get("output_schema").filter(|s| !s.is_null()) {
                writeln!(
                    out,
                    "  output_schema: {}",
                    terminal_safe(&serde_json::to_string_pretty(schema)?).replace('\n', "\n  ")
                )?;
            }
        }
    }
    Ok(if failed {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// A current-thread runtime for one CLI command.
pub(crate) fn runtime() -> Result<tokio::runtime::Runtime> {
    Ok(tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?)
}

fn call(args: CallArgs) -> Result<ExitCode> {
    let call_args: Value = serde_json::from_str(&args.args)
        .with_context(|| format!("--args is not valid JSON: {}", args.args))?;
    let approvals =
        crate::gateway::GlobApprovals::new(&args.approve).map_err(anyhow::Error::msg)?;
    let plan = args.plan.plan()?;
    let reply = with_session(
        plan,
        // The CLI words errors like the structured controls it mirrors.
        |b| {
            b.mode(Mode::Tools)
                .approvals(std::sync::Arc::new(approvals))
        },
        async |session| session.call_tool(&args.id, call_args).await,
    )?;
    let mut out = std::io::stdout().lock();
    let reply = reply.unwrapped().clone();
    match &reply {
        Reply::Done(envelope) => {
            let envelope = envelope.to_json();
            if args.json {
                write_json(&mut out, &envelope)?;
            } else {
                writeln!(
                    out,
                    "{}  [{}]",
                    terminal_safe(envelope["tool"]["id"].as_str().unwrap_or_default()),
                    envelope["tool"]["source"].as_str().unwrap_or_default()
                )?;
                if let Some(text) = envelope["result"]["text"].as_str() {
                    writeln!(out, "{}", terminal_safe(text))?;
                }
                if let Some(details) = envelope["result"].get("details") {
                    writeln!(
                        out,
                        "{}",
                        terminal_safe(&serde_json::to_string_pretty(details)?)
                    )?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Reply::ClientCall(_)
        | Reply::Ok(_)
        | Reply::Failed { .. }
        | Reply::Recovered { .. }
        | Reply::Searched(_) => {
            let error = match &reply {
                Reply::ClientCall(call) => json!({"error": {
                    "kind": "client_tool",
                    "message": format!("{} is a client tool: the application runs it, not the gateway", call.tool.id),
                }}),
                other => other.body(),
            };
            if args.json {
                write_json(&mut out, &error)?;
            }
            eprintln!(
                "toolsearch: {}",
                error["error"]["message"].as_str().unwrap_or_default()
            );
            Ok(ExitCode::from(1))
        }
    }
}
