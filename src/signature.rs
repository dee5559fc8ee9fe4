//! Compact TypeScript-style signatures for JSON Schemas (SPEC §4, R-4.1–R-4.5), the `input` and `output`
//! fields of a search hit (R-3.9).
//!
//! # What this module owns
//! Turning one tool's input or output JSON Schema into a short, deterministic type hint such as
//! `{ id: string; mode?: "drip" | "flood" }`, plus whether that hint is complete and how many schema nodes
//! it cost. It never resolves `$ref`, never validates, never allocates in proportion to the schema, and
//! never panics: any JSON value is accepted as a schema, and whatever is malformed renders as `unknown`
//! and marks the hint incomplete.
//!
//! # Rendering (R-4.1, R-4.3)
//! - Object: `{ ` + members joined by `; ` + ` }`, `{}` when there are none. Required keys first, then
//!   optional keys with `?`, each group in byte order. Keys that are not JS identifiers
//!   (`[A-Za-z_$][A-Za-z0-9_$]*`) are JSON-quoted. A required key missing from `properties` renders as
//!   `name: unknown`, which is what the schema allows. `...` is the last member when keys were omitted or
//!   `additionalProperties` is `true` or a schema (its value schema is not rendered). A schema is an
//!   object schema when its `type` is `"object"` (or a type array containing it), or it has no `type`
//!   and has `properties`.
//! - `const` → one literal; `enum` → literal union; `[]` enum → `never`. Only scalar literals are shown
//!   (R-4.2: ≤ 8 values, ≤ 96 chars for the whole union). Beyond that, or with an array/object literal,
//!   the hint falls back to the schema's `type`, or to the kinds of the listed values when there is no
//!   `type` (`string`, `number`, …, `Array<unknown>`, `{ ... }`), and is marked incomplete.
//! - Type arrays → union in the listed order (`integer` is dropped when `number` is listed);
//!   `nullable: true` → `| null` unless a `null` member is already there; `array` → `Array<T>`
//!   (`Array<unknown>` without `items`; tuple-form `items` → `Array<unknown>`, incomplete).
//! - `anyOf`/`oneOf` → union of the variants when the schema has no `type`/`properties`/`items` of its
//!   own (with them, the own shape is rendered and the union only marks the hint incomplete). More than
//!   5 variants render as `unknown`, incomplete: showing only the first five would claim a narrower type
//!   than the schema has.
//! - `{}` and `true` → `unknown`; `false` → `never`; non-schema values → `unknown`, incomplete.
//! - Input hints only: numbers carry their bounds as a comment, `number /* integer, >= 1, < 10 */`
//!   (draft-04 boolean `exclusiveMinimum`/`exclusiveMaximum` turn `minimum`/`maximum` into `>`/`<`).
//! - `$ref`, `allOf`, `not`, `if`/`then`/`else`, `patternProperties`, `dependentSchemas` and the rest of
//!   `UNRENDERED_KEYWORDS` mark the hint incomplete; what else the schema says is still rendered, so a
//!   bare `$ref` is `unknown`.
//!
//! # SignatureBounds and invariants (R-4.2, R-4.4, R-4.5)
//! - Chars are Unicode scalar values (R-5.0). An input hint over 300 chars, or of a non-object schema,
//!   is exactly `unknown`; an output hint is `Some` only when complete, closed all the way down and
//!   within 800 chars. Rendering stops as soon as the bound is passed, so the buffer never grows much
//!   beyond it.
//! - Depth: the root is depth 0 and every step into a property, `items` or a union variant adds one. A
//!   schema deeper than [`SignatureBounds::max_depth`] renders as `unknown` and marks the hint incomplete. This is
//!   also the recursion bound: the walker's stack depth is at most `max_depth + 1` frames whatever the
//!   JSON, so a 128-deep schema cannot overflow the stack.
//! - At most [`NODE_BUDGET`] schema nodes are visited per render (each schema object, `required` entry,
//!   scanned property and enum value counts once); after that every further schema renders as `unknown`
//!   and the hint is incomplete. A single object scans at most 256 (`KEY_SCAN_LIMIT`) property and
//!   required entries, so a very wide object cannot starve its siblings of budget; past that limit the
//!   shown keys are the smallest among the first 256 in map order (which is key order under serde_json's
//!   default `BTreeMap`), followed by `...`.
//! - Deterministic: the same value gives the same bytes. Nothing from the schema is cloned; the only
//!   allocations are the output string and one reused member list.
//! - "Closed" (output hints): every object has `additionalProperties: false` and nothing renders as
//!   `unknown` — an `unknown` leaf (from `{}`, a missing `items`, …) admits open objects, so it fails the
//!   "closed all the way down" test of R-4.4 as well.

use std::fmt::Write as _;

use serde_json::{Map, Value};

/// A rendered hint plus what it cost to render.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signature {
    /// The TypeScript-style hint, at most the bound's `max_chars` Unicode scalar values.
    pub text: String,
    /// `false` when anything was elided (omitted keys, depth or node budget reached, over-long literal
    /// unions) or a keyword that cannot be rendered (`$ref`, `allOf`, …) was present. An input hint that
    /// fell back to `unknown` is never complete.
    pub complete: bool,
    /// Schema nodes visited by this render; never more than [`Signature::NODE_BUDGET`].
    pub nodes_visited: usize,
}

impl Signature {
    /// SignatureBounds of an input hint (R-4.2): 300 chars, depth 4, 16 properties.
    pub const INPUT_BOUNDS: SignatureBounds = INPUT_BOUNDS;
    /// SignatureBounds of an output hint (R-4.2): 800 chars, depth 6, 22 properties.
    pub const OUTPUT_BOUNDS: SignatureBounds = OUTPUT_BOUNDS;
    /// Most schema nodes one render visits, whatever the schema's size (R-4.5).
    pub const NODE_BUDGET: usize = NODE_BUDGET;
}

/// SignatureBounds for one kind of hint (R-4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SignatureBounds {
    /// Longest hint, in Unicode scalar values; a longer rendering is discarded (R-4.4).
    pub max_chars: usize,
    /// Deepest schema level rendered below the root (root = 0); deeper schemas render as `unknown`.
    pub max_depth: usize,
    /// Most members shown per object before the rest are elided as `...`.
    pub max_properties: usize,
}

/// SignatureBounds of an input hint (R-4.2).
pub const INPUT_BOUNDS: SignatureBounds = SignatureBounds {
    max_chars: 300,
    max_depth: 4,
    max_properties: 16,
};

/// SignatureBounds of an output hint (R-4.2).
pub const OUTPUT_BOUNDS: SignatureBounds = SignatureBounds {
    max_chars: 800,
    max_depth: 6,
    max_properties: 22,
};

/// Hard cap on schema nodes visited by one render, whatever the schema's size (R-4.5).
///
/// Why 2,048: a hint that fits 800 chars shows at most ~200 types (each member is at least `a: x; `),
/// and each shown member costs about three visits (its `required` entry, its property entry, its schema),
/// so ~600 visits render any schema whose hint can be shown at all; the rest is headroom for the key
/// scans of wide objects (256 entries per object at most). At a few tens of nanoseconds per visit the
/// worst case stays well under 100 µs per tool, which keeps a 100k-tool snapshot build within seconds.
pub const NODE_BUDGET: usize = 2_048;

/// Most entries of one object's `properties` (and, separately, of its `required`) that are scanned.
///
/// Keeps one very wide object from spending the whole [`NODE_BUDGET`] on key selection; typical schemas
/// have far fewer properties, so their keys are chosen from the full set.
const KEY_SCAN_LIMIT: usize = 256;

/// Longest property name shown, in Unicode scalar values (R-4.2); longer names count as omitted.
const MAX_PROPERTY_NAME_CHARS: usize = 128;

/// Most `anyOf`/`oneOf` variants rendered as a union (R-4.2); more render as `unknown`.
const MAX_UNION_VARIANTS: usize = 5;

/// Most values in a literal union (R-4.2); more fall back to the base type.
const MAX_LITERALS: usize = 8;

/// Longest literal union, in Unicode scalar values (R-4.2); longer falls back to the base type.
const MAX_LITERAL_UNION_CHARS: usize = 96;

/// Keywords whose meaning a compact hint cannot show; their presence marks the hint incomplete (R-4.3).
const UNRENDERED_KEYWORDS: [&str; 17] = [
    "$ref",
    "$dynamicRef",
    "$recursiveRef",
    "allOf",
    "not",
    "if",
    "then",
    "else",
    "patternProperties",
    "dependentSchemas",
    "dependentRequired",
    "dependencies",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "prefixItems",
    "contains",
];

/// JSON Schema has seven type names; a longer `type` array is malformed and not walked.
const MAX_TYPE_NAMES: usize = 7;

const UNKNOWN: &str = "unknown";

/// Input hint (R-4.4): the text is exactly `"unknown"` when the schema is not an object schema, or the
/// rendering is longer than 300 chars. `complete` reports whether anything was elided or marked
/// incomplete. `nodes_visited` <= [`Signature::NODE_BUDGET`] always.
pub fn input_signature(schema: &Value) -> Signature {
    if !is_object_schema(schema) {
        return Signature {
            text: UNKNOWN.to_owned(),
            complete: false,
            nodes_visited: 1,
        };
    }
    let mut renderer = Renderer::new(Hint::Input, INPUT_BOUNDS);
    renderer.schema(schema, 0);
    if renderer.over_bound {
        return Signature {
            text: UNKNOWN.to_owned(),
            complete: false,
            nodes_visited: renderer.visited,
        };
    }
    Signature {
        text: renderer.out,
        complete: renderer.complete,
        nodes_visited: renderer.visited,
    }
}

/// Output hint (R-4.4): `Some` only if the schema renders complete (closed objects all the way down:
/// every object has `additionalProperties: false`, no elided keys, no `unknown`, no `$ref`/`allOf`/…) and
/// within 800 chars; `None` otherwise. Output hints carry no number comments.
pub fn output_signature(schema: &Value) -> Option<Signature> {
    let mut renderer = Renderer::new(Hint::Output, OUTPUT_BOUNDS);
    renderer.schema(schema, 0);
    // `halted` is set by the first incompleteness, openness or bound overrun in output mode.
    if renderer.halted || !renderer.complete || !renderer.closed {
        return None;
    }
    Some(Signature {
        text: renderer.out,
        complete: true,
        nodes_visited: renderer.visited,
    })
}

/// Whether the input hint renders this schema at all (R-4.4): `type` is `"object"` or a type array
/// containing it, or there is no usable `type` and there are `properties`.
fn is_object_schema(schema: &Value) -> bool {
    let Value::Object(map) = schema else {
        return false;
    };
    match map.get("type") {
        Some(Value::String(name)) => name == "object",
        Some(Value::Array(names)) => {
            names.len() <= MAX_TYPE_NAMES && names.iter().any(|name| name == "object")
        }
        Some(_) | None => map.contains_key("properties"),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Hint {
    Input,
    Output,
}

/// One object member chosen for display; `schema` is `None` for a required key absent from `properties`.
#[derive(Clone, Copy)]
struct Member<'a> {
    name: &'a str,
    required: bool,
    schema: Option<&'a Value>,
}

/// Where a literal union started in the output, so an over-long one can be taken back.
#[derive(Clone, Copy)]
struct Mark {
    len: usize,
    chars: usize,
}

struct Renderer<'a> {
    hint: Hint,
    bounds: SignatureBounds,
    out: String,
    /// Unicode scalar values in `out`.
    chars: usize,
    visited: usize,
    complete: bool,
    closed: bool,
    /// The rendering passed `bounds.max_chars`.
    over_bound: bool,
    /// Nothing more is written: over the bound, or (output hints) the result is already known to be
    /// `None`, so the rest of the walk would be wasted.
    halted: bool,
    /// Member lists of every object on the current path, as one stack: an object owns `members[base..]`
    /// while it renders and truncates back to `base` when done, so nested objects reuse one allocation.
    members: Vec<Member<'a>>,
}

impl<'a> Renderer<'a> {
    fn new(hint: Hint, bounds: SignatureBounds) -> Self {
        Self {
            hint,
            bounds,
            out: String::with_capacity(128),
            chars: 0,
            visited: 0,
            complete: true,
            closed: true,
            over_bound: false,
            halted: false,
            members: Vec::new(),
        }
    }

    // ---- bookkeeping -------------------------------------------------------------------------------

    /// Counts one node against [`NODE_BUDGET`]; `false` (and incomplete) once it is spent.
    fn visit(&mut self) -> bool {
        if self.visited < NODE_BUDGET {
            self.visited += 1;
            true
        } else {
            self.incomplete();
            false
        }
    }

    fn incomplete(&mut self) {
        self.complete = false;
        if self.hint == Hint::Output {
            self.halted = true;
        }
    }

    fn not_closed(&mut self) {
        self.closed = false;
        if self.hint == Hint::Output {
            self.halted = true;
        }
    }

    /// Appends `s` and enforces the char bound; every write except literal unions goes through here.
    fn write(&mut self, s: &str) {
        if self.halted {
            return;
        }
        self.write_raw(s);
        self.check_bound();
    }

    /// Appends without checking the bound, for literal unions, which are measured against their own
    /// 96-char cap first and may be taken back (see [`Renderer::literals`]).
    fn write_raw(&mut self, s: &str) {
        self.out.push_str(s);
        self.chars += s.chars().count();
    }

    fn check_bound(&mut self) {
        if self.chars > self.bounds.max_chars {
            self.over_bound = true;
            self.halted = true;
        }
    }

    fn mark(&self) -> Mark {
        Mark {
            len: self.out.len(),
            chars: self.chars,
        }
    }

    fn reset(&mut self, mark: Mark) {
        self.out.truncate(mark.len);
        self.chars = mark.chars;
    }

    fn unknown(&mut self) {
        self.not_closed();
        self.write(UNKNOWN);
    }

    // ---- schemas -----------------------------------------------------------------------------------

    /// Renders any JSON value as a schema at `depth`; returns whether a top-level `null` member was
    /// written, so `nullable` does not add a second one.
    fn schema(&mut self, schema: &'a Value, depth: usize) -> bool {
        if self.halted {
            return false;
        }
        if depth > self.bounds.max_depth {
            self.incomplete();
            self.unknown();
            return false;
        }
        if !self.visit() {
            self.unknown();
            return false;
        }
        match schema {
            Value::Object(map) => self.schema_object(map, depth),
            Value::Bool(true) => {
                self.unknown();
                false
            }
            Value::Bool(false) => {
                self.write("never");
                false
            }
            Value::Null | Value::Number(_) | Value::String(_) | Value::Array(_) => {
                self.incomplete();
                self.unknown();
                false
            }
        }
    }

    fn schema_object(&mut self, map: &'a Map<String, Value>, depth: usize) -> bool {
        if has_unrendered_keyword(map) {
            self.incomplete();
            if self.halted {
                return false;
            }
        }
        let wrote_null = self.schema_core(map, depth);
        let nullable = matches!(map.get("nullable"), Some(Value::Bool(true)));
        if nullable && !wrote_null {
            self.write(" | null");
        }
        wrote_null || nullable
    }

    fn schema_core(&mut self, map: &'a Map<String, Value>, depth: usize) -> bool {
        if let Some(value) = map.get("const") {
            return self.literals(std::slice::from_ref(value), map, depth);
        }
        match map.get("enum") {
            Some(Value::Array(values)) => return self.literals(values, map, depth),
            Some(_) => self.incomplete(),
            None => {}
        }
        if let Some(variants) = self.union_variants(map) {
            let own_shape = map.contains_key("type")
                || map.contains_key("properties")
                || map.contains_key("items");
            if !own_shape {
                return self.union(variants, depth);
            }
            // An own shape next to a union (e.g. `required` alternatives) is rendered; the union
            // narrows it in ways a compact hint does not show.
            self.incomplete();
        }
        self.typed(map, depth)
    }

    /// Renders by `type`, or by shape when there is none.
    fn typed(&mut self, map: &'a Map<String, Value>, depth: usize) -> bool {
        match map.get("type") {
            Some(Value::String(name)) => self.type_name(name, map, depth),
            Some(Value::Array(names)) => self.type_union(names, map, depth),
            Some(_) => {
                self.incomplete();
                self.untyped(map, depth)
            }
            None => self.untyped(map, depth),
        }
    }

    fn untyped(&mut self, map: &'a Map<String, Value>, depth: usize) -> bool {
        if map.contains_key("properties") {
            self.object(map, depth);
        } else if map.contains_key("items") {
            self.array(map, depth);
        } else {
            self.unknown();
        }
        false
    }

    /// The `anyOf` or `oneOf` array to render, if any; malformed or doubled unions mark incomplete.
    fn union_variants(&mut self, map: &'a Map<String, Value>) -> Option<&'a [Value]> {
        let mut found = None;
        for keyword in ["anyOf", "oneOf"] {
            match map.get(keyword) {
                None => {}
                Some(Value::Array(variants)) if !variants.is_empty() && found.is_none() => {
                    found = Some(variants.as_slice());
                }
                Some(_) => self.incomplete(),
            }
        }
        found
    }

    fn union(&mut self, variants: &'a [Value], depth: usize) -> bool {
        if variants.len() > MAX_UNION_VARIANTS {
            self.incomplete();
            self.unknown();
            return false;
        }
        let mut wrote_null = false;
        for (index, variant) in variants.iter().enumerate() {
            if index > 0 {
                self.write(" | ");
            }
            wrote_null |= self.schema(variant, depth + 1);
        }
        wrote_null
    }

    fn type_union(
        &mut self,
        names: &'a [Value],
        map: &'a Map<String, Value>,
        depth: usize,
    ) -> bool {
        if names.is_empty() || names.len() > MAX_TYPE_NAMES {
            self.incomplete();
            self.unknown();
            return false;
        }
        let has_number = names.iter().any(|name| name == "number");
        let mut written = 0;
        let mut wrote_null = false;
        for (index, name) in names.iter().enumerate() {
            let Value::String(name_str) = name else {
                self.incomplete();
                continue;
            };
            // `integer` is a subset of `number`; duplicates are malformed but harmless.
            if (has_number && name_str == "integer") || names[..index].contains(name) {
                continue;
            }
            if written > 0 {
                self.write(" | ");
            }
            written += 1;
            wrote_null |= self.type_name(name_str, map, depth);
        }
        if written == 0 {
            self.unknown();
        }
        wrote_null
    }

    fn type_name(&mut self, name: &str, map: &'a Map<String, Value>, depth: usize) -> bool {
        match name {
            "string" => self.write("string"),
            "number" => {
                self.write("number");
                self.number_comment(map, /* integer */ false);
            }
            "integer" => {
                self.write("number");
                self.number_comment(map, /* integer */ true);
            }
            "boolean" => self.write("boolean"),
            "null" => {
                self.write("null");
                return true;
            }
            "array" => self.array(map, depth),
            "object" => self.object(map, depth),
            _ => {
                self.incomplete();
                self.unknown();
            }
        }
        false
    }

    /// ` /* integer, >= 1, <= 10 */` for input hints; nothing when there is nothing to say.
    fn number_comment(&mut self, map: &Map<String, Value>, integer: bool) {
        if self.hint != Hint::Input {
            return;
        }
        let mut parts = 0;
        if integer {
            self.comment_part(&mut parts, "integer", /* number */ None);
        }
        // Draft-04 spells exclusive bounds as booleans beside `minimum`/`maximum`; later drafts as
        // numbers of their own. Both are accepted, and anything else is ignored.
        // (the bound, its exclusive keyword, the inclusive and the exclusive operator)
        let bounds = [
            ("minimum", "exclusiveMinimum", ">=", ">"),
            ("maximum", "exclusiveMaximum", "<=", "<"),
        ];
        for (bound, exclusive, inclusive_op, exclusive_op) in bounds {
            if let Some(Value::Number(n)) = map.get(bound) {
                let op = if matches!(map.get(exclusive), Some(Value::Bool(true))) {
                    exclusive_op
                } else {
                    inclusive_op
                };
                self.comment_part(&mut parts, op, Some(n));
            }
            if let Some(Value::Number(n)) = map.get(exclusive) {
                self.comment_part(&mut parts, exclusive_op, Some(n));
            }
        }
        if parts > 0 {
            self.write(" */");
        }
    }

    fn comment_part(&mut self, parts: &mut usize, text: &str, number: Option<&serde_json::Number>) {
        self.write(if *parts == 0 { " /* " } else { ", " });
        *parts += 1;
        self.write(text);
        if let Some(number) = number {
            self.write(" ");
            self.number(number);
            self.check_bound();
        }
    }

    fn number(&mut self, number: &serde_json::Number) {
        let before = self.out.len();
        // Writing into a String cannot fail.
        let _ = write!(self.out, "{number}");
        // A JSON number is ASCII, so bytes are chars.
        self.chars += self.out.len() - before;
    }

    fn array(&mut self, map: &'a Map<String, Value>, depth: usize) {
        match map.get("items") {
            None => {
                self.not_closed();
                self.write("Array<unknown>");
            }
            Some(Value::Array(_)) => {
                // Tuple form (draft-04 … 2019-09): a compact hint does not show positions.
                self.incomplete();
                self.not_closed();
                self.write("Array<unknown>");
            }
            Some(items) => {
                self.write("Array<");
                self.schema(items, depth + 1);
                self.write(">");
            }
        }
    }

    fn object(&mut self, map: &'a Map<String, Value>, depth: usize) {
        let properties = match map.get("properties") {
            Some(Value::Object(properties)) => Some(properties),
            Some(_) => {
                self.incomplete();
                None
            }
            None => None,
        };
        let extra = match map.get("additionalProperties") {
            Some(Value::Bool(false)) => false,
            Some(Value::Bool(true) | Value::Object(_)) => {
                self.not_closed();
                true
            }
            None => {
                // Unspecified: open by the letter of JSON Schema, but shown without `...` in input
                // hints since most tool schemas simply omit it.
                self.not_closed();
                false
            }
            Some(_) => {
                self.incomplete();
                self.not_closed();
                false
            }
        };
        if self.halted {
            return;
        }

        let base = self.members.len();
        let omitted = self.collect_members(map, properties, base);
        let total = self.members.len() - base;
        let shown = total.min(self.bounds.max_properties);
        let elided = omitted || shown < total;
        if elided {
            self.incomplete();
        }
        let dots = elided || extra;

        if shown == 0 && !dots {
            self.write("{}");
        } else {
            self.write("{ ");
            for index in 0..shown {
                if self.halted {
                    break;
                }
                let member = self.members[base + index];
                if index > 0 {
                    self.write("; ");
                }
                self.key(member.name);
                self.write(if member.required { ": " } else { "?: " });
                match member.schema {
                    Some(schema) => {
                        self.schema(schema, depth + 1);
                    }
                    None => self.unknown(),
                }
            }
            if dots {
                self.write(if shown > 0 { "; ... }" } else { "... }" });
            } else {
                self.write(" }");
            }
        }
        self.members.truncate(base);
    }

    /// Pushes this object's members onto `self.members[base..]` in display order: required keys sorted
    /// and deduplicated, then optional keys sorted. Returns whether any key was left out (too long, past
    /// [`KEY_SCAN_LIMIT`] or the node budget).
    fn collect_members(
        &mut self,
        map: &'a Map<String, Value>,
        properties: Option<&'a Map<String, Value>>,
        base: usize,
    ) -> bool {
        let mut omitted = false;
        let mut required_truncated = false;
        match map.get("required") {
            None => {}
            Some(Value::Array(required)) => {
                for (index, entry) in required.iter().enumerate() {
                    if index >= KEY_SCAN_LIMIT || !self.visit() {
                        required_truncated = true;
                        break;
                    }
                    match entry {
                        Value::String(name) if !name_too_long(name) => {
                            self.members.push(Member {
                                name,
                                required: true,
                                schema: properties.and_then(|properties| properties.get(name)),
                            });
                        }
                        Value::String(_) => omitted = true,
                        _ => self.incomplete(),
                    }
                }
            }
            Some(_) => self.incomplete(),
        }
        self.members[base..].sort_unstable_by(|a, b| a.name.cmp(b.name));
        dedup_sorted(&mut self.members, base);
        let required_end = self.members.len();

        if required_truncated {
            // A key past the scan limit may be required; listing it as optional would be wrong, so
            // only the required keys seen so far are shown, followed by `...`.
            return true;
        }
        let Some(properties) = properties else {
            return omitted;
        };
        for (index, (name, schema)) in properties.iter().enumerate() {
            if index >= KEY_SCAN_LIMIT || !self.visit() {
                omitted = true;
                break;
            }
            if name_too_long(name) {
                omitted = true;
                continue;
            }
            let is_required = self.members[base..required_end]
                .binary_search_by(|member| member.name.cmp(name.as_str()))
                .is_ok();
            if !is_required {
                self.members.push(Member {
                    name,
                    required: false,
                    schema: Some(schema),
                });
            }
        }
        self.members[required_end..].sort_unstable_by(|a, b| a.name.cmp(b.name));
        omitted
    }

    fn key(&mut self, name: &str) {
        if is_identifier(name) {
            self.write(name);
        } else if !self.halted {
            self.json_string(name, usize::MAX);
            self.check_bound();
        }
    }

    // ---- literals ----------------------------------------------------------------------------------

    /// `const`/`enum` as a literal union, or the base-type fallback when it cannot be shown (R-4.2).
    fn literals(&mut self, values: &'a [Value], map: &'a Map<String, Value>, depth: usize) -> bool {
        if values.is_empty() {
            self.write("never");
            return false;
        }
        if self.halted {
            return false;
        }
        let mark = self.mark();
        let mut wrote_null = false;
        let mut fits = values.len() <= MAX_LITERALS;
        if fits {
            for (index, value) in values.iter().enumerate() {
                if !self.visit() {
                    fits = false;
                    break;
                }
                if index > 0 {
                    self.write_raw(" | ");
                }
                let used = self.chars - mark.chars;
                if used > MAX_LITERAL_UNION_CHARS
                    || !self.literal(value, MAX_LITERAL_UNION_CHARS - used)
                {
                    fits = false;
                    break;
                }
                wrote_null |= value.is_null();
            }
        }
        if fits {
            // Only now, with the union known to fit its own cap, does it count against the hint's bound.
            self.check_bound();
            return wrote_null;
        }
        self.reset(mark);
        self.incomplete();
        if self.halted {
            return false;
        }
        if map.contains_key("type") {
            self.typed(map, depth)
        } else {
            self.literal_kinds(values)
        }
    }

    /// Writes one scalar literal if it fits `cap` chars; arrays and objects have no compact literal.
    fn literal(&mut self, value: &Value, cap: usize) -> bool {
        let mark = self.mark();
        match value {
            Value::Null => self.write_raw("null"),
            Value::Bool(true) => self.write_raw("true"),
            Value::Bool(false) => self.write_raw("false"),
            Value::Number(number) => self.number(number),
            Value::String(text) => return self.json_string(text, cap),
            Value::Array(_) | Value::Object(_) => return false,
        }
        self.chars - mark.chars <= cap
    }

    /// Base type of a literal list without `type`: the union of the values' JSON kinds, in a fixed order.
    fn literal_kinds(&mut self, values: &[Value]) -> bool {
        const KINDS: [&str; 6] = [
            "string",
            "number",
            "boolean",
            "null",
            "Array<unknown>",
            "{ ... }",
        ];
        let mut seen = [false; KINDS.len()];
        for value in values {
            if !self.visit() {
                self.unknown();
                return false;
            }
            let kind = match value {
                Value::String(_) => 0,
                Value::Number(_) => 1,
                Value::Bool(_) => 2,
                Value::Null => 3,
                Value::Array(_) => 4,
                Value::Object(_) => 5,
            };
            seen[kind] = true;
        }
        let mut written = 0;
        for (kind, text) in KINDS.iter().enumerate() {
            if seen[kind] {
                if written > 0 {
                    self.write(" | ");
                }
                written += 1;
                self.write(text);
            }
        }
        seen[3]
    }

    /// Writes `text` JSON-quoted (serde_json's escapes) unless that takes more than `cap` chars, in
    /// which case it stops early and returns `false`; the caller takes the partial text back.
    fn json_string(&mut self, text: &str, cap: usize) -> bool {
        // A char is at most 4 bytes, so this rejects a huge literal without reading it.
        if text.len() / 4 > cap {
            return false;
        }
        let needs_escape = text
            .bytes()
            .any(|byte| byte == b'"' || byte == b'\\' || byte < 0x20);
        if !needs_escape {
            // Counting stops one past what fits: `n + 2 <= cap` exactly when `n < cap - 1`.
            let chars = text.chars().take(cap.saturating_sub(1)).count() + 2;
            if chars > cap {
                return false;
            }
            self.out.reserve(text.len() + 2);
            self.out.push('"');
            self.out.push_str(text);
            self.out.push('"');
            self.chars += chars;
            return true;
        }
        let start = self.chars;
        self.out.push('"');
        self.chars += 1;
        for ch in text.chars() {
            if self.chars - start > cap {
                return false;
            }
            match ch {
                '"' => self.write_raw("\\\""),
                '\\' => self.write_raw("\\\\"),
                '\n' => self.write_raw("\\n"),
                '\r' => self.write_raw("\\r"),
                '\t' => self.write_raw("\\t"),
                '\u{08}' => self.write_raw("\\b"),
                '\u{0c}' => self.write_raw("\\f"),
                ch if (ch as u32) < 0x20 => {
                    // Writing into a String cannot fail.
                    let _ = write!(self.out, "\\u{:04x}", ch as u32);
                    self.chars += 6;
                }
                ch => {
                    self.out.push(ch);
                    self.chars += 1;
                }
            }
        }
        self.out.push('"');
        self.chars += 1;
        self.chars - start <= cap
    }
}

/// `^[A-Za-z_$][A-Za-z0-9_$]*$`: keys that TypeScript accepts unquoted.
fn is_identifier(name: &str) -> bool {
    let mut bytes = name.bytes();
    let Some(first) = bytes.next() else {
        return false;
    };
    (first.is_ascii_alphabetic() || first == b'_' || first == b'$')
        && bytes.all(|byte| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$')
}

fn name_too_long(name: &str) -> bool {
    // A name of at most 128 bytes has at most 128 chars; only longer ones need counting.
    name.len() > MAX_PROPERTY_NAME_CHARS && name.chars().nth(MAX_PROPERTY_NAME_CHARS).is_some()
}

fn has_unrendered_keyword(map: &Map<String, Value>) -> bool {
    // Small schemas (the common case) are cheaper to scan than to probe 17 times; both are bounded.
    if map.len() <= UNRENDERED_KEYWORDS.len() {
        map.keys()
            .any(|key| UNRENDERED_KEYWORDS.contains(&key.as_str()))
    } else {
        UNRENDERED_KEYWORDS
            .iter()
            .any(|keyword| map.contains_key(*keyword))
    }
}

/// Drops adjacent duplicate names from the sorted tail `members[base..]`.
fn dedup_sorted(members: &mut Vec<Member<'_>>, base: usize) {
    let mut write = base;
    for read in base..members.len() {
        if write == base || members[write - 1].name != members[read].name {
            members[write] = members[read];
            write += 1;
        }
    }
    members.truncate(write);
}
