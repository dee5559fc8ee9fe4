//! Prompts through `serve`, driven by the official Python SDK (`tests/fixtures/mcp/prompts.py`):
//! server-everything's prompts listed and got with arguments through toolsearch as from the
//! server itself, over stdio and HTTP; a denied server's prompts in no answer; prompts of the
//! same name on two servers both reachable.

use pretty_assertions::assert_eq;
use serde_json::{Value, json};

use super::{argv, config_file, everything, fixtures, policy_flags, sdk_script, through_serve};

/// Arguments for server-everything's prompts that take some.
fn arguments() -> Value {
    json!({
        "args-prompt": {"city": "Lisbon", "state": "Lisboa"},
        "completable-prompt": {"department": "Engineering", "name": "Alice"},
        "resource-prompt": {"resourceType": "Text", "resourceId": "3"},
        "test_prompt_with_arguments": {"arg1": "one", "arg2": "two"},
        "test_prompt_with_embedded_resource": {"resourceUri": "test://static-text"},
    })
}

/// The Python SDK's view of prompts: directly from `upstream` (when given) and through `serve`
/// over `servers` (over HTTP when `http`), with a policy when given.
fn prompts(
    servers: Value,
    upstream: Option<&Value>,
    http: bool,
    policy: Option<Value>,
    absent: &[&str],
) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(dir.path(), servers);
    let mut client = sdk_script("prompts.py");
    client
        .args(["--args", &arguments().to_string()])
        .args(["--absent", &absent.join(",")]);
    if let Some(upstream) = upstream {
        client.args(["--upstream", &argv(upstream)]);
    }
    let mut flags: Vec<String> = vec!["--page-size".into(), "2".into()];
    if let Some(policy) = policy {
        flags.extend(policy_flags(dir.path(), &policy));
    }
    through_serve(client, &config, "tools", &flags, http)
}

fn names(side: &Value) -> Vec<String> {
    side["prompts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn server_everythings_prompts_are_listed_and_got_with_arguments_through_serve() {
    for http in [false, true] {
        let out = prompts(
            json!({"everything": everything()}),
            Some(&everything()),
            http,
            None,
            &[],
        );
        let (direct, through) = (&out["direct"], &out["through"]);
        assert!(
            names(direct).contains(&"args-prompt".to_string()),
            "{direct}"
        );
        // A lone server's prompts keep their names; everything is as the server sent it.
        assert_eq!(through["prompts"], direct["prompts"], "http: {http}");
        assert_eq!(through["gets"], direct["gets"], "http: {http}");
        let listed = direct["prompts"].as_array().unwrap().len();
        assert_eq!(through["pages"], json!(listed.div_ceil(2)), "http: {http}");
        let asked = through["gets"]["args-prompt"].to_string();
        assert!(
            asked.contains("Lisbon"),
            "the arguments reached the server: {asked}"
        );
        assert!(through["capabilities"]["prompts"].is_object(), "{through}");
    }
}

fn conformance_server() -> Value {
    json!({
        "command": fixtures().join(".venv/bin/python"),
        "args": [fixtures().join("servers/conformance_server.py"), "--stdio"],
    })
}

#[test]
fn a_denied_servers_prompts_appear_in_no_listing_get_or_error() {
    let servers = json!({"everything": everything(), "secret": conformance_server()});
    let absent = [
        "test_simple_prompt",
        "test_prompt_with_image",
        "no_such_prompt",
    ];
    let open = prompts(servers.clone(), None, false, None, &absent);
    assert!(names(&open["through"]).contains(&"test_simple_prompt".to_string()));
    assert_eq!(open["through"]["errors"]["test_simple_prompt"], Value::Null);
    let policy = json!({"session": {"deny": ["mcp:secret:*"]}});
    for http in [false, true] {
        let out = prompts(servers.clone(), None, http, Some(policy.clone()), &absent);
        let through = &out["through"];
        let shown = json!([through["prompts"], through["gets"]]).to_string();
        assert!(!shown.contains("test_"), "{shown}");
        assert!(
            names(through).contains(&"simple-prompt".to_string()),
            "{through}"
        );
        let unknown = through["errors"]["no_such_prompt"].as_str().unwrap();
        for name in ["test_simple_prompt", "test_prompt_with_image"] {
            let error = through["errors"][name].as_str().unwrap();
            assert_eq!(error, unknown.replace("no_such_prompt", name), "{name}");
            assert!(!error.contains("secret"), "{error}");
        }
    }
}

#[test]
fn prompts_of_the_same_name_on_two_servers_are_both_reachable() {
    let out = prompts(
        json!({"everything": everything(), "twin": everything()}),
        Some(&everything()),
        false,
        None,
        &[],
    );
    let (direct, through) = (&out["direct"], &out["through"]);
    let own = names(direct);
    let shown = names(through);
    let expected: Vec<String> = own
        .iter()
        .map(|name| format!("everything__{name}"))
        .chain(own.iter().map(|name| format!("twin__{name}")))
        .collect();
    assert_eq!(shown, expected);
    for name in &own {
        for server in ["everything", "twin"] {
            let renamed = format!("{server}__{name}");
            assert_eq!(through["gets"][&renamed], direct["gets"][name], "{renamed}");
        }
    }
}
