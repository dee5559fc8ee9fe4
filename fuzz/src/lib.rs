//! Helpers the fuzz targets share: independent checks written here, not taken from the product.

use std::collections::HashSet;

use serde::de::{Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

/// Deserializes any JSON (or JSON5) document and records whether some object repeats a key.
pub struct DuplicateKeys(pub bool);

impl<'de> Deserialize<'de> for DuplicateKeys {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(Scan)
    }
}

struct Scan;

impl<'de> Visitor<'de> for Scan {
    type Value = DuplicateKeys;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<DuplicateKeys, E> {
        Ok(DuplicateKeys(false))
    }
    fn visit_i64<E>(self, _: i64) -> Result<DuplicateKeys, E> {
        Ok(DuplicateKeys(false))
    }
    fn visit_u64<E>(self, _: u64) -> Result<DuplicateKeys, E> {
        Ok(DuplicateKeys(false))
    }
    fn visit_f64<E>(self, _: f64) -> Result<DuplicateKeys, E> {
        Ok(DuplicateKeys(false))
    }
    fn visit_str<E>(self, _: &str) -> Result<DuplicateKeys, E> {
        Ok(DuplicateKeys(false))
    }
    fn visit_unit<E>(self) -> Result<DuplicateKeys, E> {
        Ok(DuplicateKeys(false))
    }
    fn visit_none<E>(self) -> Result<DuplicateKeys, E> {
        Ok(DuplicateKeys(false))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<DuplicateKeys, A::Error> {
        let mut any = false;
        while let Some(DuplicateKeys(dup)) = seq.next_element()? {
            any |= dup;
        }
        Ok(DuplicateKeys(any))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<DuplicateKeys, A::Error> {
        let mut seen = HashSet::new();
        let mut any = false;
        while let Some(key) = map.next_key::<String>()? {
            any |= !seen.insert(key);
            let DuplicateKeys(dup) = map.next_value()?;
            any |= dup;
        }
        Ok(DuplicateKeys(any))
    }
}

/// Nesting of arrays and objects (a scalar is 0, `[]` is 1).
pub fn depth(value: &Value) -> usize {
    match value {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Object(map) => 1 + map.values().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// The value of a fuzz input that is a JSON document (bounded in depth so that the target's own
/// recursive helpers stay within the stack), or `None`.
pub fn json(data: &[u8]) -> Option<Value> {
    let mut de = serde_json::Deserializer::from_slice(data);
    let value = Value::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(value)
}
