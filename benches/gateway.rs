//! The gateway's own overhead per call: resolve + policy + hooks + validation + schedule +
//! timeout + envelope + log, with a trivial tool body and a typical 10-property schema.
//! Baseline in the same run: the same tool body called directly.

#![allow(clippy::unwrap_used, clippy::expect_used, missing_docs)]

use std::hint::black_box;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};
use toolsearch::{BeforeToolCall, Gateway, HookDecision};
use toolsearch::{CallContext, CatalogSnapshot, Descriptor, FnTool, Source, Tool, ToolOutput};

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "title": {"type": "string", "description": "Title"},
            "start": {"type": "string", "format": "date-time"},
            "end": {"type": "string", "format": "date-time"},
            "attendees": {"type": "array", "items": {"type": "string"}, "maxItems": 50},
            "location": {"type": "string"},
            "priority": {"type": "integer", "minimum": 1, "maximum": 5},
            "visibility": {"type": "string", "enum": ["public", "private", "busy"]},
            "reminder_minutes": {"type": "integer", "minimum": 0},
            "all_day": {"type": "boolean"},
            "notes": {"type": "string", "maxLength": 2000}
        },
        "required": ["title", "start"],
        "additionalProperties": false
    })
}

fn args() -> Value {
    json!({"title": "Design review", "start": "2026-12-01T10:00:00Z", "end": "2026-12-01T11:00:00Z",
           "attendees": ["ana@example.com", "bo@example.com"], "priority": 2, "visibility": "busy",
           "reminder_minutes": 10, "all_day": false})
}

struct PassThrough;
impl BeforeToolCall for PassThrough {
    fn before_call<'a>(
        &'a self,
        _t: &'a Descriptor,
        _a: &'a Value,
    ) -> toolsearch::BoxFuture<'a, HookDecision> {
        Box::pin(async { HookDecision::Continue })
    }
}

fn bench_gateway(c: &mut Criterion) {
    let body: Arc<dyn Tool> = Arc::new(FnTool(|_ctx, _args| async {
        Ok(ToolOutput::json(json!({"id": "evt_1"})))
    }));
    let mut tools: Vec<Descriptor> = (0..300)
        .map(|i| {
            Descriptor::new(Source::Plugin, "filler", &format!("tool_{i}"))
                .description("filler tool")
        })
        .collect();
    tools.push(
        Descriptor::new(Source::Plugin, "calendar", "create_event")
            .description("Create an event")
            .input_schema(schema())
            .tool(body.clone()),
    );
    let gateway = Gateway::builder(CatalogSnapshot::build(tools))
        .hook(Arc::new(PassThrough))
        .build()
        .unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let request = json!({"id": "plugin:calendar:create_event", "args": args()});
    // Warm the validator cache; check the path works.
    assert!(rt.block_on(gateway.call(&request)).envelope().is_some());

    let mut group = c.benchmark_group("gateway");
    group.measurement_time(Duration::from_secs(5));
    group.bench_function("call_10_property_schema", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let outcome = gateway.call(black_box(&request)).await;
                    assert!(outcome.envelope().is_some());
                }
                start.elapsed()
            })
        })
    });
    let ctx = CallContext {
        tool_id: "plugin:calendar:create_event".into(),
        run_id: "bench".into(),
        nested: None,
    };
    group.bench_function("direct_tool_body_baseline", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let out = body.call(&ctx, black_box(args())).await.unwrap();
                    assert!(out.details.is_some());
                }
                start.elapsed()
            })
        })
    });
    group.finish();
}

criterion_group!(benches, bench_gateway);
criterion_main!(benches);
