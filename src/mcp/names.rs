//! MCP tool names: the protocol's name rule and the reversible escaping of odd names.
//!
//! Owns: [`is_valid_tool_name`] (MCP 2025-11: 1–128 characters of `[A-Za-z0-9_.-]`) and
//! [`escape`] / [`unescape`], which give every upstream name a catalog name that satisfies the
//! rule. Never does: decide provider names (the surface does, from the catalog name) or send a
//! name upstream — the executor always sends the raw name it was listed with.
//!
//! Escaping: a valid name is its own catalog name, unless it starts with the marker `_x_`. Any
//! other name becomes `_x_` followed by the name with each byte outside `[A-Za-z0-9.-]` (the
//! underscore included) written as `_` plus two lowercase hex digits. The mapping is injective
//! (escaped names start with the marker, unescaped ones never do) and [`unescape`] inverts it.
//! A result longer than 128 characters is cut and ends with `_` plus 16 hex digits of a stable
//! hash of the raw name; such names are not invertible by [`unescape`] (the executor still
//! holds the raw name), and a clash is disambiguated by the catalog (`~2`).

/// Longest tool name MCP allows.
pub const MAX_TOOL_NAME: usize = 128;

const MARKER: &str = "_x_";

/// Whether `name` satisfies MCP's tool-name rule: 1–128 of `[A-Za-z0-9_.-]`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_TOOL_NAME
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

fn passes(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-')
}

/// The catalog name of an upstream tool called `raw` (see the module doc).
pub fn escape(raw: &str) -> String {
    if is_valid_tool_name(raw) && !raw.starts_with(MARKER) {
        return raw.to_string();
    }
    let mut out = String::with_capacity(MARKER.len() + raw.len() * 2);
    out.push_str(MARKER);
    for b in raw.bytes() {
        if passes(b) {
            out.push(char::from(b));
        } else {
            out.push('_');
            out.push_str(&format!("{b:02x}"));
        }
    }
    if out.len() > MAX_TOOL_NAME {
        let hash = xxhash_rust::xxh3::xxh3_64(raw.as_bytes());
        out.truncate(MAX_TOOL_NAME - 17);
        out.push_str(&format!("_{hash:016x}"));
    }
    out
}

/// The raw name an escaped catalog name stands for (`None` for a name [`escape`] cannot
/// have produced, or a cut one). The executor keeps the raw name, so only tests (and the fuzz
/// target) need this.
#[cfg(any(test, feature = "fuzzing"))]
pub fn unescape(name: &str) -> Option<String> {
    let Some(body) = name.strip_prefix(MARKER) else {
        return is_valid_tool_name(name).then(|| name.to_string());
    };
    let bytes = body.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'_' => {
                let hex = body.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b if passes(b) => {
                out.push(b);
                i += 1;
            }
            _ => return None,
        }
    }
    String::from_utf8(out).ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn valid_names_stay_and_odd_names_round_trip() {
        for raw in ["get-sum", "read_file", "API-post-search", "a.b"] {
            assert_eq!(escape(raw), raw);
            assert_eq!(unescape(raw).as_deref(), Some(raw));
        }
        for raw in [
            "two words",
            "ümlaut/tool",
            "_x_looks_escaped",
            "",
            "tab\there",
            "😀",
        ] {
            let escaped = escape(raw);
            assert!(is_valid_tool_name(&escaped), "{raw:?} → {escaped:?}");
            assert_eq!(unescape(&escaped).as_deref(), Some(raw), "{escaped}");
        }
        assert_eq!(escape("two words"), "_x_two_20words");
    }

    #[test]
    fn long_names_are_cut_with_a_stable_hash() {
        let raw = "x ".repeat(200);
        let escaped = escape(&raw);
        assert!(is_valid_tool_name(&escaped));
        assert_eq!(escaped.len(), MAX_TOOL_NAME);
        assert_eq!(escape(&raw), escaped, "stable");
        assert_ne!(escape(&"y ".repeat(200)), escaped);
    }

    proptest::proptest! {
        #[test]
        fn escaping_is_injective_and_always_valid(raw in "\\PC{0,10}") {
            let escaped = escape(&raw);
            proptest::prop_assert!(is_valid_tool_name(&escaped));
            proptest::prop_assert_eq!(unescape(&escaped), Some(raw));
        }
    }
}
