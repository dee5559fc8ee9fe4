//! The light English stemmer of: at most three passes of a suffix stripper, with the
//! few `-s` words that are not plurals kept whole.
//!
//! Owns: [`stem`] and its in-place forms, and the character count the analyzer's length rules
//! use. Never does: tokenizing, lowercasing or any other language (the lexicon maps those).

/// Words ending in `s` that are not plurals: kept whole by the stemmer.
const KEPT_WHOLE: [&str; 15] = [
    "alias", "analysis", "atlas", "axis", "basis", "bonus", "bus", "canvas", "focus", "gas",
    "lens", "news", "plus", "status", "virus",
];

/// Suffixes tried in order by one stemming pass.
const SUFFIXES: [&str; 8] = ["ies", "ing", "ed", "ly", "es", "er", "s", "e"];

pub(super) fn char_len(word: &str) -> usize {
    if word.is_ascii() {
        word.len()
    } else {
        word.chars().count()
    }
}

/// One pass of the suffix stripper, in place; returns whether anything changed.
fn strip_one_suffix(token: &mut String) -> bool {
    // Every suffix ends in one of these letters: most words are done after one byte compare.
    if !matches!(
        token.as_bytes().last(),
        Some(b's' | b'g' | b'd' | b'y' | b'r' | b'e')
    ) {
        return false;
    }
    let length = char_len(token);
    if length <= 3 || KEPT_WHOLE.contains(&token.as_str()) {
        return false;
    }
    for suffix in SUFFIXES {
        if !token.ends_with(suffix) || length - suffix.len() < 3 {
            continue;
        }
        // "ss" is part of the root ("process"), not a plural marker.
        if suffix == "s" && token.ends_with("ss") {
            continue;
        }
        token.truncate(token.len() - suffix.len());
        if suffix == "ies" {
            token.push('y');
        } else if matches!(suffix, "ing" | "ed" | "er") {
            undouble(token);
        }
        return true;
    }
    false
}

/// "running" strips to "runn": undo a final consonant doubled by inflection, except the
/// doubles that belong to roots (l, s, f, z).
fn undouble(token: &mut String) {
    let bytes = token.as_bytes();
    let n = bytes.len();
    if n <= 3 || !token.is_ascii() {
        return;
    }
    let last = bytes[n - 1];
    if last != bytes[n - 2] || b"lsfzaeiou".contains(&last) || !last.is_ascii_alphabetic() {
        return;
    }
    token.truncate(n - 1);
}

/// Stems `word` into `out` (R-3.4: at most three passes).
pub(super) fn stem_into(word: &str, out: &mut String) {
    out.clear();
    out.push_str(word);
    for _ in 0..3 {
        if !strip_one_suffix(out) {
            break;
        }
    }
}

/// The light English stemmer of R-3.4 (at most three passes).
pub fn stem(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    stem_into(word, &mut out);
    out
}

/// Calls `emit` with the stem(s) of one word: two for `-ies` words (both readings), one
/// otherwise. `buffer` is scratch space.
pub(super) fn for_each_stem_in(word: &str, buffer: &mut String, mut emit: impl FnMut(&str)) {
    if char_len(word) > 4 && word.ends_with("ies") {
        let base = &word[..word.len() - 3];
        buffer.clear();
        buffer.push_str(base);
        buffer.push('y');
        emit(buffer);
        let mut ie = String::with_capacity(base.len() + 2);
        ie.push_str(base);
        ie.push_str("ie");
        stem_into(&ie, buffer);
        emit(buffer);
        return;
    }
    stem_into(word, buffer);
    if !buffer.is_empty() {
        emit(buffer);
    }
}

/// Calls `emit` with the stem(s) of one word: two for `-ies` words (both readings), one
/// otherwise.
#[cfg(test)]
pub fn for_each_stem(word: &str, mut emit: impl FnMut(String)) {
    let mut buffer = String::new();
    for_each_stem_in(word, &mut buffer, |s| emit(s.to_string()));
}
