//! Many cells through one supervisor: all correct, each on its own worker, nothing leaked.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::support::Harness;
use pretty_assertions::assert_eq;
use serde_json::json;
use toolsearch::sandbox::{CellOptions, Outcome};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_cells_at_once() {
    let h = Harness::new().await;
    let started = Instant::now();
    let mut set = tokio::task::JoinSet::new();
    for i in 0..200u64 {
        let sup = h.sup.clone();
        let bridge = h.bridge.clone();
        set.spawn(async move {
            let code = format!(
                "const hits = await openclaw.tools.search('q{i}');\n\
                 const out = await openclaw.tools.call(hits[0].id, {{a: {i}, b: 1}});\n\
                 return {{i: {i}, sum: out.sum, n: hits.length}};"
            );
            (i, sup.run_cell(&code, bridge, CellOptions::default()).await)
        });
    }
    let mut pids = BTreeSet::new();
    let mut seen = 0;
    while let Some(joined) = set.join_next().await {
        let (i, r) = joined.unwrap();
        assert_eq!(r.outcome, Outcome::Ok, "cell {i}: {r:#?}");
        assert_eq!(r.value, Some(json!({"i": i, "sum": i + 1, "n": 3})));
        assert!(
            pids.insert(r.telemetry.worker_pid),
            "worker {} reused",
            r.telemetry.worker_pid
        );
        seen += 1;
    }
    assert_eq!(seen, 200);
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
    h.finish().await;
}

#[tokio::test]
async fn consecutive_cells_run_in_different_workers() {
    let h = Harness::new().await;
    let mut pids = Vec::new();
    for _ in 0..5 {
        let r = h.run("return 1").await;
        assert_eq!(r.outcome, Outcome::Ok);
        pids.push(r.telemetry.worker_pid);
    }
    let distinct: BTreeSet<u32> = pids.iter().copied().collect();
    assert_eq!(distinct.len(), pids.len(), "{pids:?}");
    h.finish().await;
}

/// A solo cell's worker may not run on the CPU of the thread that submitted it (both sides poll
/// briefly; sharing one CPU would make every hop wait out the poller's window). With several
/// CPUs, a live worker's `Cpus_allowed_list` is narrower than the host's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_solo_cell_runs_off_the_submitting_cpu() {
    fn allowed(pid: &str) -> Option<String> {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .map(|v| v.trim().to_owned())
    }
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    let h = Harness::new().await;
    assert!(h.sup.wait_pool_full(Duration::from_secs(10)).await);
    let host = allowed("self").unwrap_or_default();
    let sup = h.sup.clone();
    let bridge = h.bridge.clone();
    let cell = tokio::spawn(async move {
        sup.run_cell(
            "const t = Date.now(); while (Date.now() - t < 400) {} return 1",
            bridge,
            CellOptions::default(),
        )
        .await
    });
    // Every live worker's allowed CPUs, sampled while the cell runs; the cell's own worker is
    // known from its telemetry afterwards.
    let mut lists = std::collections::BTreeMap::new();
    while !cell.is_finished() {
        for pid in h.sup.live_worker_pids() {
            if let Some(list) = allowed(&pid.to_string()) {
                lists.insert(pid, list);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let r = cell.await.expect("the cell task");
    assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
    assert!(r.telemetry.warm, "{r:#?}");
    let seen = lists
        .get(&r.telemetry.worker_pid)
        .cloned()
        .expect("the running worker was observed");
    if cpus > 1 {
        assert_ne!(seen, host, "worker allowed on {seen}, host on {host}");
    } else {
        assert_eq!(seen, host);
    }
    h.finish().await;
}
