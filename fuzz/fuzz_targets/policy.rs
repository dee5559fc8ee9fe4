//! The policy loader on arbitrary text. Invariants: it accepts only JSON without repeated keys
//! (a repeated key could drop a `deny`); an accepted policy's canonical form loads back to the
//! same policy (same canonical text, fingerprint and decisions); parsing is deterministic.
#![no_main]

use libfuzzer_sys::fuzz_target;
use serde_json::Value;
use toolsearch::fuzzing::{
    Descriptor, MAX_DOCUMENT_DEPTH, Source, parse_policy, policy_canonical, policy_fingerprint,
};
use toolsearch_fuzz::{DuplicateKeys, depth};

fn probes() -> Vec<Descriptor> {
    vec![
        Descriptor::new(Source::Plugin, "files", "read_file"),
        Descriptor::new(Source::Plugin, "mail", "send_email"),
        Descriptor::new(Source::Mcp, "github", "create_issue"),
        Descriptor::new(Source::Client, "app", "show_map"),
        Descriptor::new(Source::Core, "core", "run"),
    ]
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let policy = match parse_policy(text) {
        Ok(policy) => policy,
        Err(error) => {
            assert!(!error.to_string().is_empty());
            assert!(parse_policy(text).is_err(), "not deterministic");
            return;
        }
    };
    let value: Value = serde_json::from_str(text).expect("accepted a policy that is not JSON");
    assert!(depth(&value) <= MAX_DOCUMENT_DEPTH);
    let DuplicateKeys(dup) = serde_json::from_str(text).expect("JSON twice");
    assert!(!dup, "accepted a policy with a repeated key");
    let canonical = policy_canonical(&policy);
    let again = parse_policy(&canonical).expect("the canonical form does not load");
    assert_eq!(
        policy_canonical(&again),
        canonical,
        "canonical form is not a fixed point"
    );
    assert_eq!(policy_fingerprint(&again), policy_fingerprint(&policy));
    assert_eq!(policy.is_allow_all(), again.is_allow_all());
    for probe in probes() {
        assert_eq!(policy.allows(&probe), again.allows(&probe), "{}", probe.id);
    }
});
