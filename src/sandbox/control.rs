//! The supervisor's side of the zygote: spawning it from a dedicated thread (below the host's
//! scheduling priority, which its workers inherit), asking it to fork, receiving sockets and
//! pidfds, tracking live workers and their exits, killing them.
//!
//! Owns: [`Zygote`] (one zygote process) and [`WorkerProcess`] (one forked worker's pid, pidfd and
//! exit report).
//! Never does: fork the host itself; spawn the zygote from a Tokio thread (`PR_SET_PDEATHSIG` fires
//! when the *thread* that forked exits, and Tokio's blocking threads exit when idle); kill a pid
//! whose exit was already reported (pid reuse).
//! Invariants: every fd received from the zygote is wrapped in an `OwnedFd` at once and is
//! close-on-exec; a live worker is in `live` from `Forked` until `Exited`; dropping [`Zygote`]
//! makes its thread shut the zygote down (the zygote kills and reaps every worker first).

use std::collections::HashMap;
use std::io::{self, IoSliceMut};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::Duration;

use nix::sys::socket::{self, AddressFamily, ControlMessageOwned, MsgFlags, SockFlag, SockType};
use tokio::io::Interest;
use tokio::io::unix::AsyncFd;
use tokio::sync::{Notify, oneshot, watch};

use super::error::SandboxError;
use super::protocol::{WorkerConfig, ZYGOTE_MSG_MAX, ZygoteEvent, ZygoteRequest};
use crate::sync::lock;
use crate::telemetry::terminal_safe;

/// How a worker ended, as the zygote reported it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WorkerExit {
    /// `exit(code)`.
    Code(i32),
    /// Killed by a signal.
    Signal(i32),
    /// The zygote went away before reporting.
    Unknown,
}

struct LiveWorker {
    pidfd: Option<Arc<OwnedFd>>,
    exit: watch::Sender<Option<WorkerExit>>,
}

/// State shared between the [`Zygote`] handle and its reader task.
struct Shared {
    ctl: AsyncFd<OwnedFd>,
    forks: Mutex<HashMap<u64, oneshot::Sender<Result<WorkerProcess, SandboxError>>>>,
    live: Mutex<HashMap<u32, LiveWorker>>,
    live_changed: Notify,
    alive: AtomicBool,
    next_token: AtomicU64,
}

enum ThreadCmd {
    Shutdown(oneshot::Sender<()>),
}

/// One zygote process and the thread that spawned (and will reap) it.
pub(crate) struct Zygote {
    pid: u32,
    shared: Arc<Shared>,
    thread: Mutex<Option<mpsc::Sender<ThreadCmd>>>,
}

/// A forked worker: its pid, socket, pidfd and exit report. Dropping it kills the process.
pub(crate) struct WorkerProcess {
    pub(crate) pid: u32,
    pub(crate) socket: Option<OwnedFd>,
    pidfd: Option<Arc<OwnedFd>>,
    exit: watch::Receiver<Option<WorkerExit>>,
}

impl WorkerProcess {
    /// SIGKILLs the worker: through its pidfd, or by pid while its exit is unreported.
    pub(crate) fn kill(&self) {
        kill_worker(self.pid, self.pidfd.as_deref(), Some(&self.exit));
    }

    /// The exit report, if it arrived.
    pub(crate) fn exited(&self) -> Option<WorkerExit> {
        *self.exit.borrow()
    }

    /// Waits up to `limit` for the exit report.
    pub(crate) async fn wait_exit(&mut self, limit: Duration) -> Option<WorkerExit> {
        let wait = self.exit.wait_for(Option::is_some);
        match tokio::time::timeout(limit, wait).await {
            Ok(Ok(v)) => *v,
            Ok(Err(_)) => Some(WorkerExit::Unknown),
            Err(_) => None,
        }
    }
}

#[cfg(test)]
impl WorkerProcess {
    /// A stand-in with no process behind it (pid 0 is never signalled) and no exit report.
    pub(crate) fn fake() -> WorkerProcess {
        let (_tx, exit) = watch::channel(None);
        WorkerProcess {
            pid: 0,
            socket: None,
            pidfd: None,
            exit,
        }
    }
}

impl Drop for WorkerProcess {
    fn drop(&mut self) {
        self.kill();
    }
}

fn kill_worker(
    pid: u32,
    pidfd: Option<&OwnedFd>,
    exit: Option<&watch::Receiver<Option<WorkerExit>>>,
) {
    if let Some(fd) = pidfd {
        // SAFETY: pidfd_send_signal on a pidfd we own; a reaped process yields ESRCH, harmlessly.
        unsafe {
            libc::syscall(
                libc::SYS_pidfd_send_signal,
                fd.as_raw_fd(),
                libc::SIGKILL,
                std::ptr::null::<libc::siginfo_t>(),
                0u32,
            )
        };
        return;
    }
    let unreported = exit.is_none_or(|e| e.borrow().is_none());
    // Never 0 or 1: kill(0) would signal our own process group, kill(1) init.
    if unreported
        && pid > 1
        && let Ok(pid) = libc::pid_t::try_from(pid)
    {
        // SAFETY: kill by pid while the zygote has not reported (so not reaped) this child.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

impl Zygote {
    /// Spawns `<binary> __sandbox-zygote` (empty environment, `nice_steps` below the caller's
    /// priority; workers inherit it) from a dedicated thread, waits for its `Hello`, and starts
    /// the reader and stderr-drain tasks.
    pub(crate) async fn spawn(binary: &Path, nice_steps: u8) -> Result<Zygote, SandboxError> {
        let (host_end, child_end) = socket::socketpair(
            AddressFamily::Unix,
            SockType::SeqPacket,
            None,
            SockFlag::SOCK_CLOEXEC,
        )
        .map_err(|e| SandboxError::io("creating the zygote control socket", e.into()))?;
        let thread_ctl = host_end
            .try_clone()
            .map_err(|e| SandboxError::io("duplicating the zygote control socket", e))?;
        let (ready_tx, ready_rx) = oneshot::channel();
        let (cmd_tx, cmd_rx) = mpsc::channel();
        let bin = binary.to_path_buf();
        std::thread::Builder::new()
            .name("sandbox-zygote".into())
            .spawn(move || zygote_thread(bin, nice_steps, child_end, thread_ctl, cmd_rx, ready_tx))
            .map_err(|e| SandboxError::io("starting the zygote thread", e))?;
        let spawned = ready_rx.await.map_err(|_| SandboxError::ZygoteGone {
            detail: "the zygote thread ended before spawning".into(),
        })?;
        let (pid, stderr) = spawned.map_err(|source| SandboxError::ZygoteSpawn {
            binary: binary.to_path_buf(),
            role: super::ZYGOTE_ROLE,
            source,
        })?;
        if let Some(stderr) = stderr {
            spawn_stderr_drain(pid, stderr);
        }
        let host_end = nonblocking(host_end)?;
        // SAFETY: an OwnedFd's descriptor stays open and unchanged until the AsyncFd drops it.
        let ctl = unsafe { AsyncFd::register(host_end) }.map_err(|e| {
            SandboxError::io("registering the zygote control socket", io::Error::from(e))
        })?;
        let zygote = Zygote {
            pid,
            shared: Arc::new(Shared {
                ctl,
                forks: Mutex::new(HashMap::new()),
                live: Mutex::new(HashMap::new()),
                live_changed: Notify::new(),
                alive: AtomicBool::new(true),
                next_token: AtomicU64::new(1),
            }),
            thread: Mutex::new(Some(cmd_tx)),
        };
        let hello = tokio::time::timeout(Duration::from_secs(10), zygote.shared.recv()).await;
        match hello {
            Ok(Ok((ZygoteEvent::Hello { .. }, _))) => {}
            Ok(Ok((other, _))) => {
                return Err(SandboxError::ZygoteGone {
                    detail: format!("expected Hello, got {other:?}"),
                });
            }
            Ok(Err(e)) => {
                return Err(SandboxError::ZygoteGone {
                    detail: format!("no Hello: {e}"),
                });
            }
            Err(_) => {
                return Err(SandboxError::ZygoteGone {
                    detail: "no Hello within 10 s".into(),
                });
            }
        }
        tokio::spawn(reader(zygote.shared.clone()));
        Ok(zygote)
    }

    /// The zygote's pid.
    pub(crate) fn pid(&self) -> u32 {
        self.pid
    }

    /// Whether the control socket is still open.
    pub(crate) fn is_alive(&self) -> bool {
        self.shared.alive.load(Ordering::SeqCst)
    }

    /// SIGKILLs a zygote that stopped answering and marks it dead at once, so the next fork
    /// starts a new one. Its workers die with it (`PR_SET_PDEATHSIG`); its thread reaps it when
    /// the last handle is dropped.
    pub(crate) fn kill_stalled(&self) {
        if self.shared.alive.swap(false, Ordering::SeqCst)
            && self.pid > 1
            && let Ok(pid) = libc::pid_t::try_from(self.pid)
        {
            tracing::warn!(
                zygote = self.pid,
                "sandbox zygote stopped answering; killing it"
            );
            // SAFETY: the zygote is our child and is reaped only by its thread, which waits for
            // this handle to be dropped (or for a shutdown command): the pid is not reused yet.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    /// Asks the zygote to fork one worker; returns it once its socket arrived (not yet `Ready`).
    /// Unbounded by itself: callers bound it (see `Supervisor`). Dropping the future forgets the
    /// request (a late answer's worker is killed).
    pub(crate) async fn fork(&self, config: &WorkerConfig) -> Result<WorkerProcess, SandboxError> {
        let token = self.shared.next_token.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        lock(&self.shared.forks).insert(token, tx);
        let _forget = ForgetFork {
            shared: &self.shared,
            token,
        };
        if !self.is_alive() {
            return Err(gone("the zygote's control socket is closed"));
        }
        let request = serde_json::to_vec(&ZygoteRequest::Fork {
            token,
            config: config.clone(),
        })
        .map_err(|e| SandboxError::io("encoding a fork request", io::Error::other(e)))?;
        let sent = self
            .shared
            .ctl
            .async_io(Interest::WRITABLE, |fd| {
                socket::send(
                    fd.as_raw_fd(),
                    &request,
                    MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT,
                )
                .map_err(io::Error::from)
            })
            .await;
        if let Err(e) = sent {
            return Err(gone(&format!("sending a fork request failed: {e}")));
        }
        rx.await
            .map_err(|_| gone("the zygote closed before answering a fork request"))?
    }

    /// SIGKILLs every live worker.
    pub(crate) fn kill_all(&self) {
        for (pid, w) in lock(&self.shared.live).iter() {
            kill_worker(*pid, w.pidfd.as_deref(), Some(&w.exit.subscribe()));
        }
    }

    /// Waits until no worker is live, up to `limit`. Returns whether that happened.
    pub(crate) async fn wait_no_workers(&self, limit: Duration) -> bool {
        let deadline = tokio::time::Instant::now() + limit;
        loop {
            let notified = self.shared.live_changed.notified();
            if lock(&self.shared.live).is_empty() {
                return true;
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return lock(&self.shared.live).is_empty();
            }
        }
    }

    /// Pids of workers forked and not yet reaped.
    pub(crate) fn live_pids(&self) -> Vec<u32> {
        lock(&self.shared.live).keys().copied().collect()
    }

    /// Shuts the zygote down and waits until it exited and was reaped (it kills and reaps its
    /// workers first).
    pub(crate) async fn shutdown(&self) {
        let tx = lock(&self.thread).take();
        if let Some(tx) = tx {
            let (done_tx, done_rx) = oneshot::channel();
            if tx.send(ThreadCmd::Shutdown(done_tx)).is_ok() {
                let _ = done_rx.await;
            }
        }
    }
}

/// Removes a fork request's waiter when the request ends, answered or not.
struct ForgetFork<'a> {
    shared: &'a Shared,
    token: u64,
}

impl Drop for ForgetFork<'_> {
    fn drop(&mut self) {
        lock(&self.shared.forks).remove(&self.token);
    }
}

fn gone(detail: &str) -> SandboxError {
    SandboxError::ZygoteGone {
        detail: detail.to_owned(),
    }
}

fn nonblocking(fd: OwnedFd) -> Result<OwnedFd, SandboxError> {
    // SAFETY: fcntl flag manipulation on an fd we own.
    unsafe {
        let flags = libc::fcntl(fd.as_raw_fd(), libc::F_GETFL);
        if flags < 0 || libc::fcntl(fd.as_raw_fd(), libc::F_SETFL, flags | libc::O_NONBLOCK) < 0 {
            return Err(SandboxError::io(
                "making the zygote socket non-blocking",
                io::Error::last_os_error(),
            ));
        }
    }
    Ok(fd)
}

type Spawned = io::Result<(u32, Option<std::process::ChildStderr>)>;

/// The nice value `steps` below the calling thread's (capped at 19), or `None` for no change.
fn background_nice(steps: u8) -> Option<i32> {
    if steps == 0 {
        return None;
    }
    // getpriority returns the nice value, and -1 is a valid one: tell it from an error by errno.
    // SAFETY: __errno_location is this thread's errno slot; getpriority takes no pointers.
    let current = unsafe {
        *libc::__errno_location() = 0;
        let n = libc::getpriority(libc::PRIO_PROCESS, 0);
        if n == -1 && *libc::__errno_location() != 0 {
            return None;
        }
        n
    };
    let lowered = (current + i32::from(steps)).min(19);
    (lowered > current).then_some(lowered)
}

/// The dedicated thread: spawns the zygote, then waits for the shutdown command (or for the
/// [`Zygote`] handle to be dropped), shuts the zygote down and reaps it.
fn zygote_thread(
    binary: PathBuf,
    nice_steps: u8,
    child_end: OwnedFd,
    ctl: OwnedFd,
    commands: mpsc::Receiver<ThreadCmd>,
    ready: oneshot::Sender<Spawned>,
) {
    let parent = std::process::id();
    let nice = background_nice(nice_steps);
    let mut cmd = Command::new(&binary);
    cmd.arg(super::ZYGOTE_ROLE)
        .env_clear()
        .stdin(Stdio::from(child_end))
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    // SAFETY: the closure only makes async-signal-safe syscalls (prctl, getppid, setpriority).
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(move || {
            if libc::prctl(
                libc::PR_SET_PDEATHSIG,
                libc::SIGKILL as libc::c_ulong,
                0,
                0,
                0,
            ) != 0
            {
                return Err(io::Error::last_os_error());
            }
            if libc::getppid() as u32 != parent {
                return Err(io::Error::other("the supervisor exited during spawn"));
            }
            // Raising one's own nice value needs no privilege; should it fail, the sandbox
            // merely runs at the host's priority.
            if let Some(nice) = nice {
                libc::setpriority(libc::PRIO_PROCESS, 0, nice);
            }
            Ok(())
        });
    }
    let spawned = cmd.spawn();
    // The child's end of the control socket must not stay open here, or its death would go
    // unnoticed: the Command owns it until dropped.
    drop(cmd);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let _ = ready.send(Err(e));
            return;
        }
    };
    let stderr = child.stderr.take();
    if ready.send(Ok((child.id(), stderr))).is_err() {
        stop(&mut child, &ctl);
        return;
    }
    let done = match commands.recv() {
        Ok(ThreadCmd::Shutdown(done)) => Some(done),
        Err(_) => None,
    };
    stop(&mut child, &ctl);
    if let Some(done) = done {
        let _ = done.send(());
    }
}

/// Asks the zygote to shut down (it kills and reaps its workers), waits up to 5 s, then kills it.
fn stop(child: &mut Child, ctl: &OwnedFd) {
    if let Ok(bytes) = serde_json::to_vec(&ZygoteRequest::Shutdown) {
        let _ = socket::send(
            ctl.as_raw_fd(),
            &bytes,
            MsgFlags::MSG_NOSIGNAL | MsgFlags::MSG_DONTWAIT,
        );
    }
    for _ in 0..2500 {
        match child.try_wait() {
            Ok(Some(_)) | Err(_) => return,
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
        }
    }
    let _ = child.kill();
    let _ = child.wait();
}

fn spawn_stderr_drain(pid: u32, stderr: std::process::ChildStderr) {
    use tokio::io::{AsyncBufReadExt, AsyncReadExt};
    let Ok(fd) = nonblocking(OwnedFd::from(stderr)) else {
        return;
    };
    let Ok(pipe) = tokio::net::unix::pipe::Receiver::from_owned_fd(fd) else {
        return;
    };
    tokio::spawn(async move {
        // Lines are capped: a worker cannot make the host buffer without bound.
        let mut reader = tokio::io::BufReader::with_capacity(8 * 1024, pipe);
        let mut line = Vec::with_capacity(1024);
        loop {
            line.clear();
            let mut limited = (&mut reader).take(4096);
            match limited.read_until(b'\n', &mut line).await {
                Ok(0) | Err(_) => break,
                Ok(_) => {
                    let text = String::from_utf8_lossy(&line);
                    let text = terminal_safe(text.trim_end());
                    tracing::warn!(zygote = pid, "sandbox stderr: {text}");
                }
            }
        }
    });
}

impl Shared {
    /// Receives one event and its fds (each wrapped at once, close-on-exec).
    async fn recv(&self) -> io::Result<(ZygoteEvent, Vec<OwnedFd>)> {
        let mut buf = vec![0u8; ZYGOTE_MSG_MAX];
        let (len, fds) = self
            .ctl
            .async_io(Interest::READABLE, |fd| {
                recv_packet(fd.as_raw_fd(), &mut buf)
            })
            .await?;
        if len == 0 {
            return Err(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                "zygote closed",
            ));
        }
        let event = serde_json::from_slice(&buf[..len]).map_err(io::Error::other)?;
        Ok((event, fds))
    }

    fn dispatch(&self, event: ZygoteEvent, mut fds: Vec<OwnedFd>) {
        match event {
            ZygoteEvent::Hello { .. } => {}
            ZygoteEvent::Forked { token, pid, pidfd } => {
                let pidfd_fd = if pidfd && fds.len() == 2 {
                    fds.pop()
                } else {
                    None
                };
                let socket = fds.pop();
                let pidfd_fd = pidfd_fd.map(Arc::new);
                let (exit_tx, exit_rx) = watch::channel(None);
                lock(&self.live).insert(
                    pid,
                    LiveWorker {
                        pidfd: pidfd_fd.clone(),
                        exit: exit_tx,
                    },
                );
                let worker = WorkerProcess {
                    pid,
                    socket,
                    pidfd: pidfd_fd,
                    exit: exit_rx,
                };
                let waiter = lock(&self.forks).remove(&token);
                match waiter {
                    // If the requester is gone, dropping the worker kills it.
                    Some(w) => drop(w.send(Ok(worker))),
                    None => drop(worker),
                }
            }
            ZygoteEvent::ForkFailed { token, errno } => {
                if let Some(w) = lock(&self.forks).remove(&token) {
                    let _ = w.send(Err(SandboxError::setup(format!(
                        "fork failed: {}",
                        io::Error::from_raw_os_error(errno)
                    ))));
                }
            }
            ZygoteEvent::Exited { pid, code, signal } => {
                let exit = match (code, signal) {
                    (_, Some(s)) => WorkerExit::Signal(s),
                    (Some(c), None) => WorkerExit::Code(c),
                    (None, None) => WorkerExit::Unknown,
                };
                if let Some(w) = lock(&self.live).remove(&pid) {
                    let _ = w.exit.send(Some(exit));
                }
                self.live_changed.notify_waiters();
            }
        }
    }

    fn close(&self) {
        self.alive.store(false, Ordering::SeqCst);
        lock(&self.forks).clear();
        let live: Vec<LiveWorker> = lock(&self.live).drain().map(|(_, w)| w).collect();
        for w in live {
            let _ = w.exit.send(Some(WorkerExit::Unknown));
        }
        self.live_changed.notify_waiters();
    }
}

async fn reader(shared: Arc<Shared>) {
    loop {
        match shared.recv().await {
            Ok((event, fds)) => shared.dispatch(event, fds),
            Err(e) => {
                if e.kind() != io::ErrorKind::UnexpectedEof {
                    tracing::warn!("sandbox zygote control channel failed: {e}");
                }
                break;
            }
        }
    }
    shared.close();
}

/// One `recvmsg` on the SEQPACKET control socket; every received fd is owned at once.
fn recv_packet(fd: RawFd, buf: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut iov = [IoSliceMut::new(buf)];
    let mut cmsg = nix::cmsg_space!([RawFd; 2]);
    let msg = socket::recvmsg::<()>(fd, &mut iov, Some(&mut cmsg), MsgFlags::MSG_CMSG_CLOEXEC)
        .map_err(io::Error::from)?;
    let mut fds = Vec::new();
    for c in msg.cmsgs().map_err(io::Error::from)? {
        if let ControlMessageOwned::ScmRights(raw) = c {
            for r in raw {
                // SAFETY: the kernel just installed these descriptors for us.
                fds.push(unsafe { OwnedFd::from_raw_fd(r) });
            }
        }
    }
    if msg
        .flags
        .intersects(MsgFlags::MSG_TRUNC | MsgFlags::MSG_CTRUNC)
    {
        return Err(io::Error::other("truncated zygote message"));
    }
    Ok((msg.bytes, fds))
}
