//! The command line: parse, build, dispatch on a subcommand, map errors to exit codes.
//!
//! Exit codes: 0 ok, 1 failed or refused, 2 usage. Skipped catalog lines are reported on stderr
//! with a count and do not change the exit code unless nothing loaded at all.

mod code;
mod eval;
mod surface;

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::catalog::{CatalogSnapshot, Descriptor, Source, file};
use crate::config::SearchLimits;
use crate::policy::{Authorized, Policy};
use crate::search::{IndexCache, SearchIndex, lookup};

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
    /// How many hits (default 8, max 20).
    #[arg(long)]
    limit: Option<i64>,
    #[command(flatten)]
    catalog: CatalogArgs,
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
    /// A catalog file whose lines' ids the gold ids refer to; repeatable (merged, or paired with
    /// --queries in order under --pooled). `demo` is the embedded demo catalog, also the default.
    #[arg(long = "catalog", value_name = "FILE")]
    catalogs: Vec<PathBuf>,
    /// Queries: JSONL of {"qid", "query", "gold": [ids], "lang"?}; repeatable (one table each,
    /// plus the macro average).
    #[arg(long = "queries", value_name = "FILE", required = true)]
    queries: Vec<PathBuf>,
    /// Search every set's queries against the union of all catalogs, ids prefixed `<set>:`.
    #[arg(long)]
    pooled: bool,
    /// Turn typo tolerance off (to compare).
    #[arg(long)]
    no_typos: bool,
    /// Turn the multilingual lexicon off (to compare).
    #[arg(long)]
    no_lexicon: bool,
    /// Also print one JSON line per query on stderr: qid, query, analyzed terms, ndcg@10, hit@5,
    /// top5.
    #[arg(long)]
    per_query: bool,
    /// Print one JSON object: the metrics (recall@1/5/10, hit@1/5/10, ndcg@10, mrr), latency_us
    /// {p50, p99}; with several sets, {mode, tools, sets, macro, latency_us}; per language too
    /// when query lines carry "lang".
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
        Command::Eval(args) => eval::run(eval::EvalRequest {
            catalogs: &args.catalogs,
            queries: &args.queries,
            pooled: args.pooled,
            as_json: args.json,
            typo_tolerance: !args.no_typos,
            multilingual: !args.no_lexicon,
            per_query: args.per_query,
        }),
    }
}

/// Loads the catalog the arguments name (or the demo catalog), reporting skipped lines.
pub(crate) fn load_catalog(args: &CatalogArgs) -> Result<CatalogSnapshot> {
    if args.catalogs.is_empty() {
        return Ok(crate::demo::catalog());
    }
    let source = match args.catalog_source {
        None => Source::Plugin,
        Some(CatalogSource::Mcp) => Source::Mcp,
        Some(CatalogSource::Client) => Source::Client,
    };
    load_files(&args.catalogs, source)
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

pub(crate) fn build_index(args: &CatalogArgs) -> Result<std::sync::Arc<SearchIndex>> {
    let snapshot = load_catalog(args)?;
    let policy = load_policy(args)?;
    let view = Authorized::new(snapshot, policy);
    IndexCache::new()
        .get(&view)
        .context("building the search index")
}

fn search(args: SearchArgs) -> Result<ExitCode> {
    let index = build_index(&args.catalog)?;
    let limits = SearchLimits::default();
    let limit_value = args.limit.map(serde_json::Value::from);
    let limit = crate::search::resolve_limit(limit_value.as_ref(), limits)?;
    let ranked = index.rank(&args.query, limit);
    let hits: Vec<_> = ranked
        .iter()
        .filter_map(|r| index.hit(r.position))
        .collect();
    let mut out = std::io::stdout().lock();
    if args.json {
        if args.explain {
            let explained: Vec<serde_json::Value> = hits
                .iter()
                .zip(&ranked)
                .map(|(hit, r)| {
                    let mut value = serde_json::to_value(hit).unwrap_or_default();
                    value["score"] = serde_json::json!(r.score);
                    value["exact"] = serde_json::json!(r.exact);
                    value["literal"] = serde_json::json!(r.literal);
                    value
                })
                .collect();
            writeln!(out, "{}", serde_json::to_string_pretty(&explained)?)?;
        } else {
            writeln!(out, "{}", serde_json::to_string_pretty(&hits)?)?;
        }
        return Ok(ExitCode::SUCCESS);
    }
    if hits.is_empty() {
        writeln!(out, "no tools match {:?}", args.query)?;
        return Ok(ExitCode::SUCCESS);
    }
    for (rank, (hit, r)) in hits.iter().zip(&ranked).enumerate() {
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
    let index = build_index(&args.catalog)?;
    let mut described = Vec::new();
    let mut failed = false;
    for id in &args.ids {
        match lookup::describe(&index, id) {
            Ok(d) => described.push(d),
            Err(error) => {
                eprintln!("toolsearch: {error}");
                failed = true;
            }
        }
    }
    let mut out = std::io::stdout().lock();
    if args.json {
        let value = if args.ids.len() == 1 {
            described
                .first()
                .map(serde_json::to_value)
                .transpose()?
                .unwrap_or(serde_json::Value::Null)
        } else {
            serde_json::to_value(&described)?
        };
        if !(failed && args.ids.len() == 1) {
            writeln!(out, "{}", serde_json::to_string_pretty(&value)?)?;
        }
    } else {
        for d in &described {
            writeln!(out, "{}  [{}]", d.hit.id, d.hit.source)?;
            if !d.hit.description.is_empty() {
                writeln!(out, "  {}", d.hit.description)?;
            }
            writeln!(out, "  input: {}", d.hit.input)?;
            writeln!(
                out,
                "  input_schema: {}",
                serde_json::to_string_pretty(&d.input_schema)?.replace('\n', "\n  ")
            )?;
            if let Some(schema) = &d.output_schema {
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
    let snapshot = load_catalog(&args.catalog)?;
    let policy = load_policy(&args.catalog)?;
    let call_args: serde_json::Value = serde_json::from_str(&args.args)
        .with_context(|| format!("--args is not valid JSON: {}", args.args))?;
    let approvals =
        crate::gateway::GlobApprovals::new(&args.approve).map_err(anyhow::Error::msg)?;
    let gateway = crate::gateway::Gateway::builder(snapshot)
        .policy(policy)
        .approvals(std::sync::Arc::new(approvals))
        .build()?;
    let request = serde_json::json!({"id": args.id, "args": call_args});
    let outcome = runtime()?.block_on(gateway.call(&request));
    let mut out = std::io::stdout().lock();
    match outcome {
        crate::gateway::CallOutcome::Done(envelope) => {
            if args.json {
                writeln!(
                    out,
                    "{}",
                    serde_json::to_string_pretty(&envelope.to_json())?
                )?;
            } else {
                writeln!(out, "{}  [{}]", envelope.tool.id, envelope.tool.source)?;
                if let Some(text) = &envelope.result.text {
                    writeln!(out, "{text}")?;
                }
                if let Some(details) = &envelope.result.details {
                    writeln!(out, "{}", serde_json::to_string_pretty(details)?)?;
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        other => {
            let error = match other.into_result() {
                Err(error) => error,
                Ok(_) => bail!("unexpected call outcome"),
            };
            if args.json {
                writeln!(out, "{}", serde_json::to_string_pretty(&error.to_json())?)?;
            }
            eprintln!("toolsearch: {}", error.message);
            Ok(ExitCode::from(1))
        }
    }
}
