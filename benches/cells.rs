//! Code-cell latency: warm pool, cold fork, and the reference architecture (a Node.js child per
//! cell) in the same run, all running `js/examples/walkthrough.js` (search + describe + call)
//! against the same gateway over the demo catalog. A fixture-bridge series isolates the sandbox's
//! own cost. Every iteration checks its result inside the timed loop.
#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use toolsearch::Gateway;
use toolsearch::lab::cells::{self as bench, FixtureBridge, NodeScript};
use toolsearch::{Bridge, CellOptions, GatewayBridge, Outcome, Supervisor, SupervisorConfig};

/// The cell: the README's walkthrough on the demo catalog.
const CELL: &str = include_str!("../js/examples/walkthrough.js");

const BIN: &str = env!("CARGO_BIN_EXE_toolsearch");

fn expected() -> serde_json::Value {
    serde_json::json!({
        "found": ["plugin:units:convert_units", "plugin:units:convert_angle", "plugin:units:convert_pressure"],
        "tool": "plugin:units:convert_units",
        "miles": 6.213711922
    })
}

fn gateway_bridge() -> Arc<dyn Bridge> {
    Arc::new(GatewayBridge::new(
        Gateway::builder(toolsearch::demo::catalog())
            .build()
            .unwrap(),
    ))
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
            let bridge = gateway_bridge();
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                if warm {
                    // Pool refill stays outside the timed region.
                    assert!(sup.wait_pool_full(Duration::from_secs(10)).await);
                }
                let t = Instant::now();
                let r = sup
                    .run_cell(CELL, bridge.clone(), CellOptions::default())
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

    // The sandbox's own cost: the fixture bridge answers instantly with tiny values.
    let fixture = rt
        .block_on(Supervisor::start(SupervisorConfig::new(BIN)))
        .unwrap();
    group.bench_function("warm_fixture_bridge", |b| {
        b.iter_custom(|iters| {
            let sup = fixture.clone();
            rt.block_on(async move {
                tokio::spawn(async move {
                    let bridge: Arc<dyn Bridge> = Arc::new(FixtureBridge);
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        assert!(sup.wait_pool_full(Duration::from_secs(10)).await);
                        let t = Instant::now();
                        let r = sup
                            .run_cell(bench::BENCH_CELL, bridge.clone(), CellOptions::default())
                            .await;
                        assert_eq!(r.outcome, Outcome::Ok, "{r:?}");
                        total += t.elapsed();
                    }
                    total
                })
                .await
                .unwrap()
            })
        })
    });
    rt.block_on(fixture.shutdown());

    let script = NodeScript::write().unwrap();
    let bridge = gateway_bridge();
    group
        .sample_size(10)
        .measurement_time(Duration::from_secs(10));
    group.bench_function("node", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for _ in 0..iters {
                    let (dt, value) = bench::run_node_cell(&node, script.path(), CELL, &bridge)
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
            gateway_bridge(),
            CELL,
            200,
        ))
        .unwrap();
    println!("{}", serde_json::to_string_pretty(&report).unwrap());
}

criterion_group!(benches, cells);
criterion_main!(benches);
