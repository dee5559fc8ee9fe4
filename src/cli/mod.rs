//! The command line: parse, build, dispatch on a subcommand, map errors to exit codes.
//!
//! Exit codes: 0 ok, 1 failed or refused, 2 usage. Skipped catalog lines are reported on stderr
//! with a count and do not change the exit code unless nothing loaded at all.
//!
//! Every command that touches the call path is an adapter over a [`Session`]: it loads the
//! config, catalog and policy the flags name, builds the session, and renders its answers. No
//! command builds a gateway, surface or sandbox supervisor itself, or reads config values.

mod code;
mod eval;
mod surface;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use serde_json::{Value, json};

use crate::catalog::{CatalogSnapshot, Descriptor, Source, file};
use crate::config::Mode;
use crate::policy::Policy;
use crate::session::{Reply, Session, SessionBuilder};

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
    /// Measure search quality on a catalog and a query file.
    Eval(EvalArgs),
    /// Benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Code cells doing search + describe + call on the demo catalog: warm pool, cold fork, and a
    /// Node.js child per cell (the reference architecture), in the same run.
    Cells(code::BenchCellsArgs),
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
    /// What to find, in a few English words.
    query: String,
    /// How many hits (default from the config: 8, max 20; local profile 5, max 10).
    #[arg(long)]
    limit: Option<i64>,
    #[command(flatten)]
    catalog: CatalogArgs,
    #[command(flatten)]
    config: ConfigArgs,
    /// Print JSON (an array of hits).
    #[arg(long)]
    json: bool,
    /// Show each hit's score and whether it matched a literal term.
    #[arg(long)]
    explain: bool,
}

#[derive(Debug, Args)]
struct DescribeArgs {
    /// Tool ids or names.
    #[arg(required = true)]
    ids: Vec<String>,
    #[command(flatten)]
    catalog: CatalogArgs,
    #[command(flatten)]
    config: ConfigArgs,
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
    catalog: CatalogArgs,
    #[command(flatten)]
    config: ConfigArgs,
    /// Approve tools that require approval when their id or name matches this glob
    /// (repeatable); others are denied.
    #[arg(long = "approve", value_name = "GLOB")]
    approve: Vec<String>,
    /// Print the envelope (or the error) as JSON.
    #[arg(long)]
    json: bool,
}

#[derive(Debug, Args)]
struct EvalArgs {
    /// The catalog file whose lines' ids the gold ids refer to.
    #[arg(long, value_name = "FILE")]
    catalog: Option<PathBuf>,
    /// Queries: JSONL of {"qid", "query", "gold": [ids]}.
    #[arg(long, value_name = "FILE")]
    queries: PathBuf,
    /// Print one JSON object with queries, recall@1, recall@5, recall@10, ndcg@10, mrr.
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
            eprintln!("toolsearch: {error:#}");
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
        Command::Bench(BenchCommand::Cells(args)) => code::bench_cells(args),
        Command::Eval(args) => eval::run(args.catalog.as_deref(), &args.queries, args.json),
    }
}

/// Loads the catalog the arguments name (or the demo catalog), reporting skipped lines.
pub(crate) fn load_catalog(args: &CatalogArgs) -> Result<CatalogSnapshot> {
    if args.catalogs.is_empty() {
        return default_catalog();
    }
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
        let loaded = file::load(path, source)?;
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

/// A session builder over what the flags name: the config (and profile), the catalog and the
/// policy. Commands add what only they know (a mode, approvals, the worker binary).
pub(crate) fn session(config: &ConfigArgs, catalog: &CatalogArgs) -> Result<SessionBuilder> {
    let config = config.load()?;
    Ok(Session::builder(config)
        .catalog(load_catalog(catalog)?)
        .policy(load_policy(catalog)?))
}

/// Builds a session and runs `body` with it on a current-thread runtime; the run is finished
/// (`run_end`, sandbox stopped) afterwards.
pub(crate) fn with_session<T>(
    builder: SessionBuilder,
    body: impl AsyncFnOnce(&Session) -> T,
) -> Result<T> {
    runtime()?.block_on(async move {
        let session = builder.build().await?;
        let out = body(&session).await;
        session.finish().await;
        Ok(out)
    })
}

/// The model-facing error message of a failed reply (for stderr).
fn reply_message(reply: &Reply) -> String {
    let body = reply.body();
    body["error"]["message"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| body.to_string())
}

fn search(args: SearchArgs) -> Result<ExitCode> {
    // Searching needs no sandbox: the structured controls' session, with the config's limits.
    let builder = session(&args.config, &args.catalog)?.mode(Mode::Tools);
    let limit = args.limit.map(Value::from);
    let explained = with_session(builder, async |session| {
        session.explain(&args.query, limit.as_ref())
    })?;
    let explained = match explained {
        Ok(explained) => explained,
        Err(reply) => bail!(reply_message(&reply)),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        let hits: Vec<Value> = explained
            .iter()
            .map(|(hit, r)| {
                let mut value = serde_json::to_value(hit).unwrap_or_default();
                if args.explain {
                    value["score"] = json!(r.score);
                    value["exact"] = json!(r.exact);
                    value["literal"] = json!(r.literal);
                }
                value
            })
            .collect();
        writeln!(out, "{}", serde_json::to_string_pretty(&hits)?)?;
        return Ok(ExitCode::SUCCESS);
    }
    if explained.is_empty() {
        writeln!(out, "no tools match {:?}", args.query)?;
        return Ok(ExitCode::SUCCESS);
    }
    for (rank, (hit, r)) in explained.iter().enumerate() {
        writeln!(out, "{:>2}. {}  [{}]", rank + 1, hit.id, hit.source)?;
        if !hit.description.is_empty() {
            writeln!(out, "    {}", hit.description)?;
        }
        writeln!(out, "    input: {}", hit.input)?;
        if let Some(output) = &hit.output {
            writeln!(out, "    output: {output}")?;
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
    Ok(ExitCode::SUCCESS)
}

fn describe(args: DescribeArgs) -> Result<ExitCode> {
    let builder = session(&args.config, &args.catalog)?.mode(Mode::Tools);
    let replies = with_session(builder, async |session| {
        args.ids
            .iter()
            .map(|id| session.describe(&Value::String(id.clone())))
            .collect::<Vec<Reply>>()
    })?;
    let mut described = Vec::new();
    let mut failed = false;
    for reply in &replies {
        match reply {
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
            writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        }
    } else {
        for d in &described {
            let text = |key: &str| d[key].as_str().unwrap_or_default().to_string();
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
                serde_json::to_string_pretty(&d["input_schema"])?.replace('\n', "\n  ")
            )?;
            if let Some(schema) = d.get("output_schema").filter(|s| !s.is_null()) {
                writeln!(
                    out,
                    "  output_schema: {}",
                    serde_json::to_string_pretty(schema)?.replace('\n', "\n  ")
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
    let builder = session(&args.config, &args.catalog)?
        // The CLI words errors like the structured controls it mirrors.
        .mode(Mode::Tools)
        .approvals(std::sync::Arc::new(approvals));
    let request = json!({"id": args.id, "args": call_args});
    let reply = with_session(builder, async |session| session.call(&request).await)?;
    let mut out = std::io::stdout().lock();
    match &reply {
        Reply::Ok(envelope) => {
            if args.json {
                writeln!(out, "{}", serde_json::to_string_pretty(envelope)?)?;
            } else {
                writeln!(
                    out,
                    "{}  [{}]",
                    envelope["tool"]["id"].as_str().unwrap_or_default(),
                    envelope["tool"]["source"].as_str().unwrap_or_default()
                )?;
                if let Some(text) = envelope["result"]["text"].as_str() {
                    writeln!(out, "{text}")?;
                }
                if let Some(details) = envelope["result"].get("details") {
                    writeln!(out, "{}", serde_json::to_string_pretty(details)?)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Reply::ClientCall(_) | Reply::Failed { .. } => {
            let error = match &reply {
                Reply::ClientCall(call) => json!({"error": {
                    "kind": "client_tool",
                    "message": format!("{} is a client tool: the application runs it, not the gateway", call.tool.id),
                }}),
                other => other.body(),
            };
            if args.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&error)?)?;
            }
            eprintln!(
                "toolsearch: {}",
                error["error"]["message"].as_str().unwrap_or_default()
            );
            Ok(ExitCode::from(1))
        }
    }
}
