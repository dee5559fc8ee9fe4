//! The supervisor's frame decoder (host side) on arbitrary bytes from a worker. The first byte
//! picks the read size and whether the rest is taken raw or as newline-separated frame bodies
//! that get correct length prefixes (so that the fuzzer reaches the JSON decoding easily).
//! Invariants: the outcome does not depend on how the bytes were split into reads; at most
//! `bridge_calls` calls start; kept logs are within `log_bytes`, counted right and free of
//! control characters; a value comes only with `Ok`, within `result_bytes`; an error message is
//! bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use toolsearch::fuzzing::{Limits, Outcome, decode_worker_bytes};

fn stripped(c: char) -> bool {
    match c {
        '\n' | '\t' => false,
        '\u{0}'..='\u{1f}' | '\u{7f}'..='\u{9f}' => true,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => true,
        _ => false,
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let bytes = if selector & 0x80 != 0 {
        let mut framed = Vec::with_capacity(rest.len() + 64);
        for body in rest.split(|b| *b == b'\n') {
            framed.extend_from_slice(&(body.len() as u32).to_le_bytes());
            framed.extend_from_slice(body);
        }
        framed
    } else {
        rest.to_vec()
    };
    let limits = Limits {
        log_bytes: 256,
        result_bytes: 512,
        frame_bytes: 64 * 1024,
        bridge_calls: 4,
        ..Limits::default()
    };
    let chunk = usize::from(selector & 0x3f) + 1;
    let whole = decode_worker_bytes(&bytes, usize::MAX, &limits);
    let split = decode_worker_bytes(&bytes, chunk, &limits);
    assert_eq!(
        whole.outcome, split.outcome,
        "the outcome depends on the read size"
    );
    assert_eq!(whole.value, split.value);
    assert_eq!(whole.logs, split.logs);
    assert_eq!(whole.calls_started, split.calls_started);
    assert!(
        whole.calls_started <= limits.bridge_calls as usize,
        "{} calls",
        whole.calls_started
    );
    if whole.outcome.is_none() {
        assert!(whole.left <= bytes.len());
        assert!(whole.logs.is_empty() && whole.value.is_none());
        return;
    }
    let mut cost = 0;
    for line in &whole.logs {
        assert!(
            !line.text.chars().any(stripped),
            "control character in a log line"
        );
        cost += line.text.len() + 1;
    }
    assert!(cost <= limits.log_bytes, "logs cost {cost} bytes");
    assert_eq!(
        whole.log_bytes,
        whole.logs.iter().map(|l| l.text.len()).sum::<usize>()
    );
    match &whole.outcome {
        Some(Outcome::Ok) => {
            assert!(whole.value.is_some(), "Ok without a value");
        }
        Some(Outcome::JsError { message }) => {
            assert!(
                message.len() <= 8 * 1024,
                "error of {} bytes",
                message.len()
            );
            assert!(
                !message.chars().any(stripped),
                "control character in an error"
            );
            assert!(whole.value.is_none());
        }
        Some(Outcome::ProtocolError { detail }) => {
            assert!(
                detail.chars().count() <= 1024,
                "protocol error of {} chars",
                detail.len()
            );
            assert!(whole.value.is_none());
        }
        _ => assert!(whole.value.is_none()),
    }
});
