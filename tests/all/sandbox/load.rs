//! Many cells through one supervisor: all correct, each on its own worker, nothing leaked.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use super::support::Harness;
use pretty_assertions::assert_eq;
use serde_json::json;
use toolsearch::{CellOptions, Outcome};

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

/// The polling policy only changes how the two sides wait for each other: with every policy, and
/// windows from none to the clamp, cells alone and side by side give the same results on fresh
/// workers, and nothing is left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_polling_policy_runs_the_same_cells() {
    use toolsearch::{PollWhen, Polling, SupervisorConfig};
    for when in [PollWhen::Always, PollWhen::Never, PollWhen::PeerOnOtherCpu] {
        for window in [Duration::ZERO, Duration::from_secs(1)] {
            let mut config = SupervisorConfig::new(super::support::BIN);
            config.polling = Polling {
                when,
                host_window: window,
                worker_window: window,
                ready_window: window,
            };
            let h = Harness::with_config(config).await;
            h.assert_still_works().await;
            let (a, b) = tokio::join!(
                h.run("const c = await openclaw.tools.call('x', {a: 1, b: 2}); return c.sum"),
                h.run("const c = await openclaw.tools.call('y', {a: 3, b: 4}); return c.sum"),
            );
            assert_eq!(
                (a.value, b.value),
                (Some(json!(3)), Some(json!(7))),
                "{when:?}"
            );
            assert_ne!(a.telemetry.worker_pid, b.telemetry.worker_pid);
            h.finish().await;
        }
    }
}

/// Workers share the zygote's template context, not its `Math.random` state: every cell, pooled
/// or forked for it, draws its own sequence from the native function a guest expects.
#[tokio::test]
async fn every_worker_draws_its_own_random_sequence() {
    let code = "const d = Object.getOwnPropertyDescriptor(Math, 'random');\n\
                const xs = [Math.random(), Math.random(), Math.random()];\n\
                return {xs, native: /\\[native code\\]/.test(String(Math.random)), \
                enumerable: d.enumerable, writable: d.writable, length: Math.random.length, \
                inRange: xs.every(x => x >= 0 && x < 1)};";
    let mut seen = BTreeSet::new();
    for pool in [0, 2] {
        let mut config = toolsearch::SupervisorConfig::new(super::support::BIN);
        config.pool_size = pool;
        let h = Harness::with_config(config).await;
        for _ in 0..4 {
            let r = h.run(code).await;
            assert_eq!(r.outcome, Outcome::Ok, "{r:#?}");
            let v = r.value.unwrap_or_default();
            assert_eq!(v["native"], true, "{v}");
            assert_eq!(v["enumerable"], false, "{v}");
            assert_eq!(v["writable"], true, "{v}");
            assert_eq!(v["length"], 0, "{v}");
            assert_eq!(v["inRange"], true, "{v}");
            assert!(seen.insert(v["xs"].to_string()), "a repeated sequence: {v}");
        }
        h.finish().await;
    }
}
