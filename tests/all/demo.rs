//! The embedded demo catalog through the public API: its shape and mix, schema hygiene, every
//! tool called with generated arguments on a fresh world (output validated, never an echo of
//! the input), behaviour of the main owners, and the search pins the rest of the suite relies on.

use std::collections::BTreeSet;
use std::sync::Arc;

use pretty_assertions::assert_eq;
use serde_json::{Value, json};
use toolsearch::demo::{self, DemoWorld, example_args};
use toolsearch::output_signature;
use toolsearch::{
    CallContext, CatalogMode, CatalogSnapshot, Descriptor, ExecutionMode, Executor, Source,
    ToolError, ToolOutput,
};

// ---- helpers -------------------------------------------------------------------------------------------

/// Catalog-mode and direct-only tools of a snapshot, in id order.
fn every_tool(snapshot: &CatalogSnapshot) -> Vec<Descriptor> {
    let mut all: Vec<Descriptor> = snapshot
        .tools()
        .iter()
        .chain(snapshot.direct_only())
        .cloned()
        .collect();
    all.sort_by(|a, b| a.id.cmp(&b.id));
    all
}

fn ctx(id: &str) -> CallContext {
    CallContext {
        tool_id: id.to_string(),
        run_id: "demo-test".to_string(),
        nested: None,
    }
}

/// A demo tool by id on `snapshot` (catalog or direct-only).
fn find(snapshot: &CatalogSnapshot, id: &str) -> Descriptor {
    every_tool(snapshot)
        .into_iter()
        .find(|d| d.id == id)
        .unwrap_or_else(|| panic!("no demo tool {id}"))
}

async fn call_on(
    snapshot: &CatalogSnapshot,
    id: &str,
    args: Value,
) -> Result<ToolOutput, ToolError> {
    let tool = find(snapshot, id);
    let Executor::Tool(body) = &tool.executor else {
        panic!("{id} has no implementation: {:?}", tool.executor);
    };
    body.call(&ctx(id), args).await
}

/// Calls `id` on `snapshot` and returns the details, failing the test on a tool error.
async fn call(snapshot: &CatalogSnapshot, id: &str, args: Value) -> Value {
    match call_on(snapshot, id, args.clone()).await {
        Ok(output) => output.details.unwrap_or(Value::Null),
        Err(e) => panic!("{id}({args}) failed: {e}"),
    }
}

fn fresh() -> CatalogSnapshot {
    demo::catalog_with(Arc::new(DemoWorld::seeded()))
}

/// Why `output` merely echoes `args`, if it does: details equal to the arguments, an object
/// made only of argument keys with the argument values (the exact key set or a subset), an
/// empty object, or text equal to the arguments' JSON or to one string argument.
fn echo_reason(args: &Value, output: &ToolOutput) -> Option<String> {
    if output.details.is_none() && output.text.is_none() {
        return Some("returned nothing".to_string());
    }
    if let Some(details) = &output.details {
        if details == args {
            return Some("details equal the arguments".to_string());
        }
        if let (Value::Object(d), Value::Object(a)) = (details, args) {
            if d.is_empty() {
                return Some("details are an empty object".to_string());
            }
            let same_keys = d.keys().collect::<BTreeSet<_>>() == a.keys().collect::<BTreeSet<_>>();
            if d.iter().all(|(k, v)| a.get(k) == Some(v)) {
                return Some(if same_keys {
                    "details hold exactly the argument keys with the argument values".to_string()
                } else {
                    "details hold only argument keys with the argument values".to_string()
                });
            }
        }
    }
    if let Some(text) = &output.text {
        let args_json = serde_json::to_string(args).unwrap_or_default();
        if *text == args_json {
            return Some("text is the arguments' JSON".to_string());
        }
        if let Value::Object(a) = args
            && let Some((k, _)) = a.iter().find(|(_, v)| v.as_str() == Some(text.as_str()))
        {
            return Some(format!("text equals argument `{k}`"));
        }
    }
    None
}

fn validator(schema: &Value) -> jsonschema::Validator {
    jsonschema::validator_for(schema)
        .unwrap_or_else(|e| panic!("schema does not compile: {e}\n{schema:#}"))
}

fn errors(schema: &Value, instance: &Value) -> Vec<String> {
    validator(schema)
        .iter_errors(instance)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect()
}

// ---- shape and mix -------------------------------------------------------------------------------------

#[test]
fn embedded_data_parses() {
    assert_eq!(demo::load_error(), None);
}

#[test]
fn catalog_has_the_promised_size_and_mix() {
    let descriptors = demo::descriptors_with(Arc::new(DemoWorld::seeded()));
    let snapshot = CatalogSnapshot::build(descriptors.clone());
    assert!(snapshot.issues().is_empty(), "{:?}", snapshot.issues());

    let ids: BTreeSet<&str> = descriptors.iter().map(|d| d.id.as_str()).collect();
    assert_eq!(ids.len(), descriptors.len(), "duplicate ids");
    let owners: BTreeSet<&str> = descriptors.iter().map(|d| d.owner.as_str()).collect();

    let count = |f: &dyn Fn(&Descriptor) -> bool| descriptors.iter().filter(|d| f(d)).count();
    let total = descriptors.len();
    let with_output = count(&|d| d.output_schema.is_some());
    let sequential = count(&|d| d.execution_mode == ExecutionMode::Sequential);
    let approval = count(&|d| d.requires_approval);
    let timeout = count(&|d| d.timeout.is_some());
    let direct = count(&|d| d.catalog_mode == CatalogMode::DirectOnly);
    let mcp = count(&|d| d.source == Source::Mcp);
    let client = count(&|d| d.source == Source::Client);
    let core = count(&|d| d.source == Source::Core);
    println!(
        "tools {total}, owners {}, output {with_output}, sequential {sequential}, approval {approval}, \
         timeout {timeout}, direct-only {direct}, mcp {mcp}, client {client}, core {core}",
        owners.len()
    );

    assert!(total >= 300, "only {total} tools");
    assert!(
        owners.len() >= 12,
        "only {} owners: {owners:?}",
        owners.len()
    );
    assert!(
        with_output * 100 >= total * 25,
        "{with_output} of {total} have an output schema"
    );
    assert!(
        with_output * 100 <= total * 45,
        "{with_output} of {total} have an output schema"
    );
    assert!((12..=24).contains(&sequential), "{sequential} sequential");
    assert!((8..=14).contains(&approval), "{approval} need approval");
    assert!(timeout >= 3, "{timeout} with a timeout");
    assert!((3..=5).contains(&direct), "{direct} direct-only");
    assert!((5..=10).contains(&mcp), "{mcp} mcp");
    assert!((3..=5).contains(&client), "{client} client");
    assert_eq!(snapshot.direct_only().len(), direct);
    assert_eq!(snapshot.len(), total - direct);

    // the six primitives, first-party, owner core.
    let mut primitives: Vec<&str> = descriptors
        .iter()
        .filter(|d| d.is_core_primitive())
        .map(|d| d.name.as_str())
        .collect();
    primitives.sort_unstable();
    assert_eq!(
        primitives,
        ["apply_patch", "edit", "exec", "process", "read", "write"]
    );
    assert!(
        descriptors
            .iter()
            .filter(|d| d.source == Source::Core)
            .all(|d| d.owner == "core")
    );

    for d in &descriptors {
        match d.source {
            Source::Client => {
                assert_eq!(d.owner, "client");
                assert!(
                    matches!(d.executor, Executor::Client),
                    "{} must be a client tool",
                    d.id
                );
            }
            _ => assert!(
                matches!(d.executor, Executor::Tool(_)),
                "{} has no implementation",
                d.id
            ),
        }
        if d.source == Source::Mcp {
            assert!(
                d.owner.ends_with("-mcp"),
                "{} should be owned by an MCP server name",
                d.id
            );
        }
        assert!(!d.description.is_empty(), "{} has no description", d.id);
    }
}

#[test]
fn every_schema_compiles_and_is_well_formed() {
    let snapshot = fresh();
    for d in every_tool(&snapshot) {
        let schema = &d.input_schema;
        validator(schema);
        assert_eq!(
            schema["type"], "object",
            "{}: input schema must be an object schema",
            d.id
        );
        let properties = schema["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{}: no properties", d.id));
        for (name, property) in properties {
            assert!(
                property["description"]
                    .as_str()
                    .is_some_and(|s| !s.is_empty()),
                "{}: parameter {name} has no description",
                d.id
            );
        }
        for required in schema["required"].as_array().into_iter().flatten() {
            let key = required.as_str().unwrap_or_default();
            assert!(
                properties.contains_key(key),
                "{}: required {key} is not a property",
                d.id
            );
        }
        if let Some(output) = &d.output_schema {
            validator(output);
            assert!(
                output_signature(output).is_some(),
                "{}: output schema must be complete and closed (R-4.4): {output}",
                d.id
            );
        }
    }
    let closed = every_tool(&snapshot)
        .iter()
        .filter(|d| d.input_schema["additionalProperties"] == json!(false))
        .count();
    assert!(
        closed * 10 >= every_tool(&snapshot).len() * 8,
        "most input schemas should be closed"
    );
}

// ---- every tool, called for real -----------------------------------------------------------------------

#[tokio::test]
async fn every_tool_runs_on_generated_arguments_and_never_echoes() {
    let ids: Vec<(String, Source)> = every_tool(&fresh())
        .iter()
        .map(|d| (d.id.clone(), d.source))
        .collect();
    let mut failures = Vec::new();
    let mut called = 0;
    for (id, source) in ids {
        if source == Source::Client {
            continue;
        }
        // A fresh world per tool: every example must hit the seeded fixtures on its own.
        let tool = demo::descriptors_with(Arc::new(DemoWorld::seeded()))
            .into_iter()
            .find(|d| d.id == id)
            .unwrap_or_else(|| panic!("{id} vanished"));
        let Executor::Tool(body) = &tool.executor else {
            failures.push(format!("{id}: no implementation"));
            continue;
        };
        let args = example_args(&tool.input_schema);
        let invalid = errors(&tool.input_schema, &args);
        if !invalid.is_empty() {
            failures.push(format!(
                "{id}: generated arguments {args} are invalid: {invalid:?}"
            ));
            continue;
        }
        called += 1;
        match body.call(&ctx(&id), args.clone()).await {
            Err(e) => failures.push(format!("{id}({args}) failed: {e}")),
            Ok(output) => {
                if let (Some(schema), Some(details)) = (&tool.output_schema, &output.details) {
                    let invalid = errors(schema, details);
                    if !invalid.is_empty() {
                        failures.push(format!(
                            "{id}: details {details} break the output schema: {invalid:?}"
                        ));
                    }
                }
                if tool.output_schema.is_some() && output.details.is_none() {
                    failures.push(format!(
                        "{id}: declares an output schema but returned no details"
                    ));
                }
                if let Some(reason) = echo_reason(&args, &output) {
                    failures.push(format!(
                        "{id}({args}) echoes its input: {reason}: {output:?}"
                    ));
                }
            }
        }
    }
    assert!(called >= 290, "only {called} tools were called");
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn echo_detector_catches_echoes() {
    let args = json!({"path": "/a", "n": 1});
    let out = |details: Value| ToolOutput::json(details);
    assert!(echo_reason(&args, &out(args.clone())).is_some());
    assert!(echo_reason(&args, &out(json!({"path": "/a"}))).is_some());
    assert!(echo_reason(&args, &out(json!({}))).is_some());
    assert!(echo_reason(&args, &ToolOutput::text("/a")).is_some());
    assert!(echo_reason(&args, &ToolOutput::text(args.to_string())).is_some());
    assert!(echo_reason(&args, &ToolOutput::default()).is_some());
    assert_eq!(
        echo_reason(&args, &out(json!({"path": "/a", "size": 3}))),
        None
    );
    assert_eq!(
        echo_reason(&args, &out(json!({"path": "/b", "n": 1}))),
        None
    );
}

#[tokio::test]
async fn bad_but_valid_input_is_a_clean_error() {
    let snapshot = fresh();
    let cases = [
        ("plugin:calendar:get_event", json!({"event_id": "evt_0"})),
        (
            "plugin:mail:get_message",
            json!({"message_id": "msg_missing"}),
        ),
        (
            "plugin:github:get_issue",
            json!({"repo": "acme/nope", "number": 1}),
        ),
        (
            "plugin:github:get_issue",
            json!({"repo": "acme/widgets", "number": 999}),
        ),
        ("plugin:notes:get_note", json!({"note_id": "note_0"})),
        ("plugin:tasks:complete_task", json!({"task_id": "tsk_304"})),
        ("plugin:files:read_file", json!({"path": "/nowhere.txt"})),
        (
            "plugin:units:convert_units",
            json!({"value": 1, "from_unit": "km", "to_unit": "kg"}),
        ),
        ("plugin:math:describe_statistics", json!({"values": []})),
        ("plugin:finance:get_stock_quote", json!({"symbol": "ZZZZ"})),
        (
            "plugin:automations:create_automation",
            json!({"name": "x", "cron": "every day", "action": "y"}),
        ),
        ("core:core:read", json!({"path": "/etc/passwd"})),
        (
            "core:core:edit",
            json!({"path": "/README.md", "old_text": "not there", "new_text": "x"}),
        ),
        ("core:core:apply_patch", json!({"patch": "not a diff"})),
        ("mcp:maps-mcp:geocode", json!({"address": "Atlantis"})),
        (
            "plugin:time:convert_timezone",
            json!({"timestamp": "yesterday-ish", "to_timezone": "UTC"}),
        ),
        ("plugin:mail:send_email", json!("not an object")),
    ];
    for (id, args) in cases {
        match call_on(&snapshot, id, args.clone()).await {
            Ok(output) => panic!("{id}({args}) should fail, got {output:?}"),
            Err(e) => assert!(!e.message.is_empty(), "{id}: empty error"),
        }
    }
    // Empty lists are well-formed results, not errors.
    let none = call(
        &snapshot,
        "plugin:notes:search_notes",
        json!({"query": "zebra"}),
    )
    .await;
    assert_eq!(none["total"], 0);
    assert_eq!(none["notes"], json!([]));
}

// ---- behaviour -----------------------------------------------------------------------------------------

#[tokio::test]
async fn created_event_shows_up_in_the_listing() {
    let s = fresh();
    let created = call(
        &s,
        "plugin:calendar:create_event",
        json!({
            "title": "Budget review", "start": "2026-03-03T13:00:00+01:00", "duration_minutes": 45,
            "attendees": ["dana@acme.example"]
        }),
    )
    .await;
    let event = &created["event"];
    assert_eq!(event["start"], "2026-03-03T12:00:00Z");
    assert_eq!(event["end"], "2026-03-03T12:45:00Z");
    let listed = call(
        &s,
        "plugin:calendar:list_events",
        json!({"from": "2026-03-03T00:00:00Z", "to": "2026-03-04T00:00:00Z"}),
    )
    .await;
    let titles: Vec<&str> = listed["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["title"].as_str().unwrap())
        .collect();
    assert_eq!(titles, ["Budget review"]);
    let fetched = call(
        &s,
        "plugin:calendar:get_event",
        json!({"event_id": event["id"]}),
    )
    .await;
    assert_eq!(&fetched["event"], event);
    // The new event now blocks that hour.
    let conflicts = call(
        &s,
        "plugin:calendar:check_conflicts",
        json!({"start": "2026-03-03T12:30:00Z", "end": "2026-03-03T13:30:00Z"}),
    )
    .await;
    assert_eq!(conflicts["conflict"], true);
}

#[tokio::test]
async fn drafted_mail_is_listed_and_sending_moves_it_to_sent() {
    let s = fresh();
    let before = call(&s, "plugin:mail:list_drafts", json!({})).await["drafts"]
        .as_array()
        .unwrap()
        .len();
    let draft = call(
        &s,
        "plugin:mail:draft_email",
        json!({"to": ["lee@acme.example"], "subject": "Slides", "body": "Attached."}),
    )
    .await;
    let drafts = call(&s, "plugin:mail:list_drafts", json!({})).await;
    let subjects: Vec<&str> = drafts["drafts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["subject"].as_str().unwrap())
        .collect();
    assert_eq!(subjects.len(), before + 1);
    assert!(subjects.contains(&"Slides"));
    call(
        &s,
        "plugin:mail:send_draft",
        json!({"draft_id": draft["draft_id"]}),
    )
    .await;
    let sent = call(
        &s,
        "plugin:mail:search_messages",
        json!({"query": "slides", "folder": "sent"}),
    )
    .await;
    assert_eq!(sent["total"], 1);
    assert_eq!(
        call(&s, "plugin:mail:list_drafts", json!({})).await["drafts"]
            .as_array()
            .unwrap()
            .len(),
        before
    );
}

#[tokio::test]
async fn notes_persist_across_calls_on_one_world() {
    let s = fresh();
    let created = call(
        &s,
        "plugin:notes:create_note",
        json!({"title": "Parking", "body": "Level 3, spot 42"}),
    )
    .await;
    let id = created["note"]["id"].clone();
    let read = call(&s, "plugin:notes:get_note", json!({"note_id": id})).await;
    assert_eq!(read["body"], "Level 3, spot 42");
    call(
        &s,
        "plugin:notes:append_to_note",
        json!({"note_id": id, "text": "near the lift"}),
    )
    .await;
    let focused = call(&s, "plugin:notes:this", json!({})).await;
    assert_eq!(focused["note"]["id"], id);
    assert_eq!(focused["body"], "Level 3, spot 42\nnear the lift");
    // A different world does not see it.
    let other = call(
        &fresh(),
        "plugin:notes:search_notes",
        json!({"query": "parking"}),
    )
    .await;
    assert_eq!(other["total"], 0);
}

#[tokio::test]
async fn the_default_catalog_shares_one_world_for_the_process() {
    let title = "Shared-world persistence probe";
    call(
        &demo::catalog(),
        "plugin:notes:create_note",
        json!({"title": title}),
    )
    .await;
    let found = call(
        &demo::catalog(),
        "plugin:notes:search_notes",
        json!({"query": title}),
    )
    .await;
    assert_eq!(found["total"], 1);
}

#[tokio::test]
async fn tasks_move_between_states() {
    let s = fresh();
    let started = call(&s, "plugin:tasks:start_task", json!({"task_id": "tsk_301"})).await;
    assert_eq!(
        (
            started["previous_status"].as_str(),
            started["task"]["status"].as_str()
        ),
        (Some("todo"), Some("in_progress"))
    );
    let done = call(
        &s,
        "plugin:tasks:complete_task",
        json!({"task_id": "tsk_301"}),
    )
    .await;
    assert_eq!(done["task"]["status"], "done");
    assert!(
        call_on(
            &s,
            "plugin:tasks:complete_task",
            json!({"task_id": "tsk_301"})
        )
        .await
        .is_err()
    );
    let stats = call(&s, "plugin:tasks:get_task_stats", json!({})).await;
    assert_eq!(stats["by_status"]["done"], 2);
}

#[tokio::test]
async fn converter_and_calculator_really_compute() {
    let s = fresh();
    let miles = call(
        &s,
        "plugin:units:convert_units",
        json!({"value": 10, "from_unit": "km", "to_unit": "mi"}),
    )
    .await;
    let result = miles["result"].as_f64().unwrap();
    assert!((result - 6.213_711_922).abs() < 1e-6, "10 km = {result} mi");
    let f = call(
        &s,
        "plugin:units:convert_temperature",
        json!({"value": 100, "from": "C", "to": "F"}),
    )
    .await;
    assert_eq!(f["result"], 212.0);

    let value = call(&s, "plugin:math:evaluate", json!({"expression": "2*(3+4)"})).await;
    assert_eq!(value["value"].as_f64(), Some(14.0));
    let with_vars = call(
        &s,
        "plugin:math:evaluate",
        json!({"expression": "sqrt(x^2 + y^2)", "variables": {"x": 3, "y": 4}}),
    )
    .await;
    assert_eq!(with_vars["value"].as_f64(), Some(5.0));

    let deep = format!("{}1{}", "(".repeat(200), ")".repeat(200));
    let err = call_on(&s, "plugin:math:evaluate", json!({"expression": deep}))
        .await
        .unwrap_err();
    assert!(err.message.contains("nested too deeply"), "{}", err.message);
    let err = call_on(&s, "plugin:math:evaluate", json!({"expression": "1/0"}))
        .await
        .unwrap_err();
    assert!(err.message.contains("division by zero"), "{}", err.message);
}

#[tokio::test]
async fn exec_reads_the_in_memory_tree_and_refuses_host_commands() {
    let s = fresh();
    let out = call(&s, "core:core:exec", json!({"command": "cat /README.md"})).await;
    assert_eq!(out["exit_code"], 0);
    assert!(
        out["stdout"]
            .as_str()
            .unwrap()
            .starts_with("# Acme Widgets\n")
    );

    let err = call_on(
        &s,
        "core:core:exec",
        json!({"command": "curl https://example.com"}),
    )
    .await
    .unwrap_err();
    assert!(err.message.contains("command not found"), "{}", err.message);
    let err = call_on(&s, "core:core:exec", json!({"command": "ls; rm -rf /"}))
        .await
        .unwrap_err();
    assert!(err.message.contains("not supported"), "{}", err.message);

    // Host paths do not exist in the workspace.
    let host = call(
        &s,
        "core:core:exec",
        json!({"command": "cat /etc/hostname"}),
    )
    .await;
    assert_eq!(host["exit_code"], 1);
    assert_eq!(host["stdout"], "");

    // write → exec → edit → read round trip, all in memory.
    call(
        &s,
        "core:core:write",
        json!({"path": "/tmp/hello.txt", "content": "hello\nworld\n"}),
    )
    .await;
    let grep = call(
        &s,
        "core:core:exec",
        json!({"command": "grep -n world /tmp/hello.txt | wc -l"}),
    )
    .await;
    assert_eq!(grep["stdout"], "1\n");
    call(
        &s,
        "core:core:edit",
        json!({"path": "/tmp/hello.txt", "old_text": "world", "new_text": "demo"}),
    )
    .await;
    let read = call(&s, "core:core:read", json!({"path": "/tmp/hello.txt"})).await;
    assert_eq!(read["content"], "hello\ndemo");

    // Background processes are inspected with `process`.
    let started = call(
        &s,
        "core:core:exec",
        json!({"command": "find / -name '*.rs'", "background": true}),
    )
    .await;
    let pid = started["pid"].as_i64().unwrap();
    let output = call(
        &s,
        "core:core:process",
        json!({"action": "output", "pid": pid}),
    )
    .await;
    assert_eq!(output["stdout"], "/src/lib.rs\n/src/main.rs\n");
    let killed = call(
        &s,
        "core:core:process",
        json!({"action": "kill", "pid": 4100}),
    )
    .await;
    assert_eq!(killed["process"]["status"], "killed");
}

#[tokio::test]
async fn apply_patch_edits_creates_and_is_atomic() {
    let s = fresh();
    let patch = "--- a/README.md\n+++ b/README.md\n@@ -1,3 +1,3 @@\n-# Acme Widgets\n+# Acme Widgets Pro\n \n A small Rust library that lays out dashboard widgets.\n--- /dev/null\n+++ b/docs/new.md\n@@ -0,0 +1,1 @@\n+new page\n";
    let out = call(&s, "core:core:apply_patch", json!({"patch": patch})).await;
    assert_eq!(
        out["files"],
        json!([
            {"path": "/README.md", "action": "modified", "hunks": 1},
            {"path": "/docs/new.md", "action": "created", "hunks": 1}
        ])
    );
    let head = call(
        &s,
        "core:core:exec",
        json!({"command": "head -n 1 /README.md && cat /docs/new.md"}),
    )
    .await;
    assert_eq!(head["stdout"], "# Acme Widgets Pro\nnew page\n");
    // A second hunk that does not match rejects the whole patch: the first file is unchanged.
    let bad = "--- a/docs/new.md\n+++ b/docs/new.md\n@@ -1 +1 @@\n-new page\n+newer page\n--- a/README.md\n+++ b/README.md\n@@ -1 +1 @@\n-# Nope\n+# Never\n";
    assert!(
        call_on(&s, "core:core:apply_patch", json!({"patch": bad}))
            .await
            .is_err()
    );
    let still = call(&s, "core:core:read", json!({"path": "/docs/new.md"})).await;
    assert_eq!(still["content"], "new page");
}

#[tokio::test]
async fn github_flow_branch_pr_merge() {
    let s = fresh();
    call(&s, "plugin:github:commit_file", json!({"repo": "acme/gateway", "path": "src/limits.rs", "content": "pub const RATE: u32 = 10;\n", "message": "Add rate limits", "branch": "main"})).await;
    call(
        &s,
        "plugin:github:create_branch",
        json!({"repo": "acme/gateway", "branch": "feature/x"}),
    )
    .await;
    call(&s, "plugin:github:commit_file", json!({"repo": "acme/gateway", "path": "src/x.rs", "content": "// x\n", "message": "Add x", "branch": "feature/x"})).await;
    let pr = call(
        &s,
        "plugin:github:create_pull_request",
        json!({"repo": "acme/gateway", "title": "Add x", "head": "feature/x"}),
    )
    .await;
    let number = pr["pull_request"]["number"].clone();
    assert_eq!(number, 2);
    let merged = call(
        &s,
        "plugin:github:merge_pull_request",
        json!({"repo": "acme/gateway", "number": number}),
    )
    .await;
    assert_eq!(merged["pull_request"]["state"], "merged");
    let file = call(
        &s,
        "plugin:github:get_file_contents",
        json!({"repo": "acme/gateway", "path": "src/x.rs"}),
    )
    .await;
    assert_eq!(file["content"], "// x\n");
}

#[tokio::test]
async fn time_and_finance_use_the_fixed_clock_and_tables() {
    let s = fresh();
    let now = call(&s, "plugin:time:now", json!({"timezone": "Asia/Tokyo"})).await;
    assert_eq!(now["local"], "2026-03-02T18:00:00+09:00");
    let xmas = call(&s, "plugin:time:when", json!({"event": "christmas"})).await;
    assert_eq!(
        (xmas["date"].as_str(), xmas["days_until"].as_i64()),
        (Some("2026-12-25"), Some(298))
    );
    let dinner = call(&s, "plugin:time:when", json!({"event": "dinner with sam"})).await;
    assert_eq!(
        (dinner["source"].as_str(), dinner["date"].as_str()),
        (Some("calendar"), Some("2026-03-06"))
    );
    let quote = call(
        &s,
        "plugin:finance:get_stock_quote",
        json!({"symbol": "aapl"}),
    )
    .await;
    assert_eq!(quote["price"], 231.42);
    let moved = call(
        &s,
        "plugin:finance:transfer_funds",
        json!({"from_account": "acc_checking", "to_account": "acc_savings", "amount": 200}),
    )
    .await;
    assert_eq!(
        moved["balances"],
        json!([{"account_id": "acc_checking", "balance": 4015.37}, {"account_id": "acc_savings", "balance": 13000.0}])
    );
}

#[test]
fn example_args_are_deterministic_and_required_only() {
    let tool = find(&fresh(), "plugin:calendar:create_event");
    let args = example_args(&tool.input_schema);
    assert_eq!(
        args,
        json!({"title": "Project kickoff", "start": "2026-03-03T10:00:00Z"})
    );
    assert_eq!(example_args(&tool.input_schema), args);
}
