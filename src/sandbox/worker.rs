//! The worker: what a freshly forked child of the zygote does, from hardening to exit.
//!
//! Owns: the setup order, and mapping each setup failure to its exit code ([`SetupStage`]).
//! Never does: return to the zygote's loop (it always ends in `_exit`); run guest code before the
//! seccomp filter is installed; serve more than one cell.
//! Invariants, in order: signal mask reset → `PR_SET_PDEATHSIG` (+ parent check) → only fds 0–3
//! → rlimits → (root) bounding set, groups, gid/uid 65534, RLIMIT_NPROC 0, `PR_SET_PDEATHSIG`
//! again (a credential change clears it) → capabilities empty → no-new-privs, non-dumpable →
//! QuickJS runtime, context, prelude (the zygote's template, or built here) → limits, socket and
//! `Math.random` seed of this worker → rehearsal (our own cell, channel offline) → seccomp
//! allow-list → `Ready`.

use std::os::fd::RawFd;

use seccompiler::BpfProgram;

use super::channel::Channel;
use super::harden;
use super::isolate::{Isolate, Served, Template};
use super::protocol::{self, SetupStage, WorkerConfig, WorkerFrame};

/// Entry point of a forked worker. Never returns: exits with 0 after its cell, or with the
/// [`SetupStage`] code of the step that failed.
pub(crate) fn worker_main(
    config: &WorkerConfig,
    filter: Option<&BpfProgram>,
    prelude: Option<&[u8]>,
    template: Option<&Template>,
    ipc: RawFd,
    zygote: libc::pid_t,
) -> ! {
    // Unwind safety: after a panic the process only exits, nothing observes the template again.
    let setup =
        std::panic::AssertUnwindSafe(|| run(config, filter, prelude, template, ipc, zygote));
    let code = match std::panic::catch_unwind(setup) {
        Ok(Ok(())) => 0,
        Ok(Err(stage)) => {
            // Before seccomp this reaches the zygote's stderr pipe; after it, fd 2 is allowed.
            eprintln!("sandbox worker: setup failed at {}", stage.describe());
            stage.code()
        }
        Err(_) => SetupStage::Panic.code(),
    };
    // SAFETY: _exit ends the process without running the zygote's atexit handlers or destructors.
    unsafe { libc::_exit(code) }
}

fn run(
    config: &WorkerConfig,
    filter: Option<&BpfProgram>,
    prelude: Option<&[u8]>,
    template: Option<&Template>,
    ipc: RawFd,
    zygote: libc::pid_t,
) -> Result<(), SetupStage> {
    harden::reset_signal_mask().map_err(|_| SetupStage::ParentDeath)?;
    harden::die_with_parent(zygote).map_err(|_| SetupStage::ParentDeath)?;
    harden::isolate_fds(ipc).map_err(|_| SetupStage::Fds)?;
    harden::set_rlimits(config.address_space).map_err(|_| SetupStage::Rlimits)?;
    if harden::is_root() {
        harden::drop_identity().map_err(|_| SetupStage::Identity)?;
        harden::forbid_processes().map_err(|_| SetupStage::Rlimits)?;
        // Changing credentials clears the parent-death signal: set it again (and re-check that
        // the zygote is still there, or the signal would never come).
        harden::die_with_parent(zygote).map_err(|_| SetupStage::ParentDeath)?;
    }
    harden::drop_capabilities().map_err(|_| SetupStage::Capabilities)?;
    harden::no_new_privs().map_err(|_| SetupStage::NoNewPrivs)?;

    // SAFETY: getpid has no failure mode.
    let pid = unsafe { libc::getpid() };
    let filter = filter.ok_or(SetupStage::Seccomp)?;
    let ready = |chan: &mut Channel| {
        harden::install_filter(filter).map_err(|_| SetupStage::Seccomp)?;
        let mut frame = Vec::with_capacity(32);
        protocol::encode(
            &WorkerFrame::Ready {
                pid: u32::try_from(pid).unwrap_or(0),
                cpu: protocol::current_cpu(),
            },
            &mut frame,
        )
        .map_err(|_| SetupStage::Handshake)?;
        chan.send(&frame).map_err(|_| SetupStage::Handshake)
    };
    let stack = harden::stack_budget(config.max_stack);
    let served = match template {
        // The zygote's isolate, copied on write by the fork.
        Some(template) => template.serve(harden::IPC_FD, config, stack, ready)?,
        None => {
            let isolate =
                Isolate::new(config.memory_limit, stack).map_err(|_| SetupStage::Isolate)?;
            // SAFETY: isolate_fds moved the socket to IPC_FD; nothing else owns it.
            let mut chan = unsafe { Channel::from_fd(harden::IPC_FD, config.frame_bytes) };
            chan.set_spin(config.spin, config.ready_spin_us);
            let served = isolate.serve(chan, config, prelude, ready)?;
            // The process ends right after this; freeing the heap would only cost time.
            std::mem::forget(isolate);
            served
        }
    };
    match served {
        Served::Done => Ok(()),
        Served::FilterInactive => Err(SetupStage::Seccomp),
    }
}
