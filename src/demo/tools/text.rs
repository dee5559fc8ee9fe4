//! `text`: text utilities — counts, slugs, case changes, Base64, checksums, line diffs, JSON
//! formatting, CSV parsing, extraction and replacement. Stateless. Inputs are capped at
//! 1 MiB so a single call stays cheap; `diff_text` compares at most 2,000 lines per side.

use serde_json::{Map, Value, json};

use super::super::kit::{Args, Reply, fail, ok, ok_text};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "word_count" => word_count,
        "slugify" => slugify,
        "change_case" => change_case,
        "base64_encode" => base64_encode,
        "base64_decode" => base64_decode,
        "hash_text" => hash_text,
        "diff_text" => diff_text,
        "format_json" => format_json,
        "csv_to_json" => csv_to_json,
        "extract_emails" => extract_emails,
        "find_and_replace" => find_and_replace,
        _ => return None,
    })
}

const MAX_INPUT: usize = 1 << 20;
const MAX_DIFF_LINES: usize = 2000;

fn text_arg<'a>(args: &Args<'a>, key: &str) -> Result<&'a str, ToolError> {
    let text = args.str(key)?;
    if text.len() > MAX_INPUT {
        return Err(fail(format!("{key} is larger than 1 MiB")));
    }
    Ok(text)
}

fn word_count(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = text_arg(args, "text")?;
    let words = text.split_whitespace().count();
    let sentences = text
        .split(['.', '!', '?'])
        .filter(|s| s.chars().any(char::is_alphanumeric))
        .count();
    let paragraphs = text.split("\n\n").filter(|p| !p.trim().is_empty()).count();
    // 230 words per minute, rounded up to whole seconds.
    let reading = (words * 60).div_ceil(230);
    ok(
        json!({"words": words, "characters": text.chars().count(), "sentences": sentences, "paragraphs": paragraphs, "reading_time_seconds": reading}),
    )
}

fn fold_accent(c: char) -> char {
    match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
        'è' | 'é' | 'ê' | 'ë' => 'e',
        'ì' | 'í' | 'î' | 'ï' => 'i',
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' => 'o',
        'ù' | 'ú' | 'û' | 'ü' => 'u',
        'ç' => 'c',
        'ñ' => 'n',
        'ß' => 's',
        other => other,
    }
}

fn word_parts(text: &str) -> Vec<String> {
    // Split on non-alphanumerics and on lower→upper case changes (camelCase).
    let mut parts = Vec::new();
    let mut current = String::new();
    let mut previous_lower = false;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            if !current.is_empty() {
                parts.push(std::mem::take(&mut current));
            }
            previous_lower = false;
            continue;
        }
        if c.is_uppercase() && previous_lower && !current.is_empty() {
            parts.push(std::mem::take(&mut current));
        }
        previous_lower = c.is_lowercase() || c.is_ascii_digit();
        current.extend(c.to_lowercase());
    }
    if !current.is_empty() {
        parts.push(current);
    }
    parts
}

fn slugify(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = text_arg(args, "text")?;
    let folded: String = text.to_lowercase().chars().map(fold_accent).collect();
    let slug = folded
        .split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("-");
    if slug.is_empty() {
        return Err(fail(
            "the text has no letters or digits to build a slug from",
        ));
    }
    ok(json!({"slug": slug, "length": slug.len()}))
}

fn capitalize(word: &str) -> String {
    let mut chars = word.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

fn change_case(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = text_arg(args, "text")?;
    let case = args.str("case")?;
    let parts = word_parts(text);
    let converted = match case {
        "upper" => text.to_uppercase(),
        "lower" => text.to_lowercase(),
        "title" => text
            .split(' ')
            .map(|w| capitalize(&w.to_lowercase()))
            .collect::<Vec<_>>()
            .join(" "),
        "snake" => parts.join("_"),
        "kebab" => parts.join("-"),
        "camel" => parts
            .iter()
            .enumerate()
            .map(|(i, p)| if i == 0 { p.clone() } else { capitalize(p) })
            .collect(),
        other => {
            return Err(fail(format!(
                "case must be upper, lower, title, snake, camel or kebab, got {other:?}"
            )));
        }
    };
    ok_text(
        json!({"converted": converted, "case": case, "words": parts.len()}),
        converted.clone(),
    )
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

fn base64_encode(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let bytes = text_arg(args, "text")?.as_bytes();
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            *chunk.get(1).unwrap_or(&0),
            *chunk.get(2).unwrap_or(&0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for i in 0..4 {
            if i <= chunk.len() {
                out.push(B64[(n >> (18 - 6 * i) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    ok(json!({"encoded": out, "input_bytes": bytes.len()}))
}

fn base64_decode(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let data: String = text_arg(args, "data")?
        .chars()
        .filter(|c| !c.is_whitespace())
        .collect();
    let data = data.trim_end_matches('=');
    let mut bits = 0u32;
    let mut count = 0;
    let mut bytes = Vec::with_capacity(data.len() * 3 / 4);
    for c in data.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' | b'-' => 62,
            b'/' | b'_' => 63,
            _ => return Err(fail(format!("{:?} is not a Base64 character", c as char))),
        };
        bits = (bits << 6) | u32::from(v);
        count += 6;
        if count >= 8 {
            count -= 8;
            bytes.push((bits >> count) as u8);
            bits &= (1 << count) - 1;
        }
    }
    match String::from_utf8(bytes) {
        Ok(text) => ok_text(
            json!({"text": text, "bytes": text.len(), "utf8": true}),
            text.clone(),
        ),
        Err(e) => {
            let raw = e.into_bytes();
            let hex: String = raw.iter().map(|b| format!("{b:02x}")).collect();
            ok(json!({"text": null, "bytes": raw.len(), "utf8": false, "hex": hex}))
        }
    }
}

fn crc32(bytes: &[u8]) -> u32 {
    let mut crc = 0xffff_ffffu32;
    for &b in bytes {
        crc ^= u32::from(b);
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0xedb8_8320
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn hash_text(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let bytes = text_arg(args, "text")?.as_bytes();
    let algorithm = args.str_or("algorithm", "crc32")?;
    let hex = match algorithm {
        "crc32" => format!("{:08x}", crc32(bytes)),
        "fnv1a64" => format!("{:016x}", fnv1a64(bytes)),
        other => {
            return Err(fail(format!(
                "algorithm must be crc32 or fnv1a64, got {other:?}"
            )));
        }
    };
    ok(json!({"algorithm": algorithm, "hex": hex, "bytes": bytes.len()}))
}

fn diff_text(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (old, new) = (text_arg(args, "old")?, text_arg(args, "new")?);
    let (a, b): (Vec<&str>, Vec<&str>) = (old.lines().collect(), new.lines().collect());
    if a.len() > MAX_DIFF_LINES || b.len() > MAX_DIFF_LINES {
        return Err(fail(format!(
            "diff_text compares at most {MAX_DIFF_LINES} lines per side"
        )));
    }
    // Longest common subsequence table, then walk it.
    let mut lcs = vec![vec![0u16; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j) = (0, 0);
    let mut lines = Vec::new();
    let (mut added, mut removed) = (0, 0);
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            lines.push(format!("  {}", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            lines.push(format!("+ {}", b[j]));
            added += 1;
            j += 1;
        } else {
            lines.push(format!("- {}", a[i]));
            removed += 1;
            i += 1;
        }
    }
    let diff = lines.join("\n");
    ok_text(
        json!({"diff": diff, "added": added, "removed": removed, "identical": added == 0 && removed == 0}),
        diff.clone(),
    )
}

fn format_json(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = text_arg(args, "json")?;
    let minify = args.bool_or("minify", false)?;
    let value: Value = serde_json::from_str(text).map_err(|e| {
        fail(format!(
            "invalid JSON at line {}, column {}: {e}",
            e.line(),
            e.column()
        ))
    })?;
    let formatted = if minify {
        serde_json::to_string(&value)
    } else {
        serde_json::to_string_pretty(&value)
    }
    .map_err(|e| fail(format!("cannot format: {e}")))?;
    let kind = match &value {
        Value::Object(_) => "object",
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "boolean",
        Value::Null => "null",
    };
    ok_text(
        json!({"formatted": formatted, "valid": true, "top_level": kind}),
        formatted.clone(),
    )
}

fn csv_fields(line: &str, delimiter: char) -> Vec<String> {
    let mut fields = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    let mut chars = line.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '"' if quoted && chars.peek() == Some(&'"') => {
                current.push('"');
                chars.next();
            }
            '"' => quoted = !quoted,
            c if c == delimiter && !quoted => fields.push(std::mem::take(&mut current)),
            c => current.push(c),
        }
    }
    fields.push(current);
    fields
}

fn csv_to_json(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = text_arg(args, "csv")?;
    let delimiter = args.str_or("delimiter", ",")?.chars().next().unwrap_or(',');
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header = csv_fields(
        lines.next().ok_or_else(|| fail("the CSV is empty"))?,
        delimiter,
    );
    let mut records = Vec::new();
    for (n, line) in lines.enumerate() {
        let fields = csv_fields(line, delimiter);
        if fields.len() != header.len() {
            return Err(fail(format!(
                "row {} has {} fields but the header has {}",
                n + 2,
                fields.len(),
                header.len()
            )));
        }
        let mut record = Map::new();
        for (key, value) in header.iter().zip(fields) {
            // Numbers become numbers; everything else stays a string.
            let parsed = value
                .trim()
                .parse::<f64>()
                .ok()
                .filter(|f| f.is_finite())
                .map_or_else(|| json!(value), |f| json!(f));
            record.insert(key.trim().to_string(), parsed);
        }
        records.push(Value::Object(record));
    }
    ok(json!({"columns": header, "records": records, "rows": records.len()}))
}

fn extract_emails(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = text_arg(args, "text")?;
    let mut emails = Vec::new();
    let mut urls = Vec::new();
    for raw in text.split_whitespace() {
        let token = raw
            .trim_matches(|c: char| "()[]<>,;\"'".contains(c))
            .trim_end_matches(['.', '!', '?', ':']);
        if token.starts_with("http://") || token.starts_with("https://") {
            if !urls.contains(&token.to_string()) {
                urls.push(token.to_string());
            }
        } else if let Some((user, domain)) = token.split_once('@')
            && !user.is_empty()
            && domain.contains('.')
            && !domain.starts_with('.')
            && !emails.contains(&token.to_lowercase())
        {
            emails.push(token.to_lowercase());
        }
    }
    ok(json!({"emails": emails, "urls": urls}))
}

fn find_and_replace(_world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = text_arg(args, "text")?;
    let find = args.str("find")?;
    if find.is_empty() {
        return Err(fail("find must not be empty"));
    }
    let replace = text_arg(args, "replace")?;
    let count = text.matches(find).count();
    let size = (text.len() + count * replace.len()).saturating_sub(count * find.len());
    if size > 4 * MAX_INPUT {
        return Err(fail("the result would be larger than 4 MiB"));
    }
    let result = text.replace(find, replace);
    ok_text(
        json!({"result": result, "replacements": count}),
        result.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_match_reference_values() {
        assert_eq!(crc32(b"hello"), 0x3610_a686);
        assert_eq!(fnv1a64(b"hello"), 0xa430_d846_80aa_bd0b);
        assert_eq!(word_parts("userAccountId"), ["user", "account", "id"]);
    }
}
