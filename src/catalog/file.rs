//! Catalog files: JSON Lines (one tool a line), a JSON array of tools, or an MCP
//! `tools/list` answer (`{"tools": [...]}`).
//!
//! Each entry needs `name`; `id`, `description`, `input_schema` (or MCP's `inputSchema`),
//! `output_schema` (`outputSchema`) and `server` are optional. An entry becomes a trusted
//! `plugin` tool unless the file is loaded as `mcp` or `client`. Owner: `server` if present,
//! else the part of `id` before `__`, else the file's stem. The entry's own `id` is kept as
//! `external_id`. A bad entry is reported with its line number and skipped; the rest loads.

use std::fmt;
use std::path::Path;

use serde_json::Value;

use super::{Descriptor, Executor, Source, json_kind};

/// One entry that could not be loaded, with where it was and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineIssue {
    /// 1-based line number (JSONL) or entry number (JSON array).
    pub line: usize,
    /// What is wrong with it.
    pub message: String,
}

impl fmt::Display for LineIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// What a catalog file yielded: the descriptors that loaded and the entries that did not.
#[derive(Debug, Default)]
pub struct LoadedFile {
    /// Loaded tools, in file order.
    pub descriptors: Vec<Descriptor>,
    /// Skipped entries.
    pub issues: Vec<LineIssue>,
}

/// A catalog file that could not be read at all.
#[derive(Debug, thiserror::Error)]
pub enum CatalogFileError {
    /// The file could not be read, or is larger than its bound.
    #[error("{message}")]
    Read {
        /// What went wrong, naming the path and the bound.
        message: String,
    },
    /// The file is JSON but neither an array of tools nor an object with `tools`.
    #[error(
        "catalog file {path} is not a catalog: expected JSON Lines, a JSON array of tools, or an object with a \"tools\" array"
    )]
    Shape {
        /// The path as given.
        path: String,
    },
}

/// Reads and parses a catalog file; `source` decides trust (`Plugin`, `Mcp` or `Client`).
pub fn load_catalog_file(path: &Path, source: Source) -> Result<LoadedFile, CatalogFileError> {
    use crate::config::input;
    let bytes = input::read_bounded(path, input::MAX_CATALOG_BYTES, "catalog file")
        .map_err(|message| CatalogFileError::Read { message })?;
    let stem = path
        .file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "catalog".to_string());
    parse_bytes(bytes, &stem, source).ok_or_else(|| CatalogFileError::Shape {
        path: path.display().to_string(),
    })
}

/// Parses a catalog file's bytes: lines that are not UTF-8 are skipped with their line numbers
/// and the rest loads. `None` when the text is a JSON document of the wrong shape.
pub(crate) fn parse_bytes(bytes: Vec<u8>, stem: &str, source: Source) -> Option<LoadedFile> {
    let mut bad_lines = Vec::new();
    let text = match String::from_utf8(bytes) {
        Ok(text) => text,
        Err(error) => {
            let bytes = error.into_bytes();
            let mut text = String::with_capacity(bytes.len());
            for (number, line) in bytes.split(|b| *b == b'\n').enumerate() {
                match std::str::from_utf8(line) {
                    Ok(line) => text.push_str(line),
                    Err(e) => bad_lines.push(LineIssue {
                        line: number + 1,
                        message: format!("not UTF-8 (at byte {} of the line)", e.valid_up_to()),
                    }),
                }
                text.push('\n');
            }
            text
        }
    };
    let mut loaded = parse_catalog(&text, stem, source)?;
    bad_lines.append(&mut loaded.issues);
    bad_lines.sort_by_key(|issue| issue.line);
    loaded.issues = bad_lines;
    Some(loaded)
}

/// Parses catalog text. `stem` is the owner of last resort. `None` when the text is a JSON
/// document of the wrong shape.
pub fn parse_catalog(text: &str, stem: &str, source: Source) -> Option<LoadedFile> {
    let trimmed = text.trim_start_matches('\u{feff}').trim();
    let mut out = LoadedFile::default();
    // A whole-document JSON array or object; JSON Lines otherwise (a JSONL file whose first
    // line is an object also starts with `{`, so only accept the document form when it parses
    // as one value).
    if (trimmed.starts_with('[') || trimmed.starts_with('{'))
        && let Ok(document) = serde_json::from_str::<Value>(trimmed)
    {
        let entries = match document {
            Value::Array(items) => items,
            Value::Object(mut map) => match map.remove("tools") {
                Some(Value::Array(items)) => items,
                // A single tool object on one line is a one-line JSONL file.
                _ if map.contains_key("name") => {
                    map_to_entries(&mut out, 1, Value::Object(map), stem, source);
                    return Some(out);
                }
                _ => return None,
            },
            _ => return None,
        };
        for (number, entry) in entries.into_iter().enumerate() {
            map_to_entries(&mut out, number + 1, entry, stem, source);
        }
        return Some(out);
    }
    for (number, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with("//") {
            continue;
        }
        match serde_json::from_str::<Value>(line) {
            Ok(entry) => map_to_entries(&mut out, number + 1, entry, stem, source),
            Err(error) => out.issues.push(LineIssue {
                line: number + 1,
                message: format!("not valid JSON ({error})"),
            }),
        }
    }
    Some(out)
}

fn map_to_entries(out: &mut LoadedFile, line: usize, entry: Value, stem: &str, source: Source) {
    match descriptor_from_entry(entry, stem, source) {
        Ok(descriptor) => out.descriptors.push(descriptor),
        Err(message) => out.issues.push(LineIssue { line, message }),
    }
}

fn descriptor_from_entry(entry: Value, stem: &str, source: Source) -> Result<Descriptor, String> {
    let Value::Object(mut map) = entry else {
        return Err("expected a JSON object with at least \"name\"".to_string());
    };
    let name = match map.remove("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => name,
        Some(Value::String(_)) => return Err("\"name\" is empty".to_string()),
        Some(other) => {
            return Err(format!(
                "\"name\" must be a string, got {}",
                json_kind(&other)
            ));
        }
        None => return Err("missing \"name\"".to_string()),
    };
    let external_id = match map.remove("id") {
        Some(Value::String(id)) if !id.is_empty() => Some(id),
        None | Some(Value::Null) => None,
        Some(Value::String(_)) => None,
        Some(other) => {
            return Err(format!(
                "\"id\" must be a string, got {}",
                json_kind(&other)
            ));
        }
    };
    let server = match map.remove("server") {
        Some(Value::String(server)) if !server.trim().is_empty() => Some(server),
        None | Some(Value::Null) | Some(Value::String(_)) => None,
        Some(other) => {
            return Err(format!(
                "\"server\" must be a string, got {}",
                json_kind(&other)
            ));
        }
    };
    let description = match map.remove("description") {
        Some(Value::String(text)) => text,
        None | Some(Value::Null) => String::new(),
        Some(other) => {
            return Err(format!(
                "\"description\" must be a string, got {}",
                json_kind(&other)
            ));
        }
    };
    let input_schema = schema_field(&mut map, "input_schema", "inputSchema")?
        .unwrap_or_else(|| Value::Object(Default::default()));
    let output_schema = schema_field(&mut map, "output_schema", "outputSchema")?;
    let label = match map.remove("label").or_else(|| map.remove("title")) {
        Some(Value::String(label)) if !label.trim().is_empty() => Some(label),
        _ => None,
    };

    let owner = server
        .or_else(|| {
            external_id
                .as_deref()
                .and_then(|id| id.split_once("__"))
                .map(|(owner, _)| owner.to_string())
                .filter(|owner| !owner.is_empty())
        })
        .unwrap_or_else(|| stem.to_string());
    let mut descriptor = Descriptor::new(source, &owner, &name);
    descriptor.description = description;
    descriptor.input_schema = std::sync::Arc::new(input_schema);
    descriptor.output_schema = output_schema;
    descriptor.label = label;
    descriptor.external_id = external_id;
    descriptor.executor = if source == Source::Client {
        Executor::Client
    } else {
        Executor::Unavailable
    };
    Ok(descriptor)
}

fn schema_field(
    map: &mut serde_json::Map<String, Value>,
    key: &str,
    alias: &str,
) -> Result<Option<Value>, String> {
    match map.remove(key).or_else(|| map.remove(alias)) {
        None | Some(Value::Null) => Ok(None),
        Some(schema @ Value::Object(_)) => Ok(Some(schema)),
        // `true` is the schema that accepts anything.
        Some(Value::Bool(true)) => Ok(Some(Value::Object(Default::default()))),
        Some(other) => Err(format!(
            "\"{key}\" must be a JSON Schema object, got {}",
            json_kind(&other)
        )),
    }
}
