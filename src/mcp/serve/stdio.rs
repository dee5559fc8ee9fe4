//! Serving over stdin/stdout, and the signal that ends serving (SIGTERM or Ctrl-C).
//!
//! Never does: print anything but JSON-RPC on stdout (logs go to stderr).

use std::time::Duration;

use super::handler::Handler;
use super::{ServeError, ServeOptions};
use crate::mcp::Federated;
use crate::session::Session;

/// Resolves on SIGTERM or Ctrl-C.
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = terminate => {}
    }
}

/// Serves `session` over stdin/stdout until the client disconnects or a signal arrives.
pub async fn serve_stdio(
    session: Session,
    federated: Federated,
    options: &ServeOptions,
) -> Result<(), ServeError> {
    use rmcp::ServiceExt;
    let handler = Handler::new(session, federated, options);
    // The client's messages are bounded like an upstream's (`super::bounded`): past a bound the
    // stream is cut with an error naming it.
    let stdin = crate::mcp::bounded::Bounded::new(
        tokio::io::stdin(),
        "the MCP client",
        crate::mcp::bounded::Violation::default(),
    );
    let running = match handler.clone().serve((stdin, tokio::io::stdout())).await {
        Ok(running) => running,
        // The client left before initializing (stdin closed): nothing to serve, not a failure.
        Err(rmcp::service::ServerInitializeError::ConnectionClosed(_)) => {
            tracing::info!("the MCP client closed stdin before initializing");
            return Ok(());
        }
        Err(e) => return Err(ServeError::Stdio(e.to_string())),
    };
    let token = running.cancellation_token();
    let waiting = running.waiting();
    tokio::pin!(waiting);
    tokio::select! {
        _ = &mut waiting => {}
        _ = shutdown_signal() => {
            // New calls are refused; those in flight finish (within the grace period) before
            // the connection is cancelled.
            let started = tokio::time::Instant::now();
            tokio::select! {
                _ = &mut waiting => return Ok(()),
                left = handler.drain(options.grace) => if left > 0 {
                    tracing::warn!("{left} call(s) still running after the {} s grace period were cancelled", options.grace.as_secs());
                },
            }
            token.cancel();
            let rest = options.grace.saturating_sub(started.elapsed());
            let _ = tokio::time::timeout(rest.max(Duration::from_millis(100)), &mut waiting).await;
        }
    }
    Ok(())
}
