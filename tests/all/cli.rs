use pretty_assertions::assert_eq;
use serde_json::Value;

use crate::support::{shared, stderr, stdout, toolsearch};

#[test]
fn search_json_is_compact_hits_with_what_they_cover() {
    let out = toolsearch(&["search", "stock quote", "--limit", "3", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let answer: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let hits = answer["hits"].as_array().unwrap();
    assert!(!hits.is_empty() && hits.len() <= 3);
    for key in ["id", "name", "source", "owner", "description", "input"] {
        assert!(hits[0].get(key).is_some(), "missing {key}: {}", hits[0]);
    }
    // More tools match "stock quote" than 3: the list is cut and says so.
    let matched = answer["matched"].as_u64().unwrap();
    assert!(matched > 3, "{answer}");
    assert_eq!(answer["truncated"], true);
    assert_eq!(
        answer["note"],
        format!(
            "3 of {matched} matching tools shown; refine the query or raise limit (at most 20)."
        )
    );
    // The same query with a limit above the matches: not cut.
    let out = toolsearch(&["search", "stock quote", "--limit", "20", "--json"]);
    let all: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(all["matched"], answer["matched"]);
    assert!(matched < 20, "{all}");
    assert_eq!(all["truncated"], false);
    assert_eq!(all["hits"].as_array().unwrap().len() as u64, matched);
    assert_eq!(all["note"], format!("All {matched} matching tools shown."));
    // Without --json the note closes the list.
    let out = toolsearch(&["search", "stock quote", "--limit", "3"]);
    assert!(
        stdout(&out)
            .trim_end()
            .ends_with("raise limit (at most 20)."),
        "{}",
        stdout(&out)
    );
}

#[test]
fn search_select_loads_named_tools_in_order() {
    let out = toolsearch(&[
        "search",
        "select:send_email, plugin:units:convert_units,send_email, no_such_tool",
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let answer: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let ids: Vec<&str> = answer["hits"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hit| hit["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids,
        ["plugin:mail:send_email", "plugin:units:convert_units"]
    );
    assert_eq!(answer["matched"], 2);
    assert_eq!(answer["truncated"], false);
    assert_eq!(answer["not_found"][0]["name"], "no_such_tool");
    let too_many = format!(
        "select:{}",
        (0..21)
            .map(|i| format!("t{i}"))
            .collect::<Vec<_>>()
            .join(",")
    );
    let out = toolsearch(&["search", &too_many]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("at most 20 names"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn describe_json_is_an_object_or_an_array() {
    let one = toolsearch(&["search", "web", "--json"]);
    let hits: Value = serde_json::from_str::<Value>(&stdout(&one)).unwrap()["hits"].clone();
    let first = hits[0]["id"].as_str().unwrap().to_string();
    let second = hits[1]["id"].as_str().unwrap().to_string();

    let out = toolsearch(&["describe", &first, "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let described: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(described["id"], Value::from(first.clone()));
    assert!(described.get("input_schema").is_some());
    assert!(
        described.get("output_schema").is_some(),
        "key present (null when none)"
    );

    let out = toolsearch(&["describe", &first, &second, "--json"]);
    let described: Value = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(described.as_array().map(Vec::len), Some(2));
}

#[test]
fn exit_codes_are_0_ok_1_refused_2_usage() {
    assert_eq!(toolsearch(&["search"]).status.code(), Some(2));
    assert_eq!(toolsearch(&["frobnicate"]).status.code(), Some(2));
    assert_eq!(
        toolsearch(&["search", "x", "--limit", "0"]).status.code(),
        Some(1)
    );
    let unknown = toolsearch(&["describe", "no_such_tool_anywhere"]);
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr(&unknown).contains("Unknown tool \"no_such_tool_anywhere\""),
        "{}",
        stderr(&unknown)
    );
}

#[test]
fn skipped_catalog_lines_are_counted_on_stderr_and_do_not_fail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("tools.jsonl");
    std::fs::write(
        &path,
        "{\"id\":\"a\",\"name\":\"alpha_tool\",\"description\":\"alpha things\"}\nnot json\n{\"id\":\"b\"}\n",
    )
    .unwrap();
    let out = toolsearch(&[
        "search",
        "alpha",
        "--catalog",
        path.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("skipped 2 catalog line(s)"),
        "{}",
        stderr(&out)
    );
    let hits: Value = serde_json::from_str::<Value>(&stdout(&out)).unwrap()["hits"].clone();
    assert_eq!(hits[0]["id"], "plugin:tools:alpha_tool");

    std::fs::write(&path, "not json\n").unwrap();
    let out = toolsearch(&["search", "alpha", "--catalog", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1), "nothing loaded is a failure");
}

#[test]
fn eval_json_has_exactly_the_metric_keys() {
    let set = shared().join("eval/livemcpbench");
    let out = toolsearch(&[
        "eval",
        "--catalog",
        set.join("catalog.jsonl").to_str().unwrap(),
        "--queries",
        set.join("queries.dev.jsonl").to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [
            "hit@1",
            "hit@10",
            "hit@5",
            "latency_us",
            "mrr",
            "ndcg@10",
            "queries",
            "ranker",
            "recall@1",
            "recall@10",
            "recall@5"
        ]
    );
    assert_eq!(value["queries"], 30);
    assert_eq!(value["ranker"], "lexical");
    // The reference ranker's dev NDCG@10 on this set is 0.359; the floor is 0.33.
    assert!(value["ndcg@10"].as_f64().unwrap() >= 0.33, "{value}");
}

#[test]
fn a_policy_file_narrows_what_the_cli_sees() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    std::fs::write(&policy, r#"{"session": {"deny": ["plugin:web:*"]}}"#).unwrap();
    let out = toolsearch(&[
        "search",
        "search the web",
        "--policy",
        policy.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!stdout(&out).contains("plugin:web:"), "{}", stdout(&out));

    std::fs::write(&policy, r#"{"user": {}}"#).unwrap();
    let out = toolsearch(&["search", "web", "--policy", policy.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("unknown policy layer"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn exec_prints_one_json_object_for_success_timeout_and_setup_failure() {
    let ok = toolsearch(&["exec", "-e", "console.log('hi'); return 1 + 1", "--json"]);
    assert_eq!(ok.status.code(), Some(0), "{}", stderr(&ok));
    let value: Value = serde_json::from_str(&stdout(&ok)).unwrap();
    assert_eq!(
        (value["ok"].clone(), value["value"].clone()),
        (Value::Bool(true), Value::from(2))
    );
    assert_eq!(value["logs"][0]["text"], "hi");

    let timeout = toolsearch(&[
        "exec",
        "-e",
        "while (true) {}",
        "--timeout-ms",
        "1000",
        "--json",
    ]);
    assert_eq!(timeout.status.code(), Some(1));
    let value: Value = serde_json::from_str(&stdout(&timeout)).unwrap();
    assert_eq!(value["error"]["kind"], "timeout");

    let setup = toolsearch(&[
        "exec",
        "-e",
        "return 1",
        "--json",
        "--worker-binary",
        "/bin/false",
    ]);
    assert_eq!(setup.status.code(), Some(1));
    let value: Value = serde_json::from_str(&stdout(&setup)).unwrap();
    assert_eq!(value["ok"], false);
    assert_eq!(value["error"]["kind"], "worker_setup_failure", "{value}");
}

#[test]
fn surface_json_reports_mode_sizes_and_the_fallback() {
    let out = toolsearch(&["surface", "--mode", "tools", "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for key in [
        "mode",
        "declared_tools",
        "request_bytes",
        "tools",
        "system_prompt",
    ] {
        assert!(value.get(key).is_some(), "missing {key}");
    }
    assert_eq!(value["mode"], "tools");
    let direct = toolsearch(&["surface", "--mode", "direct", "--json"]);
    let direct: Value = serde_json::from_str(&stdout(&direct)).unwrap();
    assert!(direct["request_bytes"].as_u64() > value["request_bytes"].as_u64());

    let fallback = toolsearch(&[
        "surface",
        "--mode",
        "code",
        "--json",
        "--worker-binary",
        "/bin/false",
    ]);
    let fallback: Value = serde_json::from_str(&stdout(&fallback)).unwrap();
    assert_eq!(fallback["mode"], "tools");
    assert_eq!(fallback["requested_mode"], "code");
    assert!(
        fallback["fallback"]
            .as_str()
            .unwrap()
            .contains("unavailable"),
        "{fallback}"
    );
}

#[test]
fn bench_cells_json_reports_every_series_from_the_same_run() {
    let out = toolsearch(&["bench", "cells", "--json", "--iterations", "3"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let report: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for series in ["warm", "warm_after_idle", "inprocess", "cold", "node"] {
        let s = &report[series];
        let p50 = s["p50_ms"]
            .as_f64()
            .unwrap_or_else(|| panic!("{series}: {s}"));
        let p99 = s["p99_ms"].as_f64().unwrap();
        assert!(p50 > 0.0 && p99 >= p50, "{series}: {s}");
        assert_eq!(s["samples"], Value::from(3), "{series}");
        // Every traced series explains itself: one median per phase.
        let phases = &s["phases"];
        if series == "node" {
            assert!(phases.is_null(), "node is not traced: {s}");
            continue;
        }
        for phase in [
            "submit_to_running_us",
            "compile_us",
            "call_guest_us",
            "call_host_us",
            "call_hops_us",
            "tail_us",
            "result_to_caller_us",
        ] {
            let v = phases[phase]
                .as_f64()
                .unwrap_or_else(|| panic!("{series}.{phase}: {s}"));
            assert!(v >= 0.0, "{series}.{phase}: {s}");
        }
        assert!(
            phases["compile_us"].as_f64().unwrap() > 0.0,
            "{series}: {s}"
        );
        if series == "inprocess" {
            assert_eq!(
                phases["call_hops_us"],
                Value::from(0.0),
                "no hops in-process: {s}"
            );
        } else {
            assert!(
                phases["call_hops_us"].as_f64().unwrap() > 0.0,
                "{series}: {s}"
            );
        }
    }
    let ratio = |a: &str, b: &str| {
        report[a]["p50_ms"].as_f64().unwrap() / report[b]["p50_ms"].as_f64().unwrap()
    };
    let node_over_warm = report["ratio_node_over_warm"].as_f64().unwrap();
    let expected = ratio("node", "warm");
    assert!(
        (node_over_warm - expected).abs() < 1e-9,
        "{node_over_warm} vs {expected}"
    );
    let warm_over_inprocess = report["ratio_warm_over_inprocess"].as_f64().unwrap();
    let expected = ratio("warm", "inprocess");
    assert!(
        (warm_over_inprocess - expected).abs() < 1e-9,
        "{warm_over_inprocess} vs {expected}"
    );
    // The machine's state is part of every report.
    let machine = &report["machine"];
    assert!(machine["cpus"].as_u64().unwrap() >= 1, "{machine}");
    assert_eq!(machine["load_average_start"].as_array().unwrap().len(), 3);
    assert_eq!(machine["load_average_end"].as_array().unwrap().len(), 3);
    assert!(machine["cpu_model"].is_string(), "{machine}");
    assert!(!machine["kernel"].as_str().unwrap().is_empty(), "{machine}");
    assert!(machine["scheduler_boot_params"].is_array(), "{machine}");
    assert_eq!(machine["worker_nice"], Value::from(10));
    assert_eq!(machine["polling"], Value::from("peer_on_other_cpu"));
    // Per CPU: a fixed loop at the start and the end. Each floor cell ran right after a warm
    // cell, pinned to the CPU that warm cell was submitted from: the floor has a p50 on exactly
    // the CPUs warm cells were submitted from, and mostly ran where most of them were.
    let loops = machine["cpu_loop_us"].as_array().unwrap();
    assert!(
        loops.iter().any(|us| us.as_f64().unwrap() > 0.0),
        "{machine}"
    );
    assert_eq!(
        machine["cpu_loop_us_end"].as_array().unwrap().len(),
        loops.len()
    );
    assert_eq!(report["inprocess"]["samples"], Value::from(3), "{report}");
    let by_cpu = report["inprocess_p50_by_cpu_ms"].as_array().unwrap();
    let submitted_from = report["warm"]["phases"]["host_cpus"].as_array().unwrap();
    let cells: u64 = submitted_from.iter().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(cells, 3, "{report}");
    for cpu in 0..by_cpu.len().max(submitted_from.len()) {
        let warm_here = submitted_from.get(cpu).and_then(Value::as_u64).unwrap_or(0);
        let floor_here = by_cpu.get(cpu).and_then(Value::as_f64).unwrap_or(0.0);
        assert_eq!(warm_here > 0, floor_here > 0.0, "CPU {cpu}: {report}");
    }
    let floor_cpu = report["inprocess_cpu"].as_u64().unwrap() as usize;
    let most = submitted_from
        .iter()
        .map(|n| n.as_u64().unwrap())
        .max()
        .unwrap();
    assert_eq!(
        submitted_from[floor_cpu].as_u64().unwrap(),
        most,
        "{report}"
    );
    assert!(report["ready_worker_rss_kib"].as_u64().unwrap() > 0);
    assert_eq!(
        report["value"]["tool"],
        Value::from("plugin:units:convert_units")
    );
}

/// Refused with exit 1 and a message on stderr containing every one of `needles`.
fn refused(args: &[&str], needles: &[&str]) {
    let out = toolsearch(args);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {}", stderr(&out));
    for needle in needles {
        assert!(stderr(&out).contains(needle), "{args:?}: {}", stderr(&out));
    }
}

#[test]
fn a_duplicate_key_in_a_policy_or_config_is_an_error_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.json");
    // "Last one wins" would drop the deny.
    std::fs::write(
        &policy,
        r#"{"session": {"deny": ["plugin:weather:*"], "deny": []}}"#,
    )
    .unwrap();
    refused(
        &["search", "weather", "--policy", policy.to_str().unwrap()],
        &["duplicate key", "session.deny"],
    );
    let config = dir.path().join("toolsearch.json5");
    std::fs::write(
        &config,
        "{profile: 'default', tools: {toolSearch: {mode: 'code', mode: 'tools'}}}",
    )
    .unwrap();
    refused(
        &["surface", "--config", config.to_str().unwrap()],
        &["duplicate key", "tools.toolSearch.mode"],
    );
}

#[test]
fn deeply_nested_documents_are_refused_by_a_named_bound_not_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let config = dir.path().join("deep.json5");
    std::fs::write(&config, format!("{{tools: {deep}}}")).unwrap();
    refused(
        &["surface", "--config", config.to_str().unwrap()],
        &["limit of 64 levels"],
    );
    let policy = dir.path().join("deep.json");
    std::fs::write(&policy, format!("{{\"session\": {deep}}}")).unwrap();
    refused(
        &["search", "x", "--policy", policy.to_str().unwrap()],
        &["limit of 64 levels"],
    );
    // Brackets inside strings and comments do not count.
    std::fs::write(
        &config,
        format!("// {deep}\n{{profile: \"default\" /* {deep} */, tools: {{toolSearch: {{mode: 'tools'}}}}}}"),
    )
    .unwrap();
    let out = toolsearch(&["surface", "--config", config.to_str().unwrap(), "--json"]);
    assert!(out.status.success(), "{}", stderr(&out));
}

#[test]
fn an_endless_catalog_stops_at_its_bound_and_bad_utf8_lines_are_skipped_by_number() {
    refused(
        &["search", "x", "--catalog", "/dev/zero"],
        &["/dev/zero", "larger than the limit of"],
    );
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("tools.jsonl");
    let mut bytes = br#"{"name": "first_tool", "description": "Convert currencies"}"#.to_vec();
    bytes.extend_from_slice(b"\n{\"name\": \"bad\xff\xfe\", \"description\": \"x\"}\n");
    bytes.extend_from_slice(br#"{"name": "third_tool", "description": "Convert units"}"#);
    std::fs::write(&catalog, bytes).unwrap();
    let out = toolsearch(&[
        "search",
        "convert",
        "--catalog",
        catalog.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let hits: Value = serde_json::from_str::<Value>(&stdout(&out)).unwrap()["hits"].clone();
    assert_eq!(hits.as_array().unwrap().len(), 2, "{hits}");
    assert!(
        stderr(&out).contains("line 2") && stderr(&out).contains("not UTF-8"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn untrusted_catalog_text_reaches_the_terminal_without_escape_sequences() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("tools.jsonl");
    std::fs::write(
        &catalog,
        "{\"name\": \"paint_tool\", \"description\": \"Paint \\u001b[31mred\\u001b[0m \\u202eevil\\u200b text\"}\n",
    )
    .unwrap();
    let path = catalog.to_str().unwrap();
    for args in [
        vec![
            "search",
            "paint",
            "--catalog",
            path,
            "--catalog-source",
            "mcp",
        ],
        vec![
            "describe",
            "mcp:tools:paint_tool",
            "--catalog",
            path,
            "--catalog-source",
            "mcp",
        ],
    ] {
        let out = toolsearch(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let text = stdout(&out);
        assert!(text.contains("Paint [31mred[0m evil text"), "{text:?}");
        assert!(
            !text.contains(['\u{1b}', '\u{202e}', '\u{200b}']),
            "{text:?}"
        );
    }
    // JSON output stays exact.
    let out = toolsearch(&["search", "paint", "--catalog", path, "--json"]);
    assert!(stdout(&out).contains("\\u001b[31m"), "{}", stdout(&out));
}

#[test]
fn eval_metrics_stay_in_range_with_duplicate_ids_in_the_catalog() {
    let dir = tempfile::tempdir().unwrap();
    let catalog = dir.path().join("catalog.jsonl");
    let line = |id: &str, description: &str| {
        format!(
            "{{\"id\": \"{id}\", \"name\": \"{id}\", \"description\": \"{description}\", \"input_schema\": {{\"type\": \"object\"}}}}\n"
        )
    };
    let mut text = String::new();
    // The gold tool three times, a second gold tool twice, and some noise.
    for _ in 0..3 {
        text.push_str(&line("weather_now", "current weather forecast for a city"));
    }
    for _ in 0..2 {
        text.push_str(&line(
            "weather_week",
            "weather forecast for the week in a city",
        ));
    }
    text.push_str(&line("send_mail", "send an email message"));
    text.push_str(&line("list_files", "list the files in a folder"));
    std::fs::write(&catalog, text).unwrap();
    let queries = dir.path().join("queries.jsonl");
    std::fs::write(
        &queries,
        "{\"qid\": \"q1\", \"query\": \"weather forecast for a city\", \"gold\": [\"weather_now\", \"weather_week\"]}\n\
         {\"qid\": \"q2\", \"query\": \"current weather\", \"gold\": [\"weather_now\"]}\n",
    )
    .unwrap();
    let out = toolsearch(&[
        "eval",
        "--catalog",
        catalog.to_str().unwrap(),
        "--queries",
        queries.to_str().unwrap(),
        "--json",
    ]);
    assert!(out.status.success(), "{}", stderr(&out));
    let value: Value = serde_json::from_str(&stdout(&out)).unwrap();
    for key in [
        "recall@1",
        "recall@5",
        "recall@10",
        "hit@1",
        "hit@5",
        "hit@10",
        "ndcg@10",
        "mrr",
    ] {
        let m = value[key].as_f64().unwrap();
        assert!((0.0..=1.0).contains(&m), "{key} = {m}: {value}");
    }
    // Both gold tools are found: deduplicated, the ranking is perfect.
    assert_eq!(value["recall@5"].as_f64().unwrap(), 1.0, "{value}");
    assert!(value["ndcg@10"].as_f64().unwrap() > 0.99, "{value}");
}

/// `bench serve` briefly (a few hundred ms per phase, a small soak): the JSON report has every
/// operation's throughput and percentiles, the servers' figures, and no leaked worker or fd.
#[test]
fn bench_serve_reports_every_operation_and_no_leaks() {
    let out = toolsearch(&[
        "bench",
        "serve",
        "--json",
        "--clients",
        "2",
        "--duration-secs",
        "0.3",
        "--soak-cells",
        "40",
    ]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    let report: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(report["clients"], 2);
    for op in [
        &report["searches"],
        &report["chain"]["search"],
        &report["chain"]["describe"],
        &report["chain"]["call"],
        &report["cells"],
    ] {
        assert!(op["count"].as_u64().unwrap() > 0, "{op}");
        assert_eq!(op["errors"], 0, "{op}");
        let (p50, p99) = (
            op["p50_ms"].as_f64().unwrap(),
            op["p99_ms"].as_f64().unwrap(),
        );
        assert!(p50 > 0.0 && p50 <= p99, "{op}");
        assert!(op["per_sec"].as_f64().unwrap() > 0.0, "{op}");
    }
    let soak = &report["soak"];
    assert_eq!(soak["count"], 40, "{soak}");
    assert!(soak["rss_growth_kib"].is_i64(), "{soak}");
    for server in ["tools", "code"] {
        let s = &report["servers"][server];
        assert!(s["rss_before_kib"].as_i64().unwrap() > 0, "{s}");
        assert!(s["fds_before"].as_i64().unwrap() > 2, "{s}");
        assert_eq!(s["leaked_fds"], 0, "{server}: {s}");
        assert_eq!(s["leaked_workers"], 0, "{server}: {s}");
    }
    // The code server's sandbox pool was up: workers were counted.
    assert!(
        report["servers"]["code"]["live_workers_after"]
            .as_i64()
            .unwrap()
            >= 1
    );
    assert_eq!(report["leaked_workers"], 0);
    assert_eq!(report["leaked_fds"], 0);
    assert_eq!(report["errors"], 0);
    for target in ["searches_per_sec", "cells_per_sec", "soak_rss_growth_kib"] {
        assert!(report["targets"][target]["met"].is_boolean(), "{report}");
    }
}
