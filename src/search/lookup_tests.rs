//! Describe, lenient names, ambiguity and suggestions, on the lookup directly.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::SearchIndex;
use crate::search::lookup::{self, LookupError, Resolution};
use crate::{Authorized, Policy};
use crate::{CatalogSnapshot, Descriptor, Source};
use pretty_assertions::assert_eq;
use serde_json::json;

fn index_with(policy: Policy) -> SearchIndex {
    let schema = json!({"type":"object","properties":{"title":{"type":"string"}},"required":["title"],"additionalProperties":false});
    let out = json!({"type":"object","properties":{"id":{"type":"string"}},"required":["id"],"additionalProperties":false});
    let tools = vec![
        Descriptor::new(Source::Plugin, "calendar", "create_event")
            .description("Create a calendar event")
            .input_schema(schema.clone())
            .output_schema(out.clone()),
        Descriptor::new(Source::Plugin, "outlook", "create_event")
            .description("Create an Outlook event")
            .input_schema(schema.clone()),
        Descriptor::new(Source::Mcp, "gh", "create_issue")
            .description("Open an issue")
            .input_schema(schema)
            .output_schema(out),
        Descriptor::new(Source::Plugin, "math", "math.factorial").description("n!"),
        Descriptor::new(Source::Plugin, "mail", "send_email").description("Send mail"),
    ];
    SearchIndex::build(&Authorized::new(CatalogSnapshot::build(tools), policy)).unwrap()
}

#[test]
fn describe_returns_the_hit_and_the_exact_schemas() {
    let index = index_with(Policy::allow_all());
    let described = lookup::describe(&index, "plugin:calendar:create_event").unwrap();
    assert_eq!(described.hit.input, "{ title: string }");
    assert_eq!(described.hit.output.as_deref(), Some("{ id: string }"));
    assert_eq!(described.input_schema["required"], json!(["title"]));
    assert!(described.output_schema.is_some());
    let value = serde_json::to_value(&described).unwrap();
    assert_eq!(value["id"], "plugin:calendar:create_event");
    assert!(value.get("input_schema").is_some());

    // Untrusted: exact input schema (needed to call it), but no output schema and no hints.
    let mcp = lookup::describe(&index, "mcp:gh:create_issue").unwrap();
    assert_eq!(mcp.hit.input, "unknown");
    assert_eq!(mcp.output_schema, None);
}

#[test]
fn names_resolve_leniently_but_never_ambiguously() {
    let index = index_with(Policy::allow_all());
    let id_of = |selector: &str| match lookup::resolve(&index, selector) {
        Resolution::Found(p) => index.tool(p).unwrap().id.clone(),
        other => panic!("{selector}: {other:?}"),
    };
    assert_eq!(
        id_of("calendar.create_event"),
        "plugin:calendar:create_event"
    );
    assert_eq!(
        id_of("calendar__create_event"),
        "plugin:calendar:create_event"
    );
    assert_eq!(id_of("outlook:create_event"), "plugin:outlook:create_event");
    assert_eq!(id_of("create_issue"), "mcp:gh:create_issue");
    assert_eq!(id_of("gh__create_issue"), "mcp:gh:create_issue");
    assert_eq!(
        id_of("math.factorial"),
        "plugin:math:math.factorial",
        "a dotted name wins as a name"
    );
    assert_eq!(id_of("Send_Email"), "plugin:mail:send_email");

    match lookup::describe(&index, "create_event") {
        Err(LookupError::Ambiguous { candidates, .. }) => assert_eq!(
            candidates,
            [
                "plugin:calendar:create_event",
                "plugin:outlook:create_event"
            ]
        ),
        other => panic!("{other:?}"),
    }
    let message = lookup::describe(&index, "create_event")
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        "\"create_event\" is ambiguous: it matches 2 tools: \"plugin:calendar:create_event\", \"plugin:outlook:create_event\"."
    );
}

#[test]
fn unknown_tools_get_up_to_three_suggestions_in_neutral_words() {
    let index = index_with(Policy::allow_all());
    let error = lookup::describe(&index, "create_evnt").unwrap_err();
    let LookupError::Unknown { suggestions, .. } = &error else {
        panic!("{error:?}")
    };
    assert!(suggestions.len() <= 3 && !suggestions.is_empty());
    assert!(suggestions.contains(&"plugin:calendar:create_event".to_string()));
    let text = error.to_string();
    assert!(
        text.starts_with("Unknown tool \"create_evnt\". Did you mean "),
        "{text}"
    );
    // The lookup names no control: the surface adds the recovery in the model's vocabulary.
    assert!(text.ends_with('?'), "{text}");
    assert!(!text.contains("tool_"), "{text}");
}

#[test]
fn a_denied_tool_is_unknown_and_never_a_candidate() {
    let policy =
        Policy::from_json(&json!({"agent": {"deny": ["plugin:outlook:*", "send_email"]}})).unwrap();
    let index = index_with(policy);
    // The ambiguity disappears: only the allowed tool is a candidate.
    assert_eq!(
        lookup::describe(&index, "create_event").unwrap().hit.id,
        "plugin:calendar:create_event"
    );
    let denied = lookup::describe(&index, "send_email")
        .unwrap_err()
        .to_string();
    let never_existed = lookup::describe(&index, "send_emial")
        .unwrap_err()
        .to_string();
    assert!(
        denied.starts_with("Unknown tool \"send_email\"."),
        "{denied}"
    );
    assert!(!denied.contains("plugin:mail:send_email"));
    assert!(
        !never_existed.contains("plugin:mail:send_email"),
        "{never_existed}"
    );
    assert!(!never_existed.contains("outlook"));
}

#[test]
fn describe_json_is_the_same_object_however_it_is_built() {
    // The gateway moves the fields into JSON (`into_json`); the CLI serializes (`Serialize`).
    // Both must give the same flat object, with and without an output signature and schema.
    let index = index_with(Policy::allow_all());
    for id in [
        "plugin:calendar:create_event",
        "plugin:outlook:create_event",
        "mcp:gh:create_issue",
        "plugin:math:math.factorial",
    ] {
        let described = lookup::describe(&index, id).unwrap();
        let serialized = serde_json::to_value(&described).unwrap();
        assert_eq!(described.into_json(), serialized, "{id}");
        assert_eq!(serialized["id"], id);
        assert!(serialized.get("hit").is_none(), "the hit is flattened");
        assert!(serialized.get("output_schema").is_some());
    }
}
