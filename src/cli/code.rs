//! `toolsearch exec`: one code cell against a session.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Result, bail};
use clap::Args;

use super::{PlanArgs, WorkerArgs, setup_or_json, with_session, write_json};
use crate::config::Mode;
// A cell file or stdin is read up to this bound; the sandbox's own, smaller `code_bytes` limit
// then applies with its own error.
use crate::config::input::MAX_CELL_SOURCE_BYTES;
use crate::gateway::GlobApprovals;

#[derive(Debug, Args)]
pub(super) struct ExecArgs {
    /// A JavaScript file holding the cell body (or `-` for stdin).
    #[arg(
        value_name = "FILE.js",
        conflicts_with = "eval",
        required_unless_present = "eval"
    )]
    file: Option<PathBuf>,
    /// The cell body given inline.
    #[arg(short = 'e', long = "eval", value_name = "CODE")]
    eval: Option<String>,
    #[command(flatten)]
    plan: PlanArgs,
    /// Wall-clock limit in milliseconds (clamped to 1,000–60,000; default from the config,
    /// 10,000).
    #[arg(long, value_name = "N")]
    timeout_ms: Option<u64>,
    /// Approve tools that require approval when their id or name matches this glob.
    #[arg(long = "approve", value_name = "GLOB")]
    approve: Vec<String>,
    /// Print exactly one JSON object: {ok, value | error: {kind, message}, logs, telemetry}.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    worker: WorkerArgs,
}

fn read_code(args: &ExecArgs) -> Result<String> {
    Ok(match (&args.eval, &args.file) {
        (Some(code), _) => code.clone(),
        (None, Some(path)) if path.as_os_str() == "-" => {
            let mut code = String::new();
            std::io::Read::read_to_string(
                &mut std::io::Read::take(std::io::stdin(), MAX_CELL_SOURCE_BYTES + 1),
                &mut code,
            )?;
            if code.len() as u64 > MAX_CELL_SOURCE_BYTES {
                bail!(
                    "the cell on stdin is larger than the limit of {MAX_CELL_SOURCE_BYTES} bytes"
                );
            }
            code
        }
        (None, Some(path)) => {
            crate::config::input::read_text(path, MAX_CELL_SOURCE_BYTES, "cell file")
                .map_err(anyhow::Error::msg)?
        }
        (None, None) => bail!("give a FILE.js or -e CODE"),
    })
}

pub(super) fn exec(args: ExecArgs) -> Result<ExitCode> {
    // Everything before the cell runs is set-up; its failures are set-up failures.
    let prepared = (|| {
        let code = read_code(&args)?;
        let approvals = GlobApprovals::new(&args.approve).map_err(anyhow::Error::msg)?;
        let binary = args.worker.binary()?;
        let plan = args.plan.plan()?;
        let timeout = args.timeout_ms.map(std::time::Duration::from_millis);
        with_session(
            plan,
            // A cell always runs in code mode; one cell: fork on demand rather than keep a pool.
            |b| {
                b.mode(Mode::Code)
                    .warm_pool(0)
                    .worker_binary(binary)
                    .approvals(Arc::new(approvals))
            },
            async |session| session.run_cell(&code, timeout).await,
        )
    })();
    let failure = |error: &anyhow::Error| {
        serde_json::json!({
            "ok": false,
            "error": {"kind": "setup", "message": format!("{error:#}")},
            "logs": [],
        })
    };
    let result = match setup_or_json(prepared, args.json, failure)? {
        Ok(result) => result,
        Err(code) => return Ok(code),
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        write_json(&mut out, &result.to_json())?;
    } else {
        for line in &result.logs {
            writeln!(out, "[{:?}] {}", line.level, line.text)?;
        }
        if result.logs_truncated {
            writeln!(out, "[logs truncated]")?;
        }
        match &result.value {
            Some(value) if result.outcome.is_ok() => write_json(&mut out, value)?,
            _ => writeln!(
                out,
                "error ({}): {}",
                result.outcome.kind(),
                result.outcome.message()
            )?,
        }
    }
    Ok(if result.outcome.is_ok() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}
