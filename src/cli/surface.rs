//! `toolsearch surface`: what a provider request carries in each mode.

use std::io::Write;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::{ModeArg, PlanArgs, WorkerArgs, with_session, write_json};
use crate::surface::Format;

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
    plan: PlanArgs,
    /// Print one JSON object: mode, declared_tools, request_bytes, tools, system_prompt, …
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    worker: WorkerArgs,
}

pub(super) fn surface(args: SurfaceArgs) -> Result<ExitCode> {
    let format = match args.format {
        FormatArg::Openai => Format::OpenAi,
        FormatArg::Anthropic => Format::Anthropic,
    };
    let plan = args.plan.plan()?;
    let mode = args.mode.map(ModeArg::mode);
    let configure = |mut builder: crate::session::SessionBuilder| {
        builder = builder.context_tokens(args.context_tokens).warm_pool(0);
        if let Some(mode) = mode {
            builder = builder.mode(mode);
        }
        if let Some(binary) = args.worker.explicit() {
            builder = builder.worker_binary(binary);
        }
        builder
    };
    let surface = with_session(plan, configure, async |session| session.surface())?;
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &surface.to_json(format))?;
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
