//! The zygote role: a small single-threaded process that forks workers on request, hands their
//! sockets and pidfds to the supervisor, and reaps them.
//!
//! Owns: the zygote's event loop (control socket + signalfd for `SIGCHLD`), forking, reaping and
//! reporting exits, and what every worker inherits: the compiled seccomp filter, the prelude's
//! bytecode, the template isolate with the prelude loaded ([`isolate::Template`]) and glibc's
//! loaded time zone.
//! Never does: start a thread (fork must stay safe), run guest code, keep a worker's socket after
//! handing it over, exit without killing and reaping its workers.
//! Invariants: started with an empty environment by the supervisor's dedicated thread; dies with
//! that thread (`PR_SET_PDEATHSIG`); fds: 0 = `/dev/null`, 1 = `/dev/null`, 2 = stderr pipe,
//! 3 = control socket (`SOCK_SEQPACKET`), 4 = signalfd; `Forked` for a pid is always sent before its
//! `Exited`.

use std::collections::BTreeSet;
use std::io::{self, IoSlice};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::process::ExitCode;

use nix::sys::socket::{self, AddressFamily, ControlMessage, MsgFlags, SockFlag, SockType};

use super::harden;
use super::isolate;
use super::protocol::{ZYGOTE_MSG_MAX, ZygoteEvent, ZygoteRequest};
use super::worker;

/// The zygote's entry point (see [`super::dispatch_role`]).
pub(crate) fn zygote_main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("sandbox zygote: {e}");
            ExitCode::from(1)
        }
    }
}

struct Zygote {
    ctl: OwnedFd,
    filter: Option<seccompiler::BpfProgram>,
    prelude: Option<Vec<u8>>,
    template: Option<isolate::Template>,
    signals: OwnedFd,
    children: BTreeSet<libc::pid_t>,
    pid: libc::pid_t,
}

fn run() -> io::Result<()> {
    // SAFETY: getppid has no failure mode.
    let parent = unsafe { libc::getppid() };
    if parent == 1 {
        return Err(io::Error::other("started without a living parent"));
    }
    harden::die_with_parent(parent)?;

    // Only the control socket (stdin) survives; stdin and stdout become /dev/null.
    harden::close_fds_from(3);
    // SAFETY: F_DUPFD_CLOEXEC on fd 0 returns a new descriptor that we own.
    let ctl = unsafe { libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3) };
    if ctl < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: ctl was just created and is owned here only.
    let ctl = unsafe { OwnedFd::from_raw_fd(ctl) };
    redirect_std_to_null()?;

    // Load the timezone once, here: workers inherit glibc's initialized state, so Date's
    // local-time functions never open /etc/localtime under the seccomp filter.
    // SAFETY: tzset has no arguments; the zygote is single-threaded.
    unsafe { tzset() };

    let signals = sigchld_fd()?;
    // SAFETY: getpid has no failure mode.
    let pid = unsafe { libc::getpid() };
    // Built once; every worker installs its inherited copy (a failure surfaces in each worker as
    // the Seccomp setup stage).
    let filter = harden::build_filter().ok();
    // Compiled once here; every worker loads the bytecode instead of parsing the source.
    let prelude = isolate::compile_prelude();
    // Built once here; every worker serves from its copy-on-write copy (a failure leaves each
    // worker to build its own).
    let limits = super::limits::Limits::default().clamped();
    let template = isolate::Template::build(
        limits.memory_limit_bytes,
        harden::stack_budget(limits.max_stack_bytes),
        prelude.as_deref(),
    );
    let mut z = Zygote {
        ctl,
        filter,
        prelude,
        template,
        signals,
        children: BTreeSet::new(),
        pid,
    };
    z.send(&ZygoteEvent::Hello { pid: pid as u32 }, &[])?;
    z.serve()
}

unsafe extern "C" {
    fn tzset();
}

fn redirect_std_to_null() -> io::Result<()> {
    // SAFETY: open of a constant path; dup2 onto 0 and 1, then close the temporary.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null < 0 {
            return Err(io::Error::last_os_error());
        }
        let ok = libc::dup2(null, 0) >= 0 && libc::dup2(null, 1) >= 0;
        libc::close(null);
        if !ok {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// Blocks `SIGCHLD` and returns a non-blocking signalfd for it.
fn sigchld_fd() -> io::Result<OwnedFd> {
    // SAFETY: sigset manipulation on a local, then sigprocmask and signalfd with valid pointers.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        libc::sigaddset(&mut set, libc::SIGCHLD);
        if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) != 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(OwnedFd::from_raw_fd(fd))
    }
}

impl Zygote {
    fn send(&self, event: &ZygoteEvent, fds: &[RawFd]) -> io::Result<()> {
        let bytes = serde_json::to_vec(event).map_err(io::Error::other)?;
        let iov = [IoSlice::new(&bytes)];
        let cmsgs = [ControlMessage::ScmRights(fds)];
        let cmsgs: &[ControlMessage] = if fds.is_empty() { &[] } else { &cmsgs };
        loop {
            match socket::sendmsg::<()>(
                self.ctl.as_raw_fd(),
                &iov,
                cmsgs,
                MsgFlags::MSG_NOSIGNAL,
                None,
            ) {
                Ok(_) => return Ok(()),
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }

    fn serve(&mut self) -> io::Result<()> {
        let mut buf = vec![0u8; ZYGOTE_MSG_MAX];
        loop {
            let mut fds = [
                libc::pollfd {
                    fd: self.ctl.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
                libc::pollfd {
                    fd: self.signals.as_raw_fd(),
                    events: libc::POLLIN,
                    revents: 0,
                },
            ];
            // SAFETY: two valid pollfds.
            let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, -1) };
            if rc < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(io::Error::last_os_error());
            }
            if fds[0].revents != 0 {
                // SAFETY: recv into our buffer.
                let n = unsafe {
                    libc::recv(self.ctl.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0)
                };
                if n < 0 {
                    if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                        continue;
                    }
                    return self.shutdown();
                }
                if n == 0 {
                    // The supervisor is gone.
                    return self.shutdown();
                }
                match serde_json::from_slice::<ZygoteRequest>(&buf[..n as usize]) {
                    Ok(ZygoteRequest::Fork { token, config }) => self.fork(token, &config)?,
                    Ok(ZygoteRequest::Shutdown) => return self.shutdown(),
                    Err(e) => {
                        eprintln!("sandbox zygote: malformed request ignored: {e}");
                    }
                }
            }
            if fds[1].revents != 0 {
                self.drain_signals();
                self.reap(false)?;
            }
        }
    }

    fn fork(&mut self, token: u64, config: &super::protocol::WorkerConfig) -> io::Result<()> {
        let (parent_end, child_end) = match socket::socketpair(
            AddressFamily::Unix,
            SockType::Stream,
            None,
            SockFlag::SOCK_CLOEXEC,
        ) {
            Ok(pair) => pair,
            Err(e) => {
                return self.send(
                    &ZygoteEvent::ForkFailed {
                        token,
                        errno: e as i32,
                    },
                    &[],
                );
            }
        };
        // SAFETY: the zygote is single-threaded, so the child may run arbitrary code after fork.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
            return self.send(&ZygoteEvent::ForkFailed { token, errno }, &[]);
        }
        if pid == 0 {
            worker::worker_main(
                config,
                self.filter.as_ref(),
                self.prelude.as_deref(),
                self.template.as_ref(),
                child_end.as_raw_fd(),
                self.pid,
            );
        }
        drop(child_end);
        self.children.insert(pid);
        // SAFETY: pidfd_open on our own child; the fd (if any) is owned below.
        let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
        let pidfd = (pidfd >= 0).then(|| {
            // SAFETY: a fresh descriptor returned by pidfd_open.
            unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) }
        });
        let mut fds = vec![parent_end.as_raw_fd()];
        if let Some(p) = &pidfd {
            fds.push(p.as_raw_fd());
        }
        let event = ZygoteEvent::Forked {
            token,
            pid: pid as u32,
            pidfd: pidfd.is_some(),
        };
        if let Err(e) = self.send(&event, &fds) {
            // SAFETY: killing our own child.
            unsafe { libc::kill(pid, libc::SIGKILL) };
            return Err(e);
        }
        Ok(())
    }

    fn drain_signals(&self) {
        let mut info = [0u8; std::mem::size_of::<libc::signalfd_siginfo>() * 8];
        // SAFETY: reading into a local buffer from our non-blocking signalfd.
        while unsafe {
            libc::read(
                self.signals.as_raw_fd(),
                info.as_mut_ptr().cast(),
                info.len(),
            )
        } > 0
        {}
    }

    /// Reaps exited children and reports them. `block`: wait for every child.
    fn reap(&mut self, block: bool) -> io::Result<()> {
        loop {
            if self.children.is_empty() {
                return Ok(());
            }
            let mut status = 0;
            let flags = if block { 0 } else { libc::WNOHANG };
            // SAFETY: waitpid with a valid status pointer.
            let pid = unsafe { libc::waitpid(-1, &mut status, flags) };
            if pid < 0 {
                if io::Error::last_os_error().kind() == io::ErrorKind::Interrupted {
                    continue;
                }
                self.children.clear();
                return Ok(());
            }
            if pid == 0 {
                return Ok(());
            }
            if !self.children.remove(&pid) {
                continue;
            }
            let (code, signal) = if libc::WIFEXITED(status) {
                (Some(libc::WEXITSTATUS(status)), None)
            } else if libc::WIFSIGNALED(status) {
                (None, Some(libc::WTERMSIG(status)))
            } else {
                continue;
            };
            let sent = self.send(
                &ZygoteEvent::Exited {
                    pid: pid as u32,
                    code,
                    signal,
                },
                &[],
            );
            if sent.is_err() && !block {
                return self.shutdown();
            }
        }
    }

    /// Kills every worker, reaps them (reporting when possible) and ends the zygote.
    fn shutdown(&mut self) -> io::Result<()> {
        for pid in &self.children {
            // SAFETY: killing our own, not yet reaped, children.
            unsafe { libc::kill(*pid, libc::SIGKILL) };
        }
        self.reap(true)?;
        std::process::exit(0);
    }
}
