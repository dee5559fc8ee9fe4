//! The signature renderer on an arbitrary JSON value taken as a schema. Invariants: input hints
//! are at most 300 chars, exactly `unknown` (and incomplete) when they fall back; output hints
//! exist only when complete and are at most 800 chars; a render never visits more than the node
//! budget; rendering is deterministic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolsearch::fuzzing::{
    INPUT_BOUNDS, NODE_BUDGET, OUTPUT_BOUNDS, input_signature, output_signature,
};

fuzz_target!(|data: &[u8]| {
    let Some(schema) = toolsearch_fuzz::json(data) else {
        return;
    };
    let input = input_signature(&schema);
    assert_eq!(
        input,
        input_signature(&schema),
        "input hint not deterministic"
    );
    assert!(
        input.text.chars().count() <= INPUT_BOUNDS.max_chars,
        "input hint of {} chars",
        input.text.chars().count()
    );
    assert!(
        input.nodes_visited <= NODE_BUDGET,
        "{} nodes visited",
        input.nodes_visited
    );
    assert!(!input.text.is_empty());
    if input.text == "unknown" {
        assert!(!input.complete, "an `unknown` input hint marked complete");
    }
    if !schema.is_object() && schema != serde_json::Value::Bool(true) {
        assert_eq!(
            input.text, "unknown",
            "a non-object schema rendered as {:?}",
            input.text
        );
    }
    let output = output_signature(&schema);
    assert_eq!(
        output,
        output_signature(&schema),
        "output hint not deterministic"
    );
    if let Some(output) = output {
        assert!(output.complete, "an incomplete output hint was returned");
        assert!(output.text.chars().count() <= OUTPUT_BOUNDS.max_chars);
        assert!(output.nodes_visited <= NODE_BUDGET);
        assert_ne!(output.text, "unknown");
        // Output hints carry no number comments.
        assert!(
            !output.text.contains("/*"),
            "number comment in an output hint"
        );
    }
});
