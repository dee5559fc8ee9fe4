//! The provider-name sanitizer (surface) and MCP name escaping, on a list of arbitrary strings
//! (NUL-separated; pairs are owner and name). Invariants: MCP escaping gives names that satisfy
//! MCP's rule, is injective over the inputs and, uncut, inverted by `unescape`; every tool gets
//! a provider name matching `^[a-zA-Z0-9_-]{1,64}$`, distinct tools get distinct names, no
//! control name is taken, and the reverse map inverts the forward one.
#![no_main]

use std::collections::{HashMap, HashSet};

use libfuzzer_sys::fuzz_target;
use toolsearch::fuzzing::{
    Descriptor, MAX_TOOL_NAME, ProviderNames, Source, escape, is_valid_provider_name,
    is_valid_tool_name, unescape,
};

const CONTROLS: [&str; 4] = [
    "tool_search",
    "tool_describe",
    "tool_call",
    "tool_search_code",
];

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let parts: Vec<&str> = text.split('\0').collect();

    let mut escaped: HashMap<String, &str> = HashMap::new();
    for raw in parts.iter().copied() {
        let name = escape(raw);
        assert!(
            is_valid_tool_name(&name),
            "escape({raw:?}) = {name:?} breaks the MCP rule"
        );
        if is_valid_tool_name(raw) && !raw.starts_with("_x_") {
            assert_eq!(name, raw, "a valid name was escaped");
        }
        if name.len() < MAX_TOOL_NAME {
            assert_eq!(
                unescape(&name).as_deref(),
                Some(raw),
                "unescape does not invert"
            );
        }
        if let Some(other) = escaped.insert(name.clone(), raw) {
            assert_eq!(
                other, raw,
                "escape is not injective: {other:?} and {raw:?} give {name:?}"
            );
        }
    }

    let mut tools: Vec<Descriptor> = Vec::new();
    let mut ids = HashSet::new();
    for pair in parts.chunks(2) {
        let (owner, name) = match pair {
            [owner, name] => (*owner, *name),
            [name] => ("fuzz", *name),
            _ => continue,
        };
        let source = if owner.len() % 2 == 0 {
            Source::Plugin
        } else {
            Source::Mcp
        };
        let tool = Descriptor::new(source, owner, name);
        if ids.insert(tool.id.clone()) {
            tools.push(tool);
        }
    }
    let names = ProviderNames::assign(&tools);
    assert_eq!(names.len(), tools.len(), "not every tool was named");
    let mut seen = HashSet::new();
    for tool in &tools {
        let name = names.name_of(&tool.id).expect("every tool has a name");
        assert!(
            is_valid_provider_name(name),
            "provider name {name:?} is invalid"
        );
        assert!(
            !CONTROLS.contains(&name),
            "a tool took the control name {name}"
        );
        assert!(
            seen.insert(name),
            "two tools share the provider name {name}"
        );
        assert_eq!(
            names.id_of(name),
            Some(tool.id.as_str()),
            "reverse map broken"
        );
    }
    assert_eq!(
        ProviderNames::assign(tools.iter().rev()),
        names,
        "depends on order"
    );
});
