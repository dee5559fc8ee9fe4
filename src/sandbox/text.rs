//! Untrusted text from the isolate or a worker, bounded and repaired before it crosses a
//! boundary.
//!
//! Owns: [`truncate_to`] (a byte bound on a char boundary) and [`repair_lone_surrogates`].
//! Never does: make text terminal-safe — that is [`crate::telemetry::terminal_safe`], the one
//! filter, which every console line and error message goes through on its way out.

/// Cuts `s` to at most `max` bytes on a char boundary.
pub(crate) fn truncate_to(s: &mut String, max: usize) {
    if s.len() <= max {
        return;
    }
    let mut end = max;
    while end > 0 && !s.is_char_boundary(end) {
        end -= 1;
    }
    s.truncate(end);
}

/// Replaces `\u` escapes (four hex digits) of unpaired UTF-16 surrogates in JSON text with `\ufffd`.
///
/// `JSON.stringify` escapes a lone surrogate (ES2019) and the result is valid JSON for JavaScript,
/// but not for serde (Rust strings are UTF-8), so the worker repairs it before the text crosses.
pub(crate) fn repair_lone_surrogates(json: String) -> String {
    let bytes = json.as_bytes();
    if !bytes
        .windows(3)
        .any(|w| w[0] == b'\\' && (w[1] == b'u' || w[1] == b'U') && (w[2] | 0x20) == b'd')
    {
        return json;
    }
    let hex = |at: usize| -> Option<u16> {
        let digits = bytes.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let escape_at = |at: usize| -> Option<u16> {
        (bytes.get(at) == Some(&b'\\') && bytes.get(at + 1) == Some(&b'u'))
            .then(|| hex(at + 2))
            .flatten()
    };
    let mut out = String::with_capacity(json.len());
    let mut i = 0;
    let mut copied = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match escape_at(i) {
            Some(0xd800..=0xdbff) if matches!(escape_at(i + 6), Some(0xdc00..=0xdfff)) => i += 12,
            Some(0xd800..=0xdfff) => {
                out.push_str(&json[copied..i]);
                out.push_str("\\ufffd");
                i += 6;
                copied = i;
            }
            Some(_) => i += 6,
            // Any other escape (including `\\`): skip both characters.
            None => i += 2,
        }
    }
    out.push_str(&json[copied..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repairs_only_unpaired_surrogates() {
        let r = |s: &str| repair_lone_surrogates(s.to_owned());
        assert_eq!(r(r#"["\ud800"]"#), r#"["\ufffd"]"#);
        assert_eq!(r(r#"{"\udc00x":1}"#), r#"{"\ufffdx":1}"#);
        assert_eq!(r(r#"["\ud83c\udf0d"]"#), r#"["\ud83c\udf0d"]"#);
        assert_eq!(r(r#"["\\ud800"]"#), r#"["\\ud800"]"#);
        assert_eq!(r(r#"["\ud800\u0041"]"#), r#"["\ufffd\u0041"]"#);
        assert_eq!(r("[1]"), "[1]");
        assert!(serde_json::from_str::<serde_json::Value>(&r(r#"["a\udbff"]"#)).is_ok());
    }

    #[test]
    fn truncates_on_char_boundary() {
        let mut s = "aé".to_owned();
        truncate_to(&mut s, 2);
        assert_eq!(s, "a");
    }
}
