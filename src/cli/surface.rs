//! `toolsearch surface`: what a provider request carries in each mode.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, ValueEnum};

use super::{CatalogArgs, ConfigArgs, load_catalog, load_policy, runtime};
use crate::config::Mode;
use crate::gateway::Gateway;
use crate::surface::{CodeAvailability, Format, Surface, SurfaceOptions};

#[derive(Debug, Clone, Copy, ValueEnum)]
enum ModeArg {
    Direct,
    Tools,
    Directory,
    Code,
    Auto,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum FormatArg {
    Openai,
    Anthropic,
}

#[derive(Debug, Args)]
pub(super) struct SurfaceArgs {
    /// The mode (default: the config's, else code).
    #[arg(long, value_enum)]
    mode: Option<ModeArg>,
    /// Tool definition format.
    #[arg(long, value_enum, default_value = "openai")]
    format: FormatArg,
    /// The provider's context window in tokens (bounds the directory and auto mode).
    #[arg(long, value_name = "N")]
    context_tokens: Option<usize>,
    #[command(flatten)]
    catalog: CatalogArgs,
    #[command(flatten)]
    config: ConfigArgs,
    /// Print one JSON object: mode, declared_tools, request_bytes, tools, system_prompt, …
    #[arg(long)]
    json: bool,
    /// The binary that runs code-mode workers (default: this executable).
    #[arg(long, hide = true)]
    worker_binary: Option<PathBuf>,
}

/// Whether a code-mode worker can start here.
pub(super) fn probe_code(binary: Option<&PathBuf>) -> CodeAvailability {
    let binary = match binary {
        Some(path) => path.clone(),
        None => match std::env::current_exe() {
            Ok(path) => path,
            Err(error) => return CodeAvailability::Unavailable(error.to_string()),
        },
    };
    match runtime() {
        Ok(rt) => rt.block_on(CodeAvailability::probe(&binary)),
        Err(error) => CodeAvailability::Unavailable(error.to_string()),
    }
}

pub(super) fn surface(args: SurfaceArgs) -> Result<ExitCode> {
    let mut config = args.config.load()?;
    if let Some(mode) = args.mode {
        config.mode = match mode {
            ModeArg::Direct => Mode::Direct,
            ModeArg::Tools => Mode::Tools,
            ModeArg::Directory => Mode::Directory,
            ModeArg::Code => Mode::Code,
            ModeArg::Auto => Mode::Auto,
        };
    }
    let format = match args.format {
        FormatArg::Openai => Format::OpenAi,
        FormatArg::Anthropic => Format::Anthropic,
    };
    let snapshot = load_catalog(&args.catalog)?;
    let policy = load_policy(&args.catalog)?;
    let gateway = Gateway::builder(snapshot)
        .policy(policy)
        .settings(crate::gateway::GatewaySettings {
            search_limits: config.search_limits,
            ..Default::default()
        })
        .build()?;
    let might_run_code = config.mode == Mode::Code
        || (config.mode == Mode::Auto && config.auto_deferred_mode == Mode::Code);
    let code = if might_run_code {
        probe_code(args.worker_binary.as_ref())
    } else {
        CodeAvailability::Available
    };
    let surface = match Surface::build(
        &gateway,
        &SurfaceOptions {
            config,
            context_tokens: args.context_tokens,
            code,
        },
    ) {
        Ok(surface) => surface,
        Err(error) => bail!(error),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(
            out,
            "{}",
            serde_json::to_string_pretty(&surface.to_json(format))?
        )?;
        return Ok(ExitCode::SUCCESS);
    }
    writeln!(
        out,
        "mode: {} (requested {})",
        surface.mode, surface.requested_mode
    )?;
    if let Some(reason) = &surface.fallback {
        writeln!(out, "fallback: {reason}")?;
    }
    if let Some(decision) = &surface.auto {
        writeln!(
            out,
            "auto: {} tools, ~{} schema tokens (limits {} tools, {} tokens) → {}",
            decision.tools,
            decision.schema_tokens,
            decision.max_tools,
            decision.max_schema_tokens,
            decision.chosen
        )?;
    }
    writeln!(out, "declared tools: {}", surface.tools.len())?;
    writeln!(out, "request bytes: {}", surface.request_bytes(format))?;
    let names: Vec<&str> = surface
        .tools
        .iter()
        .map(|t| t.name.as_str())
        .take(40)
        .collect();
    writeln!(
        out,
        "tools: {}{}",
        names.join(", "),
        if surface.tools.len() > 40 {
            ", …"
        } else {
            ""
        }
    )?;
    let prompt = surface.system_prompt();
    if !prompt.is_empty() {
        writeln!(out, "--- system prompt ---\n{prompt}")?;
    }
    Ok(ExitCode::SUCCESS)
}
