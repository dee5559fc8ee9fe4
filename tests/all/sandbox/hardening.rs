//! The worker process as the kernel sees it: seccomp, environment, identity, capabilities,
//! descriptors, rlimits; the seccomp self-check; the probe; the zygote's lifecycle.

use std::time::Duration;

use super::support::{BIN, Harness, start_time, status_field};
use pretty_assertions::assert_eq;
use serde_json::json;
use toolsearch::{ALLOWED_SYSCALLS, Limits, Outcome, Supervisor, SupervisorConfig};

async fn ready_harness() -> (Harness, Vec<u32>) {
    let h = Harness::new().await;
    assert!(
        h.sup.wait_pool_full(Duration::from_secs(10)).await,
        "the pool never filled"
    );
    let pids = h.sup.ready_worker_pids();
    assert_eq!(pids.len(), h.sup.pool_size());
    (h, pids)
}

#[tokio::test]
async fn ready_worker_is_under_seccomp_with_an_empty_environment() {
    let (h, pids) = ready_harness().await;
    for pid in pids {
        assert_eq!(
            status_field(pid, "Seccomp").as_deref(),
            Some("2"),
            "worker {pid}"
        );
        assert_eq!(
            status_field(pid, "NoNewPrivs").as_deref(),
            Some("1"),
            "worker {pid}"
        );
        let environ = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
        assert!(
            environ.is_empty(),
            "worker {pid} environ: {:?}",
            String::from_utf8_lossy(&environ)
        );
    }
    h.assert_still_works().await;
    h.finish().await;
}

#[tokio::test]
async fn zygote_has_an_empty_environment() {
    let h = Harness::new().await;
    let zygote = h.sup.zygote_pid().unwrap();
    let environ = std::fs::read(format!("/proc/{zygote}/environ")).unwrap();
    assert!(environ.is_empty());
    h.finish().await;
}

#[tokio::test]
async fn ready_worker_has_no_privileges() {
    let (h, pids) = ready_harness().await;
    // SAFETY: geteuid has no failure mode.
    let root = unsafe { libc::geteuid() } == 0;
    for pid in pids {
        assert_eq!(
            status_field(pid, "CapEff").as_deref(),
            Some("0000000000000000")
        );
        assert_eq!(
            status_field(pid, "CapPrm").as_deref(),
            Some("0000000000000000")
        );
        assert_eq!(
            status_field(pid, "CapAmb").as_deref(),
            Some("0000000000000000")
        );
        if root {
            assert_eq!(
                status_field(pid, "CapBnd").as_deref(),
                Some("0000000000000000")
            );
            assert_eq!(
                status_field(pid, "Uid").as_deref(),
                Some("65534\t65534\t65534\t65534")
            );
            assert_eq!(
                status_field(pid, "Gid").as_deref(),
                Some("65534\t65534\t65534\t65534")
            );
            assert_eq!(status_field(pid, "Groups").as_deref(), Some(""));
        }
    }
    h.finish().await;
}

#[tokio::test]
async fn ready_worker_holds_only_its_socket_and_std_descriptors() {
    let (h, pids) = ready_harness().await;
    for pid in pids {
        let mut fds: Vec<(String, String)> = std::fs::read_dir(format!("/proc/{pid}/fd"))
            .unwrap()
            .flatten()
            .map(|e| {
                let target = std::fs::read_link(e.path())
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                let kind = target.split(':').next().unwrap_or_default().to_owned();
                (e.file_name().to_string_lossy().into_owned(), kind)
            })
            .collect();
        fds.sort();
        assert_eq!(
            fds,
            vec![
                ("0".into(), "/dev/null".into()),
                ("1".into(), "/dev/null".into()),
                ("2".into(), "pipe".into()),
                ("3".into(), "socket".into()),
            ]
        );
    }
    h.finish().await;
}

#[tokio::test]
async fn ready_worker_rlimits_forbid_core_files_and_processes() {
    let (h, pids) = ready_harness().await;
    for pid in pids {
        let limits = std::fs::read_to_string(format!("/proc/{pid}/limits")).unwrap();
        let soft = |name: &str| -> String {
            let line = limits.lines().find(|l| l.starts_with(name)).unwrap();
            line[name.len()..]
                .split_whitespace()
                .next()
                .unwrap()
                .to_owned()
        };
        assert_eq!(soft("Max core file size"), "0");
        assert_eq!(soft("Max file size"), "0");
        assert_eq!(soft("Max open files"), "8");
        if unsafe { libc::geteuid() } == 0 {
            assert_eq!(soft("Max processes"), "0");
        }
        let address_space: u64 = soft("Max address space").parse().unwrap();
        let l = h.sup.limits();
        assert_eq!(
            address_space,
            (l.memory_limit_bytes + l.address_space_slack_bytes) as u64
        );
    }
    h.finish().await;
}

#[tokio::test]
async fn memory_heavy_cell_works_under_the_filter() {
    let h = Harness::new().await;
    // ~40 MB: 20 MB of typed arrays and 20 MB of plain arrays.
    let r = h
        .run(
            "const typed = []; for (let i = 0; i < 20; i++) typed.push(new Float64Array(131072).fill(i));\n\
             const plain = []; for (let i = 0; i < 20; i++) plain.push(new Array(65536).fill(i));\n\
             let sum = 0; for (const t of typed) sum += t[5]; for (const p of plain) sum += p[7];\n\
             return [typed.length, plain.length, sum]",
        )
        .await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_eq!(r.value, Some(json!([20, 20, 380])));
    h.finish().await;
}

#[tokio::test]
async fn builtins_that_touch_the_os_work_under_the_filter() {
    // Dates (local time zone), randomness, locale-ish methods, regexps: none may need a syscall
    // outside the allow-list.
    let h = Harness::new().await;
    let r = h
        .run(
            "const d = new Date(0);\n\
             return [d.getFullYear() >= 1969, typeof d.toString(), typeof d.toLocaleString(), typeof d.getTimezoneOffset(), Date.now() > 0, Math.random() < 1, 'ä'.toLocaleUpperCase(), 'a'.localeCompare('b'), /\\p{L}+/u.test('héllo'), (2n ** 64n).toString(16), 'abc'.normalize('NFD'), new Error('x').stack.length > 0]",
        )
        .await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_eq!(
        r.value,
        Some(json!([
            true,
            "string",
            "string",
            "number",
            true,
            true,
            "Ä",
            -1,
            true,
            "10000000000000000",
            "abc",
            true
        ]))
    );
    h.finish().await;
}

#[tokio::test]
async fn forbidden_syscall_is_a_seccomp_violation() {
    let h = Harness::new().await;
    assert_eq!(h.sup.verify_seccomp().await, Outcome::SeccompViolation);
    h.assert_still_works().await;
    h.finish().await;
}

#[tokio::test]
async fn allow_list_has_no_dangerous_syscalls() {
    let names: Vec<&str> = ALLOWED_SYSCALLS.iter().map(|(n, _)| *n).collect();
    for forbidden in [
        "open", "openat", "socket", "connect", "execve", "fork", "clone", "clone3", "ptrace",
        "kill", "tgkill", "mprotect",
    ] {
        assert!(
            !names.contains(&forbidden),
            "{forbidden} must not be allowed"
        );
    }
    assert!(ALLOWED_SYSCALLS.iter().all(|(_, why)| !why.is_empty()));
}

/// The nice value of `pid` (field 19 of `/proc/<pid>/stat`).
fn nice_of(pid: u32) -> i32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let after_comm = &stat[stat.rfind(')').unwrap() + 1..];
    after_comm
        .split_whitespace()
        .nth(16)
        .unwrap()
        .parse()
        .unwrap()
}

#[tokio::test]
async fn sandbox_runs_below_the_host_priority_unless_told_otherwise() {
    // The zygote is spawned from a thread of this process, which has the process's nice value.
    let host = nice_of(std::process::id());
    let (h, pids) = ready_harness().await;
    let background = (host + 10).min(19);
    assert_eq!(nice_of(h.sup.zygote_pid().unwrap()), background, "zygote");
    for pid in pids {
        assert_eq!(nice_of(pid), background, "ready worker {pid}");
    }
    h.assert_still_works().await;
    h.finish().await;

    let mut config = SupervisorConfig::new(BIN);
    config.worker_nice = 0;
    let sup = Supervisor::start(config).await.unwrap();
    assert!(sup.wait_pool_full(Duration::from_secs(10)).await);
    assert_eq!(nice_of(sup.zygote_pid().unwrap()), host, "zygote");
    for pid in sup.ready_worker_pids() {
        assert_eq!(nice_of(pid), host, "ready worker {pid}");
    }
    sup.shutdown().await;
}

#[tokio::test]
async fn probe_succeeds_here() {
    let h = Harness::new().await;
    h.sup.probe().await.unwrap();
    h.finish().await;
}

#[tokio::test]
async fn killed_zygote_is_restarted_and_its_workers_die() {
    let (h, pids) = ready_harness().await;
    let zygote = h.sup.zygote_pid().unwrap();
    let started: Vec<(u32, u64)> = pids.iter().map(|p| (*p, start_time(*p).unwrap())).collect();
    // SAFETY: killing the zygote this test's supervisor started.
    unsafe { libc::kill(zygote as i32, libc::SIGKILL) };
    // PR_SET_PDEATHSIG takes the ready workers with it.
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while started.iter().any(|(p, t)| start_time(*p) == Some(*t)) {
        assert!(
            std::time::Instant::now() < deadline,
            "workers outlived their zygote: {:?}",
            started
                .iter()
                .map(|(p, _)| (status_field(*p, "State"), status_field(*p, "PPid")))
                .collect::<Vec<_>>()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    h.assert_still_works().await;
    let restarted = h.sup.zygote_pid().unwrap();
    assert_ne!(restarted, zygote);
    h.finish().await;
}

#[tokio::test]
async fn worker_killed_while_idle_is_skipped() {
    let (h, pids) = ready_harness().await;
    // SAFETY: killing a worker this test's supervisor forked.
    unsafe { libc::kill(pids[0] as i32, libc::SIGKILL) };
    tokio::time::sleep(Duration::from_millis(50)).await;
    let r = h.run("return 7").await;
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert_ne!(r.telemetry.worker_pid, pids[0]);
    h.finish().await;
}

#[tokio::test]
async fn unstartable_worker_binary_fails_at_start() {
    let mut config = toolsearch::SupervisorConfig::new("/nonexistent/toolsearch");
    config.limits = Limits::default();
    let err = toolsearch::Supervisor::start(config).await.err().unwrap();
    assert!(
        matches!(err, toolsearch::SandboxError::ZygoteSpawn { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn dropping_the_supervisor_kills_everything() {
    let (h, pids) = ready_harness().await;
    let zygote = h.sup.zygote_pid().unwrap();
    let mut tracked: Vec<(u32, u64)> = pids.iter().map(|p| (*p, start_time(*p).unwrap())).collect();
    tracked.push((zygote, start_time(zygote).unwrap()));
    drop(h);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while tracked.iter().any(|(p, t)| start_time(*p) == Some(*t)) {
        assert!(
            std::time::Instant::now() < deadline,
            "processes outlived the dropped supervisor"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}
