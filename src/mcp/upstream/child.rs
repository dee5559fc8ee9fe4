//! A stdio server's process: started with only its configured environment, in its own process
//! group, under the supervisor process when there is one ([`crate::mcp::supervise`]), its
//! stderr drained into the tail; the handshake over its pipes; killing it with its group.
//!
//! Never does: list tools or call them (the connection is handed back to the upstream).

use std::os::fd::AsRawFd;

use rmcp::ClientServiceExt;
use rmcp::service::{RoleClient, RunningService};

use super::stderr::{drain_stderr, exit_reason};
use super::{Events, Upstream, UpstreamError};
use crate::mcp::transport::StdioClient;

/// A child process in its own process group; dropping it kills the whole group — or, for a
/// supervised server, makes its supervisor kill every descendant ([`crate::mcp::supervise`]).
pub(super) struct ChildGroup {
    pub(super) child: tokio::process::Child,
    pgid: Option<i32>,
    /// The write end of a supervisor's watch pipe: closing it (or the gateway's death) makes
    /// the supervisor kill the server and all its descendants, then exit.
    watch: Option<std::os::fd::OwnedFd>,
    /// The task draining its stderr into the tail ([`drain_stderr`]).
    pub(super) stderr: Option<tokio::task::JoinHandle<()>>,
}

impl ChildGroup {
    fn kill(&mut self) {
        if let Some(watch) = self.watch.take() {
            // Never SIGKILL a supervisor: it could not kill the server's descendants then.
            drop(watch);
            if let Some(pid) = self.child.id().and_then(|id| i32::try_from(id).ok()) {
                // SAFETY: SIGTERM to our own child, not yet reaped (so the pid is still ours).
                unsafe {
                    libc::kill(pid, libc::SIGTERM);
                }
            }
            return;
        }
        if let Some(pgid) = self.pgid.take() {
            // SAFETY: killpg on the group this child leads; harmless if it is already gone.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
        let _ = self.child.start_kill();
    }
}

impl Drop for ChildGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Upstream {
    /// Starts the stdio server `command` and shakes hands over its pipes.
    pub(super) async fn start_stdio(
        &self,
        events: Events,
        command: &str,
        args: &[String],
        env: &std::collections::BTreeMap<String, String>,
        cwd: Option<&std::path::Path>,
    ) -> Result<(RunningService<RoleClient, Events>, ChildGroup), UpstreamError> {
        // Supervised: `toolsearch ROLE <watch fd> <program> <argv[0]> args…`, the watch
        // pipe's read end inherited by the supervisor only.
        let watch = match &self.supervisor {
            Some(_) => Some(watch_pipe().map_err(UpstreamError::SupervisorPipe)?),
            None => None,
        };
        let mut cmd = match (&self.supervisor, &watch) {
            (Some(binary), Some((read, _))) => {
                let mut cmd = tokio::process::Command::new(binary);
                cmd.arg(crate::mcp::supervise::ROLE)
                    .arg(read.as_raw_fd().to_string())
                    .arg(resolve_program(command, env))
                    .arg(command)
                    .args(args);
                cmd
            }
            _ => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(args);
                cmd
            }
        };
        cmd.env_clear()
            .envs(env)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .process_group(0)
            .kill_on_drop(watch.is_none());
        if let Some(cwd) = cwd {
            cmd.current_dir(cwd);
        }
        let inherited = watch.as_ref().map(|(read, _)| read.as_raw_fd());
        // SAFETY: only async-signal-safe calls between fork and exec.
        unsafe {
            cmd.pre_exec(move || {
                match inherited {
                    // The supervisor keeps the watch pipe across exec; it must not get
                    // PDEATHSIG (it would die before it killed the server's descendants).
                    Some(fd) => {
                        if libc::fcntl(fd, libc::F_SETFD, 0) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                    }
                    // The child dies with the gateway even when the gateway is
                    // SIGKILLed.
                    None => {
                        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                    }
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(|source| UpstreamError::Spawn {
            command: command.to_string(),
            source,
        })?;
        let watch = watch.map(|(_read, write)| write);
        let pgid = child.id().and_then(|id| i32::try_from(id).ok());
        let stdout = child.stdout.take();
        let stdin = child.stdin.take();
        let stderr = child.stderr.take().map(|stderr| {
            tokio::spawn(drain_stderr(
                stderr,
                self.stderr.clone(),
                self.config.name.clone(),
            ))
        });
        let mut group = ChildGroup {
            child,
            pgid,
            watch,
            stderr,
        };
        let (Some(stdout), Some(stdin)) = (stdout, stdin) else {
            return Err(UpstreamError::NoPipes);
        };
        if let Ok(mut slot) = self.violation.lock() {
            *slot = None;
        }
        let transport = StdioClient::new(
            stdout,
            stdin,
            format!("the MCP server {:?}", self.config.name),
            self.violation.clone(),
        );
        let service = match events
            .serve_with_lifecycle(transport, super::lifecycle(self.config.protocol))
            .await
        {
            Ok(service) => service,
            Err(e) => {
                if let Some(cut) = self.cut() {
                    return Err(UpstreamError::Cut(cut));
                }
                let exit = exit_reason(Some(&mut group)).await;
                return Err(UpstreamError::Handshake {
                    detail: crate::config::input::echo(&e.to_string()).to_string(),
                    exit,
                });
            }
        };
        Ok((service, group))
    }
}

/// A pipe for a supervisor to watch: (read end, write end), both close-on-exec (the read end is
/// made inheritable in the supervisor's child only).
fn watch_pipe() -> Result<(std::os::fd::OwnedFd, std::os::fd::OwnedFd), std::io::Error> {
    use std::os::fd::FromRawFd;
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the array with two new descriptors, owned from here on.
    unsafe {
        if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok((
            std::os::fd::OwnedFd::from_raw_fd(fds[0]),
            std::os::fd::OwnedFd::from_raw_fd(fds[1]),
        ))
    }
}

/// The program a stdio server's `command` names, found as the gateway would find it: a path
/// with a `/` as given, else the first executable of that name in the server's configured
/// `PATH`, else in the gateway's own. (The supervisor runs with the server's environment, which
/// usually has no `PATH` at all.) Unfound: the name as given, and the supervisor reports it.
fn resolve_program(
    command: &str,
    env: &std::collections::BTreeMap<String, String>,
) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    if command.contains('/') {
        return std::path::PathBuf::from(command);
    }
    let path = env
        .get("PATH")
        .map(std::ffi::OsString::from)
        .or_else(|| std::env::var_os("PATH"))
        .unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|candidate| {
            std::fs::metadata(candidate)
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .unwrap_or_else(|| std::path::PathBuf::from(command))
}
