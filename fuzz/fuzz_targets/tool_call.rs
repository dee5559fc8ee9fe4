//! `tool_call` argument repair (the gateway's resolve stage) and validation against a schema,
//! on an arbitrary JSON value `{"schema": S, "request": R}`. Invariants: a repaired call names
//! a tool of the index and has object arguments; explicit `{id, args}` arguments pass through
//! unchanged; the gateway compiles every schema the validator crate compiles; "no problems"
//! exactly when the validator (the gateway's and one built here from the raw schema) accepts;
//! at most `MAX_REPORTED_ERRORS` problems; no long string of the arguments is echoed whole.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};
use toolsearch::fuzzing::{
    CompiledSchema, Descriptor, MAX_REPORTED_ERRORS, SearchIndex, Source, build_index, repair_call,
};

/// Strings of the arguments longer than this may only be echoed cut.
const ECHO_CHARS: usize = 256;

fn index() -> &'static SearchIndex {
    static INDEX: OnceLock<SearchIndex> = OnceLock::new();
    INDEX.get_or_init(|| {
        let tool = |owner: &str, name: &str, description: &str| {
            Descriptor::new(Source::Plugin, owner, name).description(description)
        };
        build_index(vec![
            tool("files", "read_file", "Read a file from disk"),
            tool("files", "write_file", "Write a file to disk"),
            tool("mail", "send_email", "Send an email message"),
            tool(
                "notes",
                "name",
                "A tool whose name is a common argument name",
            ),
            tool("github", "create_issue", "Open an issue in a repository"),
        ])
        .expect("the fixed index builds")
    })
}

fn long_strings<'a>(value: &'a Value, out: &mut Vec<&'a str>) {
    match value {
        Value::String(s) if s.chars().count() > ECHO_CHARS => out.push(s),
        Value::Array(items) => items.iter().for_each(|v| long_strings(v, out)),
        Value::Object(map) => {
            for (key, value) in map {
                if key.chars().count() > ECHO_CHARS {
                    out.push(key);
                }
                long_strings(value, out);
            }
        }
        _ => {}
    }
}

fuzz_target!(|data: &[u8]| {
    let Some(Value::Object(input)) = toolsearch_fuzz::json(data) else {
        return;
    };
    let request = input.get("request").cloned().unwrap_or(Value::Null);
    let index = index();
    let repaired = repair_call(index, &request);
    assert_eq!(
        repaired,
        repair_call(index, &request),
        "repair not deterministic"
    );
    let (id, args) = match repaired {
        Ok(call) => call,
        Err(message) => {
            assert!(!message.is_empty());
            return;
        }
    };
    assert!(
        index.view().get(&id).is_some(),
        "repaired call names {id}, not in the index"
    );
    assert!(args.is_object(), "repaired arguments are not an object");
    if let Some(Value::Object(explicit)) = request.get("args")
        && request.as_object().is_some_and(|m| m.len() == 2)
        && request.get("id") == Some(&json!(id))
        && !explicit.is_empty()
    {
        assert_eq!(
            &args,
            &Value::Object(explicit.clone()),
            "explicit args were changed"
        );
    }

    let Some(schema) = input.get("schema") else {
        return;
    };
    let raw = jsonschema::options()
        .should_validate_formats(false)
        .build(schema);
    let compiled = match CompiledSchema::new(schema) {
        Ok(compiled) => compiled,
        Err(message) => {
            assert!(
                raw.is_err(),
                "the gateway rejects a schema the validator compiles: {message}"
            );
            return;
        }
    };
    let valid = compiled.is_valid(&args);
    if let Ok(raw) = &raw {
        assert_eq!(
            raw.is_valid(&args),
            valid,
            "the gateway's validator disagrees with the raw one"
        );
    }
    let (problems, text) = compiled.problems(&id, schema, &args);
    assert_eq!(
        problems.is_empty(),
        valid,
        "problems {problems:?} but valid = {valid}"
    );
    assert!(
        problems.len() <= MAX_REPORTED_ERRORS,
        "{} problems",
        problems.len()
    );
    let mut long = Vec::new();
    long_strings(&args, &mut long);
    for s in long {
        assert!(
            !text.contains(s),
            "the error echoes a {}-char argument string whole",
            s.chars().count()
        );
    }
});
