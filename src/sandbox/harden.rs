//! Process hardening of a freshly forked worker, and its seccomp allow-list.
//!
//! Owns: the ordered hardening steps (parent-death signal, fds, rlimits, identity, capabilities,
//! no-new-privs) and [`ALLOWED_SYSCALLS`] with the reason for each entry.
//! Never does: run after guest code started; allocate between `fork` and the end of setup more than
//! the single-threaded zygote makes safe (the zygote has no other thread, so malloc is safe).
//! Invariants: the steps run in the order of [`super::worker`]; each failure maps to one
//! [`SetupStage`](super::protocol::SetupStage); the seccomp filter's default action kills the whole
//! process with `SIGSYS`.

use std::collections::BTreeMap;
use std::io;
use std::os::fd::RawFd;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The fd number of the worker's IPC socket after [`isolate_fds`].
pub(crate) const IPC_FD: RawFd = 3;

/// The unprivileged identity a worker takes when started as root (`nobody`/`nogroup`).
pub(crate) const UNPRIVILEGED_ID: u32 = 65534;

/// RLIMIT_NOFILE of a worker: fds 0–3 are all it has; seccomp forbids opening more anyway.
const WORKER_NOFILE: u64 = 8;

fn last_os_error<T>() -> io::Result<T> {
    Err(io::Error::last_os_error())
}

/// Unblocks every signal (the zygote blocks `SIGCHLD` for its signalfd; a fork inherits the mask).
pub(crate) fn reset_signal_mask() -> io::Result<()> {
    // SAFETY: an empty, initialized sigset and a null old-set pointer are valid arguments.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        if libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut()) != 0 {
            return last_os_error();
        }
    }
    Ok(())
}

/// `PR_SET_PDEATHSIG(SIGKILL)`, then checks that the expected parent is still there (it may have
/// died between `fork` and the `prctl`, in which case the signal would never come).
pub(crate) fn die_with_parent(expected_parent: libc::pid_t) -> io::Result<()> {
    // SAFETY: plain prctl/getppid syscalls without pointers.
    unsafe {
        if libc::prctl(
            libc::PR_SET_PDEATHSIG,
            libc::SIGKILL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            return last_os_error();
        }
        if libc::getppid() != expected_parent {
            return Err(io::Error::other(
                "parent exited before PR_SET_PDEATHSIG took effect",
            ));
        }
    }
    Ok(())
}

/// Closes every fd at or above `first` (close_range, with a loop fallback for old kernels).
pub(crate) fn close_fds_from(first: RawFd) {
    // SAFETY: close_range only closes descriptors; nothing in this process refers to them after.
    let rc = unsafe { libc::syscall(libc::SYS_close_range, first as u32, u32::MAX, 0u32) };
    if rc != 0 {
        let max = fd_ceiling();
        for fd in first..max {
            // SAFETY: closing a number that may or may not be open is harmless (EBADF).
            unsafe { libc::close(fd) };
        }
    }
}

fn fd_ceiling() -> RawFd {
    // SAFETY: getrlimit writes into the provided struct.
    unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut rl) == 0 {
            RawFd::try_from(rl.rlim_cur.min(65_536)).unwrap_or(4096)
        } else {
            4096
        }
    }
}

/// Moves the IPC socket to [`IPC_FD`] and closes everything above it. Fds 0 and 1 are
/// `/dev/null` and fd 2 the zygote's stderr pipe (set up by the zygote).
pub(crate) fn isolate_fds(ipc: RawFd) -> io::Result<()> {
    if ipc != IPC_FD {
        // SAFETY: dup2 onto a fixed number; IPC_FD held the zygote's control socket, which the
        // worker must not keep, so replacing it is intended.
        if unsafe { libc::dup2(ipc, IPC_FD) } < 0 {
            return last_os_error();
        }
    }
    close_fds_from(IPC_FD + 1);
    Ok(())
}

fn set_rlimit(resource: libc::__rlimit_resource_t, value: u64) -> io::Result<()> {
    let rl = libc::rlimit {
        rlim_cur: value,
        rlim_max: value,
    };
    // SAFETY: a valid rlimit struct.
    if unsafe { libc::setrlimit(resource, &rl) } != 0 {
        return last_os_error();
    }
    Ok(())
}

/// Address space, no core dumps, no file writes, few fds.
pub(crate) fn set_rlimits(address_space: u64) -> io::Result<()> {
    set_rlimit(libc::RLIMIT_CORE, 0)?;
    set_rlimit(libc::RLIMIT_FSIZE, 0)?;
    set_rlimit(libc::RLIMIT_NOFILE, WORKER_NOFILE)?;
    set_rlimit(libc::RLIMIT_AS, address_space)?;
    Ok(())
}

/// No more processes for this (now unprivileged) user from this worker. Set after the identity
/// change, because RLIMIT_NPROC counts the real uid's processes.
pub(crate) fn forbid_processes() -> io::Result<()> {
    set_rlimit(libc::RLIMIT_NPROC, 0)
}

/// QuickJS's stack limit, kept 256 KiB below the main thread's RLIMIT_STACK so that deep
/// recursion always ends in QuickJS's `RangeError`, never in a native stack overflow.
pub(crate) fn stack_budget(requested: usize) -> usize {
    // SAFETY: getrlimit writes into the provided struct.
    let soft = unsafe {
        let mut rl: libc::rlimit = std::mem::zeroed();
        if libc::getrlimit(libc::RLIMIT_STACK, &mut rl) != 0 {
            return requested;
        }
        rl.rlim_cur
    };
    if soft == libc::RLIM_INFINITY {
        return requested;
    }
    let ceiling = usize::try_from(soft)
        .unwrap_or(usize::MAX)
        .saturating_sub(256 * 1024);
    requested.min(ceiling.max(64 * 1024))
}

/// Whether this process runs with euid 0.
pub(crate) fn is_root() -> bool {
    // SAFETY: geteuid has no failure mode.
    unsafe { libc::geteuid() == 0 }
}

/// As root: empties the capability bounding set, then supplementary groups, then takes gid and uid
/// 65534 (real, effective and saved). Verifies the change stuck.
pub(crate) fn drop_identity() -> io::Result<()> {
    // SAFETY: prctl/setgroups/setres[ug]id with valid arguments; no pointers except the empty list.
    unsafe {
        for cap in 0..64 {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) != 0 {
                // EINVAL: past the last capability this kernel knows.
                if io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL) {
                    break;
                }
                return last_os_error();
            }
        }
        if libc::setgroups(0, std::ptr::null()) != 0 {
            return last_os_error();
        }
        let id = UNPRIVILEGED_ID;
        if libc::setresgid(id, id, id) != 0 || libc::setresuid(id, id, id) != 0 {
            return last_os_error();
        }
        if libc::getuid() != id || libc::geteuid() != id || libc::getegid() != id {
            return Err(io::Error::other("uid/gid did not change"));
        }
    }
    Ok(())
}

#[repr(C)]
struct CapHeader {
    version: u32,
    pid: libc::c_int,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct CapData {
    effective: u32,
    permitted: u32,
    inheritable: u32,
}

/// Empties the effective, permitted, inheritable and ambient capability sets (capset v3).
pub(crate) fn drop_capabilities() -> io::Result<()> {
    const LINUX_CAPABILITY_VERSION_3: u32 = 0x2008_0522;
    let header = CapHeader {
        version: LINUX_CAPABILITY_VERSION_3,
        pid: 0,
    };
    let data = [CapData {
        effective: 0,
        permitted: 0,
        inheritable: 0,
    }; 2];
    // SAFETY: header and two data structs laid out as the kernel's v3 ABI expects.
    unsafe {
        if libc::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_CLEAR_ALL as libc::c_ulong,
            0,
            0,
            0,
        ) != 0
        {
            // Kernels without ambient capabilities have none to clear.
            if io::Error::last_os_error().raw_os_error() != Some(libc::EINVAL) {
                return last_os_error();
            }
        }
        if libc::syscall(libc::SYS_capset, &header, data.as_ptr()) != 0 {
            return last_os_error();
        }
    }
    Ok(())
}

/// `PR_SET_NO_NEW_PRIVS` and non-dumpable (no ptrace by same-uid processes, no core).
pub(crate) fn no_new_privs() -> io::Result<()> {
    // SAFETY: prctl without pointers.
    unsafe {
        if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
            return last_os_error();
        }
        if libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 {
            return last_os_error();
        }
    }
    Ok(())
}

/// Each syscall a worker may make after setup, and why. Everything else kills it with `SIGSYS`.
///
/// Observed under strace across the whole test corpus (allocation up to the heap limit and past it,
/// deep recursion, 100 MB of console output, bridge calls, timeouts): `read`, `write`, `poll`,
/// `brk`, `mmap`, `munmap`, `mremap`, `exit_group`. The rest is the minimal base that glibc and
/// Rust's runtime may need on other hosts (vDSO fallbacks, lock contention, signal return).
/// Deliberately absent: `open`/`openat`, `socket`, `connect`, `execve`, `fork`/`clone`, `ptrace`,
/// `kill`/`tgkill`, `mprotect` (QuickJS has no JIT; glibc's main-arena malloc does not need it).
/// Date's local-time functions need no file: the zygote loads the timezone (`tzset`) before it
/// forks.
pub const ALLOWED_SYSCALLS: &[(&str, &str)] = &[
    ("read", "frames from the IPC socket; only fd 3 (observed)"),
    (
        "write",
        "frames to the IPC socket and diagnostics to stderr; only fds 3 and 2 (observed)",
    ),
    (
        "poll",
        "waiting for bridge replies with the cell's deadline as timeout (observed); `ppoll` on architectures without `poll`",
    ),
    ("brk", "glibc malloc's main arena (observed)"),
    (
        "mmap",
        "large allocations (observed); only without PROT_EXEC",
    ),
    ("munmap", "freeing large allocations (observed)"),
    (
        "mremap",
        "realloc of large blocks: QuickJS strings and arrays (observed)",
    ),
    ("exit_group", "ending the worker after its cell (observed)"),
    ("exit", "ending the (only) thread"),
    ("close", "dropping a descriptor (none is opened; harmless)"),
    (
        "madvise",
        "glibc returning freed memory (MADV_DONTNEED) when trimming",
    ),
    (
        "futex",
        "glibc's internal locks (stdio, malloc) if ever contended",
    ),
    (
        "clock_gettime",
        "Instant::now for the deadline when the vDSO falls back to the syscall",
    ),
    (
        "gettimeofday",
        "Date.now (QuickJS calls gettimeofday) when the vDSO falls back to the syscall",
    ),
    ("getrandom", "hash-map seeds in Rust's std"),
    (
        "rt_sigreturn",
        "returning from a signal handler (Rust's stack-overflow guard)",
    ),
    ("rt_sigprocmask", "signal masking in glibc"),
    ("sigaltstack", "Rust's stack-overflow handler"),
];

fn cond(
    arg: u8,
    op: SeccompCmpOp,
    value: u64,
) -> Result<SeccompCondition, seccompiler::BackendError> {
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value)
}

/// Builds the allow-list filter ([`ALLOWED_SYSCALLS`]) for this architecture. The zygote builds
/// it once; every worker installs the inherited copy.
pub(crate) fn build_filter() -> Result<BpfProgram, seccompiler::Error> {
    use SeccompCmpOp::{Eq, MaskedEq};
    let fd_rule = |fd: RawFd| -> Result<SeccompRule, seccompiler::BackendError> {
        SeccompRule::new(vec![cond(0, Eq, fd as u64)?])
    };
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    rules.insert(libc::SYS_read, vec![fd_rule(IPC_FD)?]);
    rules.insert(libc::SYS_write, vec![fd_rule(IPC_FD)?, fd_rule(2)?]);
    rules.insert(
        libc::SYS_mmap,
        vec![SeccompRule::new(vec![cond(
            2,
            MaskedEq(libc::PROT_EXEC as u64),
            0,
        )?])?],
    );
    let unconditional = [
        #[cfg(target_arch = "x86_64")]
        libc::SYS_poll,
        #[cfg(not(target_arch = "x86_64"))]
        libc::SYS_ppoll,
        libc::SYS_brk,
        libc::SYS_munmap,
        libc::SYS_mremap,
        libc::SYS_exit_group,
        libc::SYS_exit,
        libc::SYS_close,
        libc::SYS_madvise,
        libc::SYS_futex,
        libc::SYS_clock_gettime,
        libc::SYS_gettimeofday,
        libc::SYS_getrandom,
        libc::SYS_rt_sigreturn,
        libc::SYS_rt_sigprocmask,
        libc::SYS_sigaltstack,
    ];
    for nr in unconditional {
        rules.insert(nr, Vec::new());
    }
    let arch = TargetArch::try_from(std::env::consts::ARCH)?;
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::KillProcess,
        SeccompAction::Allow,
        arch,
    )?;
    Ok(BpfProgram::try_from(filter)?)
}

/// Installs a filter built by [`build_filter`] on this (single-threaded) process.
pub(crate) fn install_filter(filter: &BpfProgram) -> Result<(), seccompiler::Error> {
    seccompiler::apply_filter(filter)
}

/// The supervisor's self-check: a syscall outside the allow-list. Under the filter the process
/// dies with `SIGSYS` before this returns.
pub(crate) fn forbidden_syscall() {
    // SAFETY: socket(2) has no pointer arguments; an fd it might return is closed at once.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM, 0);
        if fd >= 0 {
            libc::close(fd);
        }
    }
}
