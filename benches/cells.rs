//! Code-cell latency: warm pool, cold fork, and the reference architecture (a Node.js child per
//! cell) in the same run, all running `bench::BENCH_CELL` (search + describe + call) against the
//! same bridge. Every iteration checks its result inside the timed loop.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use toolsearch::sandbox::bench::{self, BENCH_CELL, FixtureBridge, NodeScript};
use toolsearch::sandbox::{Bridge, CellOptions, Outcome, Supervisor, SupervisorConfig};

const BIN: &str = env!("CARGO_BIN_EXE_toolsearch");

fn expected() -> serde_json::Value {
    serde_json::json!({
        "hits": 3,
        "tool": "create_event",
        "result": {"id": "mcp:calendar:create_event", "ok": true, "sum": 5}
    })
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// Times `iters` cells on a Tokio task (as a gateway handler would run them).
fn time_cells(rt: &tokio::runtime::Runtime, sup: &Supervisor, iters: u64, warm: bool) -> Duration {
    let sup = sup.clone();
    rt.block_on(async move {
        tokio::spawn(async move {
            let bridge: Arc<dyn Bridge> = Arc::new(FixtureBridge);
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if warm {
                    // Pool refill stays outside the timed region.
                    assert!(sup.wait_pool_full(Duration::from_secs(10)).await);
                }
                let t = Instant::now();
                let r = sup
                    .run_cell(BENCH_CELL, bridge.clone(), CellOptions::default())
                    .await;
                assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
                assert_eq!(r.value, Some(expected()));
                assert_eq!(r.telemetry.warm, warm);
                total += t.elapsed();
            }
            total
        })
        .await
        .unwrap()
    })
}

fn cells(c: &mut Criterion) {
    let rt = runtime();
    let node = bench::find_node().unwrap_or_else(|e| panic!("the node series is required: {e}"));
    let mut group = c.benchmark_group("cells");
    group
        .sample_size(50)
        .measurement_time(Duration::from_secs(5));

    let warm = rt
        .block_on(Supervisor::start(SupervisorConfig::new(BIN)))
        .unwrap();
    group.bench_function("warm", |b| {
        b.iter_custom(|iters| time_cells(&rt, &warm, iters, true))
    });
    rt.block_on(warm.shutdown());

    let mut config = SupervisorConfig::new(BIN);
    config.pool_size = 0;
    let cold = rt.block_on(Supervisor::start(config)).unwrap();
    group.bench_function("cold", |b| {
        b.iter_custom(|iters| time_cells(&rt, &cold, iters, false))
    });
    rt.block_on(cold.shutdown());

    let script = NodeScript::write().unwrap();
    let bridge: Arc<dyn Bridge> = Arc::new(FixtureBridge);
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("node", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (dt, value) =
                        bench::run_node_cell(&node, script.path(), BENCH_CELL, &bridge)
                            .await
                            .unwrap();
                    assert_eq!(value, expected());
                    total += dt;
                }
                total
            })
        })
    });
    group.finish();

    // The summary the CLI prints, from the same run.
    let report = rt
        .block_on(bench::run_cells_bench(
            BIN.as_ref(),
            Arc::new(FixtureBridge),
            200,
        ))
        .unwrap();
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}

criterion_group!(benches, cells);
criterion_main!(benches);
