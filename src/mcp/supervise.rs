//! The supervisor process of one stdio upstream: the `toolsearch` binary started in the role
//! [`ROLE`] between the gateway and the server, so that no descendant of the server outlives the
//! gateway or the server, whatever way either ends.
//!
//! Owns: becoming a child subreaper (`PR_SET_CHILD_SUBREAPER`: every orphaned descendant of the
//! server — a `node` started by `npx`, a grandchild that called `setsid` — is reparented to it
//! instead of to init), starting the server with the supervisor's own stdio, environment and
//! working directory (the gateway set them), reaping adopted orphans as they exit, and killing
//! every descendant ([`kill_descendants`]: SIGKILL to each direct child, reap, repeat as their
//! children are reparented, until none is left) when
//! - the server exits (a crash-looping server leaks nothing per restart); the supervisor then
//!   exits the way the server did (its exit code, or its signal raised on itself), so the
//!   gateway's exit reason is the server's;
//! - the gateway goes away: the supervisor watches the read end of a pipe whose only write end
//!   the gateway holds (passed by number as the first argument). It reaches end of file when the
//!   gateway closes it (stopping the server) or dies — including `kill -9`, which no signal
//!   handler sees; this is why the supervisor has no `PR_SET_PDEATHSIG`, which would kill it
//!   before it could kill the server's descendants;
//! - it receives SIGTERM, SIGINT or SIGHUP.
//!
//! Never does: read or write the MCP stream (the server's stdio is the gateway's pipes, inherited
//! untouched; the supervisor points its own stdin and stdout at `/dev/null` once the server
//! runs), or use threads or an async runtime (it runs from `dispatch_role`, before anything
//! else, and stays single-threaded so that its own `children` list is complete).
//!
//! Arguments: `toolsearch ROLE <watch fd> <program path> <argv[0]> [args…]`.

use std::ffi::{OsStr, OsString};
use std::os::fd::RawFd;
use std::os::unix::process::CommandExt;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::time::Duration;

/// argv\[1\] of a supervisor process.
pub const ROLE: &str = "__toolsearch-mcp-supervisor";

/// Whether this executable runs the supervisor role (its `main` called `dispatch_role`).
static AVAILABLE: AtomicBool = AtomicBool::new(false);

/// Records that this executable's `main` dispatches roles, so it can supervise upstreams.
pub fn mark_available() {
    AVAILABLE.store(true, Ordering::SeqCst);
}

/// The binary to start supervisors from by default: this executable, when its `main` dispatches
/// roles (`None`: upstreams are started directly, without a supervisor).
pub fn default_binary() -> Option<std::path::PathBuf> {
    if !AVAILABLE.load(Ordering::SeqCst) {
        return None;
    }
    std::env::current_exe().ok()
}

/// Rounds of "kill every child, reap" before giving up on descendants that keep appearing.
const MAX_KILL_ROUNDS: usize = 1_000;

/// The write end of the self-pipe the signal handler wakes the loop with (-1 before it exists).
static WAKE: AtomicI32 = AtomicI32::new(-1);
/// Whether SIGTERM, SIGINT or SIGHUP arrived.
static TERMINATE: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(signal: libc::c_int) {
    if signal != libc::SIGCHLD {
        TERMINATE.store(true, Ordering::SeqCst);
    }
    let fd = WAKE.load(Ordering::SeqCst);
    if fd >= 0 {
        let byte = 1u8;
        // SAFETY: write(2) is async-signal-safe; the pipe is non-blocking, a full pipe is fine.
        unsafe {
            libc::write(fd, (&byte as *const u8).cast(), 1);
        }
    }
}

/// Runs the supervisor role (argv\[1\] was [`ROLE`]) to completion.
pub fn supervisor_main() -> ExitCode {
    match run() {
        Ok(code) => code,
        Err(error) => {
            eprintln!("toolsearch: the MCP server supervisor failed: {error}");
            ExitCode::from(125)
        }
    }
}

fn run() -> Result<ExitCode, String> {
    let mut args = std::env::args_os().skip(2);
    let watch: RawFd = args
        .next()
        .and_then(|a| a.to_str()?.parse().ok())
        .ok_or("no watch descriptor argument")?;
    let program = args.next().ok_or("no program argument")?;
    let arg0 = args.next().unwrap_or_else(|| program.clone());
    let rest: Vec<OsString> = args.collect();

    // SAFETY: plain prctl/fcntl calls on this process and a descriptor it was given.
    unsafe {
        if libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0 {
            eprintln!(
                "toolsearch: cannot become a child subreaper ({}); descendants that leave the server may outlive it",
                std::io::Error::last_os_error()
            );
        }
        libc::fcntl(watch, libc::F_SETFD, libc::FD_CLOEXEC);
    }
    let wake = self_pipe()?;
    install_handlers()?;

    let server = match std::process::Command::new(&program)
        .arg0(&arg0)
        .args(&rest)
        .spawn()
    {
        Ok(child) => child.id() as libc::pid_t,
        Err(error) => {
            eprintln!(
                "toolsearch: {:?} could not be started: {error}",
                OsStr::new(&arg0)
            );
            return Ok(ExitCode::from(127));
        }
    };
    detach_stdio();

    loop {
        let mut fds = [
            libc::pollfd {
                fd: watch,
                events: libc::POLLIN,
                revents: 0,
            },
            libc::pollfd {
                fd: wake,
                events: libc::POLLIN,
                revents: 0,
            },
        ];
        // SAFETY: two valid pollfd entries; a timeout bounds a missed wake-up.
        unsafe {
            libc::poll(fds.as_mut_ptr(), 2, 1000);
        }
        if fds[0].revents != 0 && gateway_gone(watch) {
            kill_descendants();
            return Ok(ExitCode::SUCCESS);
        }
        drain(wake);
        if TERMINATE.load(Ordering::SeqCst) {
            kill_descendants();
            return Ok(ExitCode::from(143));
        }
        while let Some((pid, status)) = reap_one() {
            if pid == server {
                kill_descendants();
                return Ok(mirror(status));
            }
        }
    }
}

/// Whether the watch pipe says the gateway is gone (end of file, or an error).
fn gateway_gone(watch: RawFd) -> bool {
    let mut byte = 0u8;
    // SAFETY: a one-byte read into a local.
    let read = unsafe { libc::read(watch, (&mut byte as *mut u8).cast(), 1) };
    if read > 0 {
        return false;
    }
    !(read < 0 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted)
}

fn self_pipe() -> Result<RawFd, String> {
    let mut fds = [0; 2];
    // SAFETY: pipe2 fills the two-element array.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC | libc::O_NONBLOCK) } != 0 {
        return Err(format!(
            "cannot create a pipe: {}",
            std::io::Error::last_os_error()
        ));
    }
    WAKE.store(fds[1], Ordering::SeqCst);
    Ok(fds[0])
}

fn install_handlers() -> Result<(), String> {
    for signal in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGCHLD] {
        // SAFETY: a zeroed sigaction with a handler that only stores and writes.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART | libc::SA_NOCLDSTOP;
            libc::sigemptyset(&mut action.sa_mask);
            if libc::sigaction(signal, &action, std::ptr::null_mut()) != 0 {
                return Err(format!(
                    "cannot handle signal {signal}: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
    }
    Ok(())
}

/// Points the supervisor's own stdin and stdout at `/dev/null`: only the server holds the
/// gateway's pipes (stderr stays, for the supervisor's own messages).
fn detach_stdio() {
    // SAFETY: open and dup2 on descriptors this process owns.
    unsafe {
        let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR | libc::O_CLOEXEC);
        if null >= 0 {
            libc::dup2(null, 0);
            libc::dup2(null, 1);
            libc::close(null);
        }
    }
}

fn drain(fd: RawFd) {
    let mut buffer = [0u8; 64];
    // SAFETY: reads into a local buffer from a non-blocking pipe until it is empty.
    while unsafe { libc::read(fd, buffer.as_mut_ptr().cast(), buffer.len()) } > 0 {}
}

/// One exited child, reaped (`None` when none has exited).
fn reap_one() -> Option<(libc::pid_t, libc::c_int)> {
    let mut status = 0;
    // SAFETY: waitpid with WNOHANG on any child.
    let pid = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    (pid > 0).then_some((pid, status))
}

/// This process's live (or not yet reaped) children.
fn children() -> Vec<libc::pid_t> {
    let me = std::process::id();
    if let Ok(text) = std::fs::read_to_string(format!("/proc/{me}/task/{me}/children")) {
        return text
            .split_whitespace()
            .filter_map(|p| p.parse().ok())
            .collect();
    }
    // Without CONFIG_PROC_CHILDREN: every process whose parent is this one.
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|entry| entry.file_name().to_str()?.parse::<libc::pid_t>().ok())
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
                stat.rsplit_once(')')
                    .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok())
                    == Some(me)
            })
        })
        .collect()
}

/// Kills every descendant: SIGKILL to each child, reap, and again for the descendants that the
/// deaths reparented here, until no child is left (bounded by [`MAX_KILL_ROUNDS`]).
pub fn kill_descendants() {
    for _ in 0..MAX_KILL_ROUNDS {
        while reap_one().is_some() {}
        let children = children();
        if children.is_empty() {
            return;
        }
        for pid in children {
            // SAFETY: a signal to a child of this process (not reaped, so its pid is not reused).
            unsafe {
                libc::kill(pid, libc::SIGKILL);
            }
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// Exits the way the server did: its exit code, or its signal raised on this process.
fn mirror(status: libc::c_int) -> ExitCode {
    if libc::WIFEXITED(status) {
        return ExitCode::from(libc::WEXITSTATUS(status) as u8);
    }
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: default disposition, then the same signal to this process.
        unsafe {
            libc::signal(signal, libc::SIG_DFL);
            libc::raise(signal);
        }
        return ExitCode::from(128u8.wrapping_add(signal as u8));
    }
    ExitCode::FAILURE
}
