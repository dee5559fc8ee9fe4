#![allow(clippy::unwrap_used, clippy::expect_used)]
//! Signature rendering (R-4.1–R-4.5) through the public API: pinned outputs, huge schemas, and property
//! oracles (never panic, never exceed the bound, same input gives same bytes).

use proptest::prelude::*;
use serde_json::{Value, json};
use toolsearch::{Signature, input_signature, output_signature};

const INPUT_BOUNDS: toolsearch::SignatureBounds = Signature::INPUT_BOUNDS;
const OUTPUT_BOUNDS: toolsearch::SignatureBounds = Signature::OUTPUT_BOUNDS;
const NODE_BUDGET: usize = Signature::NODE_BUDGET;

fn input(schema: &Value) -> String {
    input_signature(schema).text
}

fn output(schema: &Value) -> Option<String> {
    output_signature(schema).map(|signature| signature.text)
}

fn chars(text: &str) -> usize {
    text.chars().count()
}

// ---- objects -------------------------------------------------------------------------------------------

#[test]
fn required_keys_come_first_then_optional_each_sorted() {
    let schema = json!({
        "type": "object",
        "properties": {
            "zeta": { "type": "string" },
            "mode": { "enum": ["drip", "flood"] },
            "id": { "type": "string" },
            "alpha": { "type": "boolean" },
            "count": { "type": "number" }
        },
        "required": ["zeta", "id", "zeta"]
    });
    assert_eq!(
        input_signature(&schema),
        Signature {
            text: r#"{ id: string; zeta: string; alpha?: boolean; count?: number; mode?: "drip" | "flood" }"#
                .to_owned(),
            complete: true,
            nodes_visited: 16,
        }
    );
}

#[test]
fn spec_example_renders_exactly() {
    let schema = json!({
        "type": "object",
        "properties": {
            "id": { "type": "string" },
            "mode": { "type": "string", "enum": ["drip", "flood"] }
        },
        "required": ["id"]
    });
    assert_eq!(input(&schema), r#"{ id: string; mode?: "drip" | "flood" }"#);
}

#[test]
fn non_identifier_keys_are_json_quoted() {
    let schema = json!({
        "type": "object",
        "properties": {
            "page[size]": { "type": "number" },
            "$ok_1": { "type": "string" },
            "1st": { "type": "string" },
            "with space": { "type": "string" },
            "quote\"back\\slash\n": { "type": "string" },
            "": { "type": "string" },
            "naïve": { "type": "string" }
        },
        "required": ["page[size]"]
    });
    assert_eq!(
        input(&schema),
        r#"{ "page[size]": number; ""?: string; $ok_1?: string; "1st"?: string; "naïve"?: string; "quote\"back\\slash\n"?: string; "with space"?: string }"#
    );
}

#[test]
fn required_key_missing_from_properties_is_unknown() {
    let schema = json!({
        "type": "object",
        "properties": { "a": { "type": "string" } },
        "required": ["b", 7, "a"],
        "additionalProperties": false
    });
    let signature = input_signature(&schema);
    assert_eq!(signature.text, "{ a: string; b: unknown }");
    assert!(
        !signature.complete,
        "a non-string required entry is malformed"
    );
    assert_eq!(output(&schema), None);
}

#[test]
fn nested_object_renders_inline() {
    let schema = json!({
        "type": "object",
        "properties": {
            "user": {
                "type": "object",
                "properties": {
                    "name": { "type": "string" },
                    "tags": { "type": "array", "items": { "type": "string" } }
                },
                "required": ["name"]
            }
        },
        "required": ["user"]
    });
    assert_eq!(
        input(&schema),
        "{ user: { name: string; tags?: Array<string> } }"
    );
}

#[test]
fn empty_objects() {
    assert_eq!(input(&json!({ "type": "object" })), "{}");
    assert_eq!(
        input(&json!({ "type": "object", "additionalProperties": false })),
        "{}"
    );
    assert_eq!(
        output(&json!({ "type": "object", "properties": {}, "additionalProperties": false })),
        Some("{}".to_owned())
    );
    assert_eq!(
        input(&json!({ "type": "object", "additionalProperties": true })),
        "{ ... }"
    );
}

#[test]
fn omitted_keys_append_dots() {
    let properties: serde_json::Map<String, Value> = (0..20)
        .map(|index| (format!("k{index:02}"), json!({ "type": "boolean" })))
        .collect();
    let schema = json!({ "type": "object", "properties": properties });
    let signature = input_signature(&schema);
    let shown: Vec<String> = (0..16)
        .map(|index| format!("k{index:02}?: boolean"))
        .collect();
    assert_eq!(signature.text, format!("{{ {}; ... }}", shown.join("; ")));
    assert!(!signature.complete);
}

#[test]
fn additional_properties_true_or_schema_appends_dots() {
    let open = json!({
        "type": "object",
        "properties": { "a": { "type": "string" } },
        "required": ["a"],
        "additionalProperties": true
    });
    let signature = input_signature(&open);
    assert_eq!(signature.text, "{ a: string; ... }");
    assert!(signature.complete, "allowing extra keys elides nothing");

    let map_like = json!({
        "type": "object",
        "properties": { "a": { "type": "string" } },
        "additionalProperties": { "type": "number" }
    });
    assert_eq!(input(&map_like), "{ a?: string; ... }");
}

#[test]
fn overlong_property_names_are_dropped_as_omitted() {
    let long = "x".repeat(129);
    let fits = "é".repeat(128);
    let schema = json!({
        "type": "object",
        "properties": { long.clone(): { "type": "string" }, fits.clone(): { "type": "string" } },
        "required": [long],
        "additionalProperties": false
    });
    let signature = input_signature(&schema);
    assert_eq!(signature.text, format!("{{ \"{fits}\"?: string; ... }}"));
    assert!(!signature.complete);
}

// ---- literals, unions, arrays ------------------------------------------------------------------------

#[test]
fn enum_const_type_array_and_nullable() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": { "enum": ["x", 3, true, null] },
            "b": { "const": "only" },
            "c": { "type": ["string", "null"] },
            "d": { "type": "string", "nullable": true },
            "e": { "enum": ["x", null], "nullable": true },
            "f": { "type": ["integer", "number"] },
            "g": { "enum": [] }
        },
        "required": ["a", "b", "c", "d", "e", "f", "g"]
    });
    assert_eq!(
        input(&schema),
        r#"{ a: "x" | 3 | true | null; b: "only"; c: string | null; d: string | null; e: "x" | null; f: number; g: never }"#
    );
}

#[test]
fn literal_union_over_its_bounds_falls_back_to_base_type() {
    let nine =
        json!({ "type": "object", "properties": { "n": { "enum": [1, 2, 3, 4, 5, 6, 7, 8, 9] } } });
    let signature = input_signature(&nine);
    assert_eq!(signature.text, "{ n?: number }");
    assert!(!signature.complete);

    let eight =
        json!({ "type": "object", "properties": { "n": { "enum": [1, 2, 3, 4, 5, 6, 7, 8] } } });
    assert_eq!(input(&eight), "{ n?: 1 | 2 | 3 | 4 | 5 | 6 | 7 | 8 }");

    // 96 chars exactly fits; 97 does not.
    let fits = json!({ "type": "object", "properties": { "s": { "enum": ["a".repeat(94)] } } });
    assert_eq!(input(&fits), format!("{{ s?: \"{}\" }}", "a".repeat(94)));
    let long = json!({ "type": "object", "properties": { "s": { "type": "string", "enum": ["a".repeat(95)] } } });
    assert_eq!(input(&long), "{ s?: string }");
    let huge_const =
        json!({ "type": "object", "properties": { "s": { "const": "z".repeat(100_000) } } });
    assert_eq!(input(&huge_const), "{ s?: string }");

    let mixed =
        json!({ "type": "object", "properties": { "m": { "enum": ["a", 1, null, ["arr"]] } } });
    assert_eq!(
        input(&mixed),
        "{ m?: string | number | null | Array<unknown> }"
    );
}

#[test]
fn any_of_and_one_of_render_structural_unions() {
    let schema = json!({
        "type": "object",
        "properties": {
            "u": { "anyOf": [{ "type": "string" }, { "type": "object", "properties": { "k": { "type": "number" } } }] },
            "o": { "oneOf": [{ "type": "boolean" }, { "type": "null" }], "nullable": true }
        },
        "required": ["u", "o"]
    });
    assert_eq!(
        input(&schema),
        "{ o: boolean | null; u: string | { k?: number } }"
    );

    let six = json!({ "type": "object", "properties": { "s": { "anyOf": [
        { "const": 1 }, { "const": 2 }, { "const": 3 }, { "const": 4 }, { "const": 5 }, { "const": 6 }
    ] } } });
    let signature = input_signature(&six);
    assert_eq!(signature.text, "{ s?: unknown }");
    assert!(!signature.complete);
}

#[test]
fn arrays() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": { "type": "array", "items": { "type": "string" } },
            "b": { "type": "array" },
            "c": { "items": { "type": "boolean" } },
            "d": { "type": "array", "items": { "type": "array", "items": { "type": "integer" } } }
        },
        "required": ["a", "b", "c", "d"]
    });
    let signature = input_signature(&schema);
    assert_eq!(
        signature.text,
        "{ a: Array<string>; b: Array<unknown>; c: Array<boolean>; d: Array<Array<number /* integer */>> }"
    );
    assert!(signature.complete);

    let tuple = json!({ "type": "object", "properties": { "t": { "type": "array", "items": [{ "type": "string" }] } } });
    let signature = input_signature(&tuple);
    assert_eq!(signature.text, "{ t?: Array<unknown> }");
    assert!(!signature.complete);
}

#[test]
fn empty_and_boolean_schemas() {
    let schema = json!({
        "type": "object",
        "properties": { "any": {}, "yes": true, "no": false },
        "required": ["any", "yes", "no"]
    });
    let signature = input_signature(&schema);
    assert_eq!(signature.text, "{ any: unknown; no: never; yes: unknown }");
    assert!(signature.complete);
}

// ---- numbers -----------------------------------------------------------------------------------------

#[test]
fn number_bounds_are_input_comments_only() {
    let schema = json!({
        "type": "object",
        "properties": {
            "i": { "type": "integer", "minimum": 1, "maximum": 10 },
            "x": { "type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1.5 },
            "p": { "type": "number" },
            "q": { "type": "integer" },
            "bad": { "type": "number", "minimum": "3", "maximum": null }
        },
        "required": ["i", "x", "p", "q", "bad"],
        "additionalProperties": false
    });
    assert_eq!(
        input(&schema),
        "{ bad: number; i: number /* integer, >= 1, <= 10 */; p: number; q: number /* integer */; x: number /* > 0, < 1.5 */ }"
    );
    assert_eq!(
        output(&schema),
        Some("{ bad: number; i: number; p: number; q: number; x: number }".to_owned())
    );
}

#[test]
fn draft04_boolean_exclusive_minimum() {
    let schema = json!({
        "type": "object",
        "properties": {
            "n": { "type": "number", "minimum": 0, "exclusiveMinimum": true, "maximum": 1, "exclusiveMaximum": false },
            "m": { "type": "integer", "exclusiveMinimum": true },
            "k": { "type": "number", "maximum": 5, "exclusiveMaximum": true }
        },
        "required": ["n", "m", "k"],
        "additionalProperties": false
    });
    let signature = input_signature(&schema);
    assert_eq!(
        signature.text,
        "{ k: number /* < 5 */; m: number /* integer */; n: number /* > 0, <= 1 */ }"
    );
    assert!(signature.complete);
    assert_eq!(
        output(&schema),
        Some("{ k: number; m: number; n: number }".to_owned())
    );
}

// ---- bounds ------------------------------------------------------------------------------------------

#[test]
fn depth_limit_renders_unknown() {
    let schema = json!({ "type": "object", "properties": { "a": { "type": "object", "properties": {
        "b": { "type": "object", "properties": { "c": { "type": "object", "properties": {
            "d": { "type": "object", "properties": { "e": { "type": "string" } } }
        } } } }
    } } } });
    let signature = input_signature(&schema);
    assert_eq!(
        signature.text,
        "{ a?: { b?: { c?: { d?: { e?: unknown } } } } }"
    );
    assert!(!signature.complete);
    assert_eq!(INPUT_BOUNDS.max_depth, 4);
}

#[test]
fn input_of_non_object_schema_is_unknown() {
    for schema in [
        json!({ "type": "string" }),
        json!({ "type": "array", "items": { "type": "object" } }),
        json!({ "type": "string", "properties": { "a": {} } }),
        json!({ "anyOf": [{ "type": "object" }] }),
        json!({}),
        json!(true),
        json!(null),
        json!([1, 2]),
        json!("object"),
    ] {
        assert_eq!(
            input_signature(&schema),
            Signature {
                text: "unknown".to_owned(),
                complete: false,
                nodes_visited: 1
            },
            "{schema}"
        );
    }
    assert_eq!(
        input(&json!({ "properties": { "a": { "type": "string" } } })),
        "{ a?: string }"
    );
    assert_eq!(
        input(&json!({ "type": ["object", "null"], "properties": { "a": { "type": "string" } } })),
        "{ a?: string } | null"
    );
}

#[test]
fn input_over_300_chars_is_unknown() {
    let properties: serde_json::Map<String, Value> = (0..15)
        .map(|index| (format!("property_{index:02}"), json!({ "type": "string" })))
        .collect();
    let schema =
        json!({ "type": "object", "properties": properties, "additionalProperties": false });
    // 15 members of `property_NN?: string` (20 chars) plus separators: 2 + 15*20 + 14*2 + 2 = 332 chars.
    let signature = input_signature(&schema);
    assert_eq!(signature.text, "unknown");
    assert!(!signature.complete);
    // The same schema is well within the output bound.
    let output = output(&schema).unwrap();
    assert_eq!(chars(&output), 332);
    assert!(chars(&output) <= OUTPUT_BOUNDS.max_chars);
}

#[test]
fn input_of_exactly_300_chars_is_kept() {
    let mut properties = serde_json::Map::new();
    let mut text = String::from("{ ");
    for index in 0..14 {
        let key = format!("p{index:02}");
        properties.insert(key.clone(), json!({ "type": "boolean" }));
        text.push_str(&format!("{key}?: boolean; "));
    }
    // A last member `zz?: "…" }` whose literal (non-ASCII, so chars and bytes differ) lands on 300.
    let literal = "é".repeat(300 - chars(&text) - chars("zz?: \"\" }"));
    properties.insert("zz".to_owned(), json!({ "const": literal }));
    text.push_str(&format!("zz?: \"{literal}\" }}"));
    assert_eq!(chars(&text), 300);
    assert!(chars(&literal) + 2 <= 96, "stays under the literal cap");
    let schema = json!({ "type": "object", "properties": properties });
    assert_eq!(input(&schema), text);

    properties.insert("zz".to_owned(), json!({ "const": format!("{literal}é") }));
    assert_eq!(
        input(&json!({ "type": "object", "properties": properties })),
        "unknown"
    );
}

// ---- output hints ------------------------------------------------------------------------------------

#[test]
fn output_present_only_for_complete_closed_schema() {
    let closed = json!({
        "type": "object",
        "properties": {
            "ok": { "type": "boolean" },
            "items": { "type": "array", "items": {
                "type": "object",
                "properties": { "id": { "type": "string" }, "score": { "type": ["number", "null"] } },
                "required": ["id"],
                "additionalProperties": false
            } }
        },
        "required": ["ok", "items"],
        "additionalProperties": false
    });
    let signature = output_signature(&closed).unwrap();
    assert_eq!(
        signature,
        Signature {
            text: "{ items: Array<{ id: string; score?: number | null }>; ok: boolean }".to_owned(),
            complete: true,
            nodes_visited: 13,
        }
    );
    assert_eq!(
        output(&json!({ "type": "string" })),
        Some("string".to_owned())
    );
}

#[test]
fn output_absent_with_ref_all_of_or_open_object() {
    let wrap = |inner: Value| {
        json!({
            "type": "object",
            "properties": { "x": inner },
            "required": ["x"],
            "additionalProperties": false
        })
    };
    let cases = [
        ("$ref", wrap(json!({ "$ref": "#/$defs/x" }))),
        ("allOf", wrap(json!({ "allOf": [{ "type": "string" }] }))),
        (
            "open object",
            wrap(json!({ "type": "object", "properties": {}, "additionalProperties": true })),
        ),
        (
            "additionalProperties missing",
            wrap(json!({ "type": "object", "properties": { "a": { "type": "string" } } })),
        ),
        ("unknown leaf", wrap(json!({}))),
        ("array without items", wrap(json!({ "type": "array" }))),
        (
            "patternProperties",
            wrap(json!({ "type": "string", "patternProperties": {} })),
        ),
        ("if", wrap(json!({ "type": "string", "if": {} }))),
        ("not", wrap(json!({ "type": "string", "not": {} }))),
    ];
    for (name, schema) in cases {
        assert_eq!(output(&schema), None, "{name}");
    }
    assert_eq!(
        output(&wrap(json!({ "type": "string" }))),
        Some("{ x: string }".to_owned())
    );
}

#[test]
fn ref_and_all_of_mark_input_incomplete_but_render_what_they_can() {
    let schema = json!({
        "type": "object",
        "properties": {
            "r": { "$ref": "#/$defs/r" },
            "s": { "type": "string", "allOf": [{ "minLength": 1 }] }
        },
        "required": ["r", "s"]
    });
    let signature = input_signature(&schema);
    assert_eq!(signature.text, "{ r: unknown; s: string }");
    assert!(!signature.complete);
}

#[test]
fn malformed_schemas_do_not_panic() {
    let schema = json!({
        "type": "object",
        "properties": {
            "a": { "type": 7, "properties": [1, 2] },
            "b": { "type": [], "enum": "x" },
            "c": { "type": ["string", 4, "string", "bogus"] },
            "d": { "anyOf": {}, "oneOf": [] },
            "e": { "type": "object", "properties": null, "required": "a", "additionalProperties": 3 },
            "f": null,
            "g": [],
            "h": { "type": "number", "minimum": { "x": 1 }, "exclusiveMinimum": "y" }
        },
        "required": [null, {}, ["a"]]
    });
    let signature = input_signature(&schema);
    assert_eq!(
        signature.text,
        "{ a?: {}; b?: unknown; c?: string | unknown; d?: unknown; e?: {}; f?: unknown; g?: unknown; h?: number }"
    );
    assert!(!signature.complete);
    assert_eq!(output_signature(&schema), None);
}

// ---- huge schemas (R-4.5) ----------------------------------------------------------------------------

fn assert_within_bounds(schema: &Value) -> Signature {
    let input = input_signature(schema);
    assert!(
        chars(&input.text) <= INPUT_BOUNDS.max_chars,
        "{}",
        input.text
    );
    assert!(
        input.nodes_visited <= NODE_BUDGET,
        "{}",
        input.nodes_visited
    );
    if let Some(output) = output_signature(schema) {
        assert!(chars(&output.text) <= OUTPUT_BOUNDS.max_chars);
        assert!(output.nodes_visited <= NODE_BUDGET);
        assert!(output.complete);
    }
    assert_eq!(input_signature(schema), input, "deterministic");
    input
}

#[test]
fn hundred_thousand_properties_wide() {
    let mut text = String::from(
        r#"{"type":"object","additionalProperties":false,"required":["k99999"],"properties":{"#,
    );
    for index in 0..100_000 {
        if index > 0 {
            text.push(',');
        }
        text.push_str(&format!(r#""k{index}":{{"type":"string"}}"#));
    }
    text.push_str("}}");
    let schema: Value = serde_json::from_str(&text).unwrap();

    let signature = assert_within_bounds(&schema);
    // Required first; the 15 optional keys are the smallest in byte order among the scanned ones.
    assert_eq!(
        signature.text,
        "{ k99999: string; k0?: string; k1?: string; k10?: string; k100?: string; k1000?: string; k10000?: string; k10001?: string; k10002?: string; k10003?: string; k10004?: string; k10005?: string; k10006?: string; k10007?: string; k10008?: string; k10009?: string; ... }"
    );
    assert!(!signature.complete);
    assert!(signature.nodes_visited < 300, "{}", signature.nodes_visited);
    assert_eq!(output_signature(&schema), None);
}

/// serde_json's default recursion limit rejects the 128th nested container, so the deepest document it
/// accepts from text has 127 nested objects, 128 levels counting the scalar leaves. This schema sits
/// exactly at that limit: 63 nested object schemas (each is two containers: the schema and its
/// `properties`) ending in a 64th leaf schema at container depth 127, with 1,588 leaf properties per level,
/// 100,108 schema nodes in all.
#[test]
fn hundred_thousand_nodes_128_deep() {
    const LEVELS: usize = 63;
    const LEAVES: usize = 1_588;
    let mut text = String::new();
    for _ in 0..LEVELS {
        text.push_str(
            r#"{"type":"object","additionalProperties":false,"required":["a"],"properties":{"#,
        );
        for leaf in 0..LEAVES {
            text.push_str(&format!(
                r#""f{leaf:04}":{{"type":"integer","minimum":0}},"#
            ));
        }
        text.push_str(r#""a":"#);
    }
    text.push_str(r#"{"type":"string"}"#);
    for _ in 0..LEVELS {
        text.push_str("}}");
    }
    assert_eq!(LEVELS * (LEAVES + 1) + 1, 100_108);
    let schema: Value = serde_json::from_str(&text).unwrap();

    // Pin that this is the deepest serde_json accepts: one more nested object is rejected.
    let deeper = format!(r#"{{"x":{text}}}"#);
    assert!(serde_json::from_str::<Value>(&deeper).is_err());

    let signature = assert_within_bounds(&schema);
    // Every level shows `a` plus 15 leaves (~500 chars), so the input hint is over its bound.
    assert_eq!(signature.text, "unknown");
    assert!(!signature.complete);
    assert_eq!(output_signature(&schema), None);

    // The same depth with nothing else: a chain of array schemas, one container each.
    let mut chain = String::from(r#"{"type":"object","properties":{"a":"#);
    for _ in 0..124 {
        chain.push_str(r#"{"type":"array","items":"#);
    }
    chain.push_str(r#"{"type":"string"}"#);
    chain.push_str(&"}".repeat(124 + 2));
    let schema: Value = serde_json::from_str(&chain).unwrap();
    let signature = assert_within_bounds(&schema);
    assert_eq!(
        signature.text,
        "{ a?: Array<Array<Array<Array<unknown>>>> }"
    );
    assert!(!signature.complete);
}

#[test]
fn node_budget_caps_key_scans_and_renders_unknown_after() {
    // Property names over 128 chars are scanned (and counted) but never shown, so the budget runs out
    // long before the char bound does.
    let hidden: serde_json::Map<String, Value> = (0..300)
        .map(|index| {
            (
                format!("{index:03}{}", "x".repeat(130)),
                json!({ "type": "string" }),
            )
        })
        .collect();
    let children: serde_json::Map<String, Value> = (0..9)
        .map(|index| {
            (
                format!("c{index}"),
                json!({ "type": "object", "properties": hidden }),
            )
        })
        .collect();
    let schema = json!({ "type": "object", "properties": children });
    let signature = assert_within_bounds(&schema);
    // Root: 1 + 9 scanned keys; each child: 1 + 256 scanned keys (KEY_SCAN_LIMIT). c7 spends the last
    // of the budget mid-scan, and c8 is never looked at.
    assert_eq!(signature.nodes_visited, NODE_BUDGET);
    let shown: Vec<String> = (0..8)
        .map(|index| format!("c{index}?: {{ ... }}"))
        .collect();
    assert_eq!(
        signature.text,
        format!("{{ {}; c8?: unknown }}", shown.join("; "))
    );
    assert!(!signature.complete);
}

// ---- property oracles --------------------------------------------------------------------------------

/// Keys a schema object is likely to have, plus a few awkward ones.
fn schema_key() -> impl Strategy<Value = String> {
    prop_oneof![
        6 => prop::sample::select(vec![
            "type", "properties", "items", "enum", "const", "anyOf", "oneOf", "allOf", "required",
            "additionalProperties", "nullable", "minimum", "maximum", "exclusiveMinimum",
            "exclusiveMaximum", "$ref", "not", "if", "prefixItems", "patternProperties",
        ])
        .prop_map(str::to_owned),
        2 => "[a-z]{1,6}",
        1 => any::<String>(),
        1 => "x{120,140}",
    ]
}

fn type_name() -> impl Strategy<Value = Value> {
    prop::sample::select(vec![
        "object", "string", "number", "integer", "boolean", "null", "array", "bogus",
    ])
    .prop_map(|name| Value::String(name.to_owned()))
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(Value::from),
        "[a-z ]{0,12}".prop_map(Value::String),
        any::<String>().prop_map(Value::String),
        type_name(),
        Just(json!({})),
        Just(json!({ "type": "string" })),
        Just(json!({ "type": "integer", "minimum": 1, "exclusiveMinimum": true })),
    ]
}

/// Arbitrary JSON biased toward schema-shaped objects, up to roughly 2,000 nodes.
fn schema_like() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 2_000, 4, |inner| {
        prop_oneof![
            // Arbitrary arrays and objects, to reach every odd corner.
            prop::collection::vec(inner.clone(), 0..12).prop_map(Value::Array),
            prop::collection::btree_map(schema_key(), inner.clone(), 0..8)
                .prop_map(|map| Value::Object(map.into_iter().collect())),
            // Object schemas.
            (
                prop::option::of(prop_oneof![
                    type_name(),
                    prop::collection::vec(type_name(), 0..4).prop_map(Value::Array)
                ]),
                prop::collection::btree_map(schema_key(), inner.clone(), 0..24),
                prop::collection::vec(
                    prop_oneof![4 => schema_key().prop_map(Value::String), 1 => leaf()],
                    0..6
                ),
                prop_oneof![
                    Just(None),
                    Just(Some(json!(false))),
                    Just(Some(json!(true))),
                    inner.clone().prop_map(Some)
                ],
            )
                .prop_map(|(kind, properties, required, additional)| {
                    let mut schema = serde_json::Map::new();
                    if let Some(kind) = kind {
                        schema.insert("type".to_owned(), kind);
                    }
                    schema.insert(
                        "properties".to_owned(),
                        Value::Object(properties.into_iter().collect()),
                    );
                    schema.insert("required".to_owned(), Value::Array(required));
                    if let Some(additional) = additional {
                        schema.insert("additionalProperties".to_owned(), additional);
                    }
                    Value::Object(schema)
                }),
            // Arrays, unions, literals.
            inner
                .clone()
                .prop_map(|items| json!({ "type": "array", "items": items })),
            prop::collection::vec(inner.clone(), 0..8)
                .prop_map(|variants| json!({ "anyOf": variants })),
            prop::collection::vec(inner.clone(), 0..8)
                .prop_map(|variants| json!({ "oneOf": variants, "nullable": true })),
            prop::collection::vec(leaf(), 0..12).prop_map(|values| json!({ "enum": values })),
            inner.prop_map(|value| json!({ "const": value, "type": "string" })),
        ]
    })
}

fn object_root() -> impl Strategy<Value = Value> {
    prop::collection::btree_map(schema_key(), schema_like(), 0..6).prop_map(|properties| {
        json!({ "type": "object", "properties": Value::Object(properties.into_iter().collect()) })
    })
}

fn check_oracles(schema: &Value) {
    let input = input_signature(schema);
    assert!(chars(&input.text) <= INPUT_BOUNDS.max_chars);
    assert!(input.nodes_visited <= NODE_BUDGET);
    assert_eq!(input_signature(schema), input);
    let output = output_signature(schema);
    if let Some(output) = &output {
        assert!(chars(&output.text) <= OUTPUT_BOUNDS.max_chars);
        assert!(output.nodes_visited <= NODE_BUDGET);
        assert!(output.complete);
    }
    assert_eq!(output_signature(schema), output);
}

// Case counts keep the debug-build run near ten seconds: generating ~2,000-node values dominates.
proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_json_never_panics_and_stays_bounded(schema in schema_like()) {
        check_oracles(&schema);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn arbitrary_object_schemas_never_panic_and_stay_bounded(schema in object_root()) {
        check_oracles(&schema);
    }
}

proptest! {
    /// Literals and quoted keys use exactly serde_json's string escapes.
    #[test]
    fn string_literals_and_keys_match_serde_json(
        text in prop_oneof![
            any::<String>(),
            "[\\x00-\\x7f]{0,60}",
            "[a-zA-Z_$0-9]{0,5}",
            "[a-zé\"\\\\]{90,140}",
        ]
    ) {
        let quoted = serde_json::to_string(&text).unwrap();
        let literal = json!({ "type": "object", "properties": { "k": { "const": text } } });
        let expected = if chars(&quoted) <= 96 {
            format!("{{ k?: {quoted} }}")
        } else {
            "{ k?: string }".to_owned()
        };
        prop_assert_eq!(input(&literal), expected);

        let key = json!({ "type": "object", "properties": { text.clone(): { "type": "null" } } });
        let shown = if chars(&text) > 128 {
            "{ ... }".to_owned()
        } else if text.chars().next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
            && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
        {
            format!("{{ {text}?: null }}")
        } else {
            format!("{{ {quoted}?: null }}")
        };
        prop_assert_eq!(input(&key), shown);
    }
}
