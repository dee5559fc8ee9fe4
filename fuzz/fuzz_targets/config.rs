//! The JSON5 config loader on arbitrary text. Invariants: it accepts only what JSON5 accepts,
//! never a document with a repeated key or nested deeper than its bound; what it accepts is
//! within every documented range; parsing is deterministic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolsearch::fuzzing::{
    AUTO_MAX_SCHEMA_TOKENS, AUTO_MAX_TOOLS, CODE_TIMEOUT_MS, MAX_DOCUMENT_DEPTH, MAX_SEARCH_LIMIT,
    MCP_CALL_TIMEOUT_MS, MCP_STARTUP_TIMEOUT_MS, MEMORY_LIMIT_BYTES, parse_config,
};
use toolsearch_fuzz::{DuplicateKeys, depth};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let result = parse_config(text);
    assert_eq!(result, parse_config(text), "not deterministic");
    let config = match result {
        Ok(config) => config,
        Err(error) => {
            assert!(!error.to_string().is_empty());
            return;
        }
    };
    // Accepted: valid JSON5, no repeated key, within the depth bound.
    let value: Value = json5::from_str(text).expect("accepted a config that is not JSON5");
    assert!(
        depth(&value) <= MAX_DOCUMENT_DEPTH,
        "accepted a config nested too deep"
    );
    let DuplicateKeys(dup) = json5::from_str(text).expect("JSON5 twice");
    assert!(!dup, "accepted a config with a repeated key");
    let ms = config.code_timeout.as_millis() as u64;
    assert!(
        (CODE_TIMEOUT_MS.min..=CODE_TIMEOUT_MS.max).contains(&ms),
        "codeTimeoutMs {ms}"
    );
    assert!((MEMORY_LIMIT_BYTES.min..=MEMORY_LIMIT_BYTES.max).contains(&config.memory_limit_bytes));
    assert!(config.auto_max_tools as u64 <= AUTO_MAX_TOOLS.max);
    assert!(config.auto_max_schema_tokens as u64 <= AUTO_MAX_SCHEMA_TOKENS.max);
    let limits = config.search_limits;
    assert!(limits.default_limit() >= 1);
    assert!(limits.default_limit() <= limits.max_limit());
    assert!(limits.max_limit() as u64 <= MAX_SEARCH_LIMIT.max);
    let mut previous: Option<&str> = None;
    for server in &config.mcp {
        let name = server.name.as_str();
        assert!(
            (1..=64).contains(&name.len())
                && name
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-'),
            "bad server name {name:?}"
        );
        assert!(
            previous.is_none_or(|p| p < name),
            "servers not sorted by name"
        );
        previous = Some(name);
        let startup = server.startup_timeout.as_millis() as u64;
        let call = server.call_timeout.as_millis() as u64;
        assert!((MCP_STARTUP_TIMEOUT_MS.min..=MCP_STARTUP_TIMEOUT_MS.max).contains(&startup));
        assert!((MCP_CALL_TIMEOUT_MS.min..=MCP_CALL_TIMEOUT_MS.max).contains(&call));
    }
});
