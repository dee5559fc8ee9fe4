//! Logging and completion through `serve`, driven by the official Python SDK
//! (`tests/fixtures/mcp/relays.py`) against our conformance test server: an upstream's log
//! messages during a call reach the caller at the level it set, tagged with the server, and so
//! do toolsearch's own;
//! `completion/complete` reaches the server that owns the prompt under its own name, with
//! policy applied.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{config_file, everything, fixtures, policy_flags, sdk_script, through_serve};

fn conformance_server() -> Value {
    json!({
        "command": fixtures().join(".venv/bin/python"),
        "args": [fixtures().join("servers/conformance_server.py"), "--stdio"],
    })
}

/// `relays.py` with `args` against `serve --mode direct` over `servers` (over HTTP when
/// `http`), with `policy` when given.
fn relays(servers: Value, http: bool, policy: Option<Value>, args: &[&str]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), servers);
    let flags = policy.map_or_else(Vec::new, |policy| policy_flags(dir.path(), &policy));
    let mut client = sdk_script("relays.py");
    client.args(args);
    through_serve(client, &config, "direct", &flags, http)
}

#[test]
fn an_upstreams_log_messages_reach_the_caller_at_its_level_tagged_with_the_server() {
    for http in [false, true] {
        let call = ["--tool", "test_tool_with_logging"];
        let out = relays(
            json!({"conf": conformance_server()}),
            http,
            None,
            &[&call[..], &["--level", "info"]].concat(),
        );
        assert_eq!(out["level"], json!({}), "{out}");
        assert!(out["capabilities"]["logging"].is_object(), "{out}");
        assert_eq!(
            out["result"]["content"][0]["text"],
            "Tool with logging executed successfully"
        );
        let logs: Vec<(String, String, String)> = out["logs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|log| {
                (
                    log["level"].as_str().unwrap().to_string(),
                    log["logger"].as_str().unwrap().to_string(),
                    log["data"].to_string(),
                )
            })
            .collect();
        assert_eq!(logs.len(), 3, "http {http}: {out}");
        for (level, logger, data) in &logs {
            assert_eq!(
                (level.as_str(), logger.as_str()),
                ("info", "conf"),
                "{data}"
            );
        }
        assert!(logs[0].2.contains("Tool execution started"), "{logs:?}");
        // Above the messages' level: the call works and none is relayed.
        let out = relays(
            json!({"conf": conformance_server()}),
            http,
            None,
            &[&call[..], &["--level", "warning"]].concat(),
        );
        assert_eq!(out["level"], json!({}));
        assert!(out["result"]["content"].is_array(), "{out}");
        assert_eq!(out["logs"], json!([]), "http {http}");
    }
}

/// A completion of `test_prompt_with_arguments`' `arg1` under the name `prompt`.
fn arg1(prompt: &str, value: &str) -> Value {
    json!({"prompt": prompt, "argument": {"name": "arg1", "value": value}})
}

fn values(completion: &Value) -> Value {
    completion["completion"]["values"].clone()
}

#[test]
fn completion_reaches_the_server_that_owns_the_prompt_with_policy_applied() {
    // Two servers with the same prompts: each reached under its own name.
    let asks = json!([
        arg1("conf__test_prompt_with_arguments", "pa"),
        arg1("twin__test_prompt_with_arguments", "te"),
        {"template": "test://template/{id}/data", "argument": {"name": "id", "value": "1"}},
    ]);
    let both = json!({"conf": conformance_server(), "twin": conformance_server()});
    let out = relays(both, false, None, &["--complete", &asks.to_string()]);
    assert!(out["capabilities"]["completions"].is_object(), "{out}");
    let completions = &out["completions"];
    assert_eq!(values(&completions[0]), json!(["paris", "park", "party"]));
    assert_eq!(values(&completions[1]), json!(["test", "testValue1"]));
    assert_eq!(values(&completions[2]), json!([]), "{completions}");
    // A denied server's prompt is answered like one nobody has, over HTTP too.
    let asks = json!([
        arg1("test_prompt_with_arguments", "par"),
        arg1("secret__test_prompt_with_arguments", "pa"),
        arg1("no_such_prompt", "pa"),
    ]);
    let servers = json!({"conf": conformance_server(), "secret": conformance_server()});
    let policy = json!({"session": {"deny": ["mcp:secret:*"]}});
    let out = relays(
        servers,
        true,
        Some(policy),
        &["--complete", &asks.to_string()],
    );
    let completions = &out["completions"];
    assert_eq!(values(&completions[0]), json!(["paris", "park", "party"]));
    let unknown = completions[2]["error"].as_str().unwrap();
    assert_eq!(
        completions[1]["error"].as_str().unwrap(),
        unknown.replace("no_such_prompt", "secret__test_prompt_with_arguments")
    );
}

#[test]
fn toolsearchs_own_warnings_reach_a_client_that_set_a_level() {
    // Two servers listing the same URIs: toolsearch warns of the clash when it lists them.
    let servers = json!({"everything": everything(), "twin": everything()});
    for (level, expected) in [("warning", true), ("error", false)] {
        let out = relays(
            servers.clone(),
            false,
            None,
            &["--level", level, "--list-resources"],
        );
        assert!(out["resources"].as_u64().unwrap() > 0, "{out}");
        let own: Vec<&Value> = out["logs"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|log| log["logger"] == "toolsearch")
            .collect();
        assert_eq!(!own.is_empty(), expected, "{level}: {out}");
        if expected {
            assert_eq!(own[0]["level"], "warning");
            let text = own[0]["data"].as_str().unwrap();
            assert!(text.contains("the same resource URI"), "{text}");
            assert!(text.contains("toolsearch://twin/"), "{text}");
        }
    }
}
