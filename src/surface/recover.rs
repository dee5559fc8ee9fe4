//! Calls in the wrong shape, understood: what small models get wrong about the
//! controls, mapped onto the structured equivalent the surface declares.
//!
//! Owns:
//! - [`classify`]: a call of an undeclared name that is plainly a bridge function or a control —
//!   `openclaw.tools.search/describe/call` and their provider-sanitised forms
//!   (`openclaw_tools_search`, `openclaw-tools-call`, `functions.openclaw.tools.describe`…), the
//!   structured controls `tool_search` / `tool_describe` / `tool_call`, or bare `search` /
//!   `describe` / `call` whose arguments have the matching shape — as one bridge operation with
//!   the positional arguments `openclaw.tools.*` takes; `tool_search_code` called with search
//!   arguments (`{"query": …}` instead of `{"code": …}`) is a search.
//! - [`normalize_body`]: a `tool_search_code` body in a Markdown fence, or whose last top-level
//!   statement is an expression with no top-level `return`, rewritten to run as meant (a small
//!   JS-aware scan: strings, template literals, comments and regular expressions never confuse
//!   it; when in doubt the body is left exactly as it was).
//! - [`catalog_call`]: a catalog tool called by one of its names (resolved by the surface) as
//!   the call of that tool; [`unknown_name_search`]: a name that names nothing as a search for
//!   the words of the name and of its argument keys (it calls nothing).
//! - The one-line hints telling the model how the declared control is used.
//!
//! Never does: run anything (the surface dispatches a plan through the same gateway path and
//! policy as a right-shape call), reach a tool by a route the surface does not declare, change a
//! body that already returns at top level, or guess from prose.

use serde_json::{Map, Value, json};

use crate::config::Mode;

/// Longest rendered example in a hint (longer ones use a `…` placeholder).
const MAX_HINT_EXAMPLE: usize = 240;

/// A bridge operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// `openclaw.tools.search` / `tool_search`.
    Search,
    /// `openclaw.tools.describe` / `tool_describe`.
    Describe,
    /// `openclaw.tools.call` / `tool_call`.
    Call,
}

impl Op {
    fn bridge(self) -> &'static str {
        match self {
            Op::Search => "openclaw.tools.search",
            Op::Describe => "openclaw.tools.describe",
            Op::Call => "openclaw.tools.call",
        }
    }

    /// The structured control of the operation.
    pub(crate) fn control(self) -> &'static str {
        match self {
            Op::Search => "tool_search",
            Op::Describe => "tool_describe",
            Op::Call => "tool_call",
        }
    }
}

/// How a wrong-shape call was recognised (the session log's `form`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Form {
    /// Named like a bridge function (`openclaw.tools.search`, `openclaw_tools_call`…).
    BridgeName,
    /// A structured control the surface does not declare (`tool_search` in code mode).
    ControlName,
    /// `search` / `describe` / `call` with the matching argument shape.
    BareName,
    /// `tool_search_code` called with search arguments.
    CodeToolSearch,
    /// A catalog tool called by its name (not declared to the model): a call of that tool.
    CatalogName,
    /// A name that is neither declared nor in the catalog: a search for what it names.
    UnknownName,
    /// A call of arguments only, with no tool id, right after a step named the tool to call.
    CallWithoutId,
}

impl Form {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Form::BridgeName => "bridge_name",
            Form::ControlName => "control_name",
            Form::BareName => "bare_name",
            Form::CodeToolSearch => "code_tool_search_args",
            Form::CatalogName => "catalog_name",
            Form::UnknownName => "unknown_name",
            Form::CallWithoutId => "call_without_id",
        }
    }
}

/// One wrong-shape call as the bridge operation it means.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Plan {
    pub op: Op,
    /// The positional arguments, as `openclaw.tools.<op>(…)` takes them.
    pub args: Vec<Value>,
    pub form: Form,
}

/// The plan of a call of the catalog tool `id` that the model made by one of its names
/// (R-6.3) instead of through the declared control.
pub(crate) fn catalog_call(id: &str, arguments: &Value) -> Plan {
    let arguments = match arguments {
        Value::Null => json!({}),
        other => other.clone(),
    };
    Plan {
        op: Op::Call,
        args: vec![Value::from(id), arguments],
        form: Form::CatalogName,
    }
}

/// Longest search query made from an unknown name and its argument keys.
const MAX_NAME_QUERY: usize = 160;

/// The plan of a call of `name`, which names nothing here: a search for the words of the name
/// (`post_message`, `postMessage` and `post-message` all read "post message", split as the
/// search's exact-name forms split names: [`crate::search::words`]) and of its argument keys,
/// or `None` when that leaves no word.
pub(crate) fn unknown_name_search(name: &str, arguments: &Value) -> Option<Plan> {
    let mut words = Vec::new();
    let keys = arguments
        .as_object()
        .map(|object| object.keys().map(String::as_str).collect::<Vec<_>>())
        .unwrap_or_default();
    for part in std::iter::once(name).chain(keys) {
        let spaced = crate::search::words(part);
        words.extend(
            spaced
                .split(' ')
                .filter(|w| !w.is_empty())
                .map(str::to_string),
        );
    }
    // A provider's namespace (`functions.getWeather`) is not part of what the name means.
    if words.first().is_some_and(|w| w == "functions") {
        words.remove(0);
    }
    words.dedup();
    let mut query = String::new();
    for word in words {
        if query.len() + word.len() + 1 > MAX_NAME_QUERY {
            break;
        }
        if !query.is_empty() {
            query.push(' ');
        }
        query.push_str(&word);
    }
    (!query.is_empty()).then(|| Plan {
        op: Op::Search,
        args: vec![Value::from(query)],
        form: Form::UnknownName,
    })
}

/// `name` lowercased, every run of non-alphanumerics one `_`, a leading `functions_` dropped.
fn canonical(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.trim().chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c.to_ascii_lowercase());
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    let out = out.trim_matches('_');
    out.strip_prefix("functions_").unwrap_or(out).to_string()
}

/// The plan of a call of `name` (not declared to the model) with `arguments`, if it is one of
/// the wrong shapes this module understands. `bare_names` allows `search` / `describe` /
/// `call` (the surface passes false when the name resolves to a catalog tool).
pub(crate) fn classify(name: &str, arguments: &Value, bare_names: bool) -> Option<Plan> {
    let canonical = canonical(name);
    let explicit = |op: Op, form: Form| {
        Some(Plan {
            op,
            args: positional(op, arguments),
            form,
        })
    };
    match canonical.as_str() {
        "openclaw_tools_search" | "openclaw_search" | "tools_search" => {
            explicit(Op::Search, Form::BridgeName)
        }
        "openclaw_tools_describe" | "openclaw_describe" | "tools_describe" => {
            explicit(Op::Describe, Form::BridgeName)
        }
        "openclaw_tools_call" | "openclaw_call" | "tools_call" => {
            explicit(Op::Call, Form::BridgeName)
        }
        "tool_search" => explicit(Op::Search, Form::ControlName),
        "tool_describe" => explicit(Op::Describe, Form::ControlName),
        "tool_call" => explicit(Op::Call, Form::ControlName),
        "tool_search_code" => code_tool_search(arguments),
        "search" | "describe" | "call" if bare_names => {
            let op = match canonical.as_str() {
                "search" => Op::Search,
                "describe" => Op::Describe,
                _ => Op::Call,
            };
            shaped(op, arguments).then(|| Plan {
                op,
                args: positional(op, arguments),
                form: Form::BareName,
            })
        }
        _ => None,
    }
}

/// `tool_search_code` called with `{"query": …}` / `{"queries": …}` (and no `code`): a search.
pub(crate) fn code_tool_search(arguments: &Value) -> Option<Plan> {
    let object = arguments.as_object()?;
    if object.contains_key("code") {
        return None;
    }
    let query = object.get("query").is_some_and(Value::is_string);
    let queries = object.get("queries").is_some_and(Value::is_array);
    (query || queries).then(|| Plan {
        op: Op::Search,
        args: vec![arguments.clone()],
        form: Form::CodeToolSearch,
    })
}

fn keys_within(object: &Map<String, Value>, allowed: &[&str]) -> bool {
    object.keys().all(|k| allowed.contains(&k.as_str()))
}

/// Whether `arguments` have the shape of `op` (for bare names only: a plain `search` call with
/// arbitrary arguments is not taken for a search).
fn shaped(op: Op, arguments: &Value) -> bool {
    match (op, arguments) {
        (Op::Search | Op::Describe, Value::String(text)) => !text.trim().is_empty(),
        (Op::Search, Value::Object(o)) => {
            (o.get("query").is_some_and(Value::is_string) && keys_within(o, &["query", "limit"]))
                || (o.get("queries").is_some_and(Value::is_array) && keys_within(o, &["queries"]))
        }
        (Op::Describe, Value::Object(o)) => {
            o.get("id").is_some_and(Value::is_string) && keys_within(o, &["id"])
        }
        (Op::Call, Value::Object(o)) => {
            o.get("id").is_some_and(Value::is_string)
                && keys_within(o, &["id", "args", "arguments"])
                && o.get("args")
                    .or_else(|| o.get("arguments"))
                    .is_none_or(Value::is_object)
        }
        (op, Value::Array(items)) => {
            is_positional(op, items)
                && match op {
                    Op::Search => items.first().is_some_and(|q| q.is_string() || q.is_array()),
                    Op::Describe => items.first().is_some_and(Value::is_string),
                    Op::Call => {
                        items.first().is_some_and(Value::is_string)
                            && items.get(1).is_none_or(Value::is_object)
                    }
                }
        }
        _ => false,
    }
}

/// Whether an array of arguments is the positional list (`["query", {limit}]`, `[id]`,
/// `[id, args]`) rather than one argument (a batch of query strings).
fn is_positional(op: Op, items: &[Value]) -> bool {
    match op {
        Op::Search => matches!(
            items,
            [Value::String(_) | Value::Array(_)]
                | [Value::String(_) | Value::Array(_), Value::Object(_)]
        ),
        Op::Describe => items.len() == 1,
        Op::Call => matches!(items, [Value::String(_)] | [Value::String(_), _]),
    }
}

fn positional(op: Op, arguments: &Value) -> Vec<Value> {
    match arguments {
        Value::Array(items) if is_positional(op, items) => items.clone(),
        other => vec![other.clone()],
    }
}

impl Plan {
    /// For a call that names no tool — its one argument an object holding only `args` (or
    /// `arguments`), an object — the call of `id` with those arguments, as `CallWithoutId`.
    pub(crate) fn naming(&self, id: &str) -> Option<Plan> {
        let [Value::Object(object)] = self.args.as_slice() else {
            return None;
        };
        if self.op != Op::Call || object.len() != 1 {
            return None;
        }
        let arguments = object.get("args").or_else(|| object.get("arguments"))?;
        arguments.is_object().then(|| Plan {
            op: Op::Call,
            args: vec![Value::from(id), arguments.clone()],
            form: Form::CallWithoutId,
        })
    }

    fn arg(&self, index: usize) -> Value {
        self.args.get(index).cloned().unwrap_or(Value::Null)
    }

    /// The body of the code cell that makes this call: `return await openclaw.tools.<op>(…);`
    /// with the arguments as JSON literals (data, never code).
    pub(crate) fn cell_body(&self) -> String {
        let args: Vec<String> = self.args.iter().map(Value::to_string).collect();
        format!("return await {}({});", self.op.bridge(), args.join(", "))
    }

    /// The first positional argument (search's query or request, describe's selector).
    pub(crate) fn first(&self) -> Value {
        self.arg(0)
    }

    /// The second positional argument (search's options, call's arguments).
    pub(crate) fn second(&self) -> Value {
        self.arg(1)
    }

    /// The structured request a right-shape call would have sent, for the hint.
    fn structured_example(&self) -> Value {
        match self.op {
            Op::Search => crate::sandbox::search_request(self.first(), self.second()),
            Op::Describe => match self.first() {
                Value::String(id) => json!({"id": id}),
                other => other,
            },
            Op::Call => match (self.first(), self.second()) {
                (Value::String(id), Value::Null) => json!({"id": id, "args": {}}),
                (Value::String(id), args) => json!({"id": id, "args": args}),
                (other, _) => other,
            },
        }
    }
}

/// What a recovered call was run as, and the one line the model reads about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recovered {
    /// The name the model called.
    pub name: String,
    /// How it was recognised (`bridge_name`, `control_name`, `bare_name`,
    /// `code_tool_search_args`, `fenced_body`, `implicit_return`, `code_in_text`, …).
    pub form: &'static str,
    /// What it ran as (`tool_search_code`, `tool_search`, `tool_describe`, `tool_call`).
    pub ran_as: String,
    /// One line on how the declared control is used.
    pub hint: String,
}

fn example(text: String, fallback: &str) -> String {
    if text.chars().count() <= MAX_HINT_EXAMPLE {
        text
    } else {
        fallback.to_string()
    }
}

/// The hint of a recovered call in a surface of `mode` (the mode in force).
pub(crate) fn plan_hint(plan: &Plan, mode: Mode) -> String {
    match mode {
        Mode::Code => {
            let code = example(
                plan.cell_body(),
                &format!("return await {}(…)", plan.op.bridge()),
            );
            let request = json!({"code": code});
            format!("Next time call tool_search_code with {request}.")
        }
        Mode::Tools | Mode::Directory => {
            let request = example(plan.structured_example().to_string(), "{…}");
            format!("Next time call {} with {request}.", plan.op.control())
        }
        Mode::Direct | Mode::Auto => match plan.op {
            Op::Call => {
                "Next time call the tool you need directly by its declared name, with its own arguments.".into()
            }
            Op::Search | Op::Describe => {
                "Every tool is declared to you: next time call the one you need directly by its name.".into()
            }
        },
    }
}

/// The hint of an unknown name that ran as a search for it (`Form::UnknownName`) in a surface
/// of `mode`: nothing ran, and how to run one of the matches.
pub(crate) fn unknown_name_hint(name: &str, mode: Mode) -> String {
    let how = match mode {
        Mode::Code => "call the one that fits the request from tool_search_code, as \"next\" shows",
        _ => {
            "run the one that fits the request with tool_call {\"id\": \"<its id>\", \"args\": {…}}"
        }
    };
    format!(
        "Nothing ran: there is no tool {:?}. These catalog tools match it; {how}.",
        crate::config::input::echo(name)
    )
}

/// The hint of a recovered search in code mode whose answer carries the next step.
pub(crate) const CODE_NEXT_HINT: &str =
    "Next time call tool_search_code itself; send the cell in \"next\" now.";

/// The hint of a recovered bridge-function search in code mode whose answer carries the next
/// step (worded as a bridge call: see `next.rs`).
pub(crate) const BRIDGE_NEXT_HINT: &str =
    "Send the call in \"next\" now; it runs through tool_search_code.";

/// The hint of a code cell the model wrote as text.
pub(crate) fn code_in_text_hint(normalized: &Normalized) -> String {
    let ending = if normalized.returned {
        ", and end the body with return <value>"
    } else {
        ""
    };
    format!(
        "Next time call tool_search_code with {{\"code\": \"<the JavaScript body>\"}} instead of writing the code in your message{ending}."
    )
}

/// A `tool_search_code` body made to run as meant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Normalized {
    /// The body to run.
    pub body: String,
    /// A Markdown fence was stripped.
    pub fenced: bool,
    /// The last expression (or a function the body only declared) is now returned.
    pub returned: bool,
}

impl Normalized {
    /// Whether the body changed.
    pub(crate) fn changed(&self) -> bool {
        self.fenced || self.returned
    }

    /// The hint of a normalised body.
    pub(crate) fn hint(&self) -> String {
        match (self.fenced, self.returned) {
            (true, true) => "Next time send tool_search_code the bare JavaScript body (no Markdown fence) and end it with return <value>.".into(),
            (true, false) => "Next time send tool_search_code the bare JavaScript body, without a Markdown fence.".into(),
            _ => "Next time end the tool_search_code body with return <value>: only a returned value comes back.".into(),
        }
    }
}

/// `code` with a surrounding Markdown fence stripped and its last top-level expression returned
/// when the body has no top-level `return` (see the module doc).
pub(crate) fn normalize_body(code: &str) -> Normalized {
    let (body, fenced) = match strip_fence(code) {
        Some(inner) => (inner.to_string(), true),
        None => (code.to_string(), false),
    };
    match with_return(&body) {
        Some(body) => Normalized {
            body,
            fenced,
            returned: true,
        },
        None => Normalized {
            body,
            fenced,
            returned: false,
        },
    }
}

/// The inside of one Markdown fence (```` ```js ```` … ```` ``` ````) that is the whole text.
fn strip_fence(code: &str) -> Option<&str> {
    let trimmed = code.trim();
    let after = trimmed.strip_prefix("```")?;
    let newline = after.find('\n')?;
    let info = after[..newline].trim();
    if !info
        .chars()
        .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
    {
        return None;
    }
    let inner = after[newline + 1..].trim_end().strip_suffix("```")?;
    if inner.contains("```") {
        return None;
    }
    Some(inner.trim())
}

/// Statement keywords: a last statement starting with one is not an expression.
const STATEMENT_KEYWORDS: [&str; 22] = [
    "const", "let", "var", "if", "else", "for", "while", "do", "switch", "case", "default", "try",
    "catch", "finally", "throw", "function", "class", "return", "break", "continue", "import",
    "export",
];

/// Keywords after which an expression cannot have ended (no automatic semicolon after them).
const CONTINUING_KEYWORDS: [&str; 28] = [
    "await",
    "return",
    "typeof",
    "new",
    "delete",
    "void",
    "in",
    "of",
    "instanceof",
    "yield",
    "const",
    "let",
    "var",
    "if",
    "else",
    "for",
    "while",
    "do",
    "switch",
    "case",
    "try",
    "catch",
    "finally",
    "throw",
    "function",
    "class",
    "extends",
    "async",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Last {
    /// Nothing yet (or a statement just ended).
    Start,
    /// An identifier or keyword, by its byte range.
    Word(usize, usize),
    /// A value that can end an expression: a number, string, template, regex, `)` `]` or an
    /// expression's `}`.
    Value,
    /// The `)` of an `if (…)` / `for (…)` / `while (…)` header: a statement continues.
    Header,
    /// Any other punctuator (by its last character).
    Punct(u8),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Open {
    Paren {
        header: bool,
    },
    Bracket,
    /// A block at statement level (its `}` ends a statement).
    Block,
    /// An object literal or a function body inside an expression.
    Brace,
    /// `${` inside a template literal.
    Template,
}

/// What the scan found at the top level of a body.
struct Scan {
    /// Byte offsets where top-level statements start.
    starts: Vec<usize>,
    /// The byte offset just after the last token that is not a top-level `;`.
    end: usize,
    /// A `return` at the top level.
    returns: bool,
}

fn is_ident_start(b: u8) -> bool {
    b.is_ascii_alphabetic() || b == b'_' || b == b'$' || b >= 0x80
}

fn is_ident(b: u8) -> bool {
    is_ident_start(b) || b.is_ascii_digit()
}

/// Scans `code`; `None` when it cannot be scanned (an unterminated string, comment, template or
/// bracket): such a body is left alone.
fn scan(code: &str) -> Option<Scan> {
    let mut scanner = Scanner {
        code,
        b: code.as_bytes(),
        i: 0,
        stack: Vec::new(),
        last: Last::Start,
        pending: true,
        newline: false,
        scan: Scan {
            starts: Vec::new(),
            end: 0,
            returns: false,
        },
    };
    while scanner.i < scanner.b.len() {
        if scanner.skip_trivia()? {
            continue;
        }
        // A significant token starts at `i`.
        let top = scanner.stack.is_empty();
        if top {
            scanner.mark_statement_start();
        }
        scanner.newline = false;
        if scanner.token(top)? {
            scanner.scan.end = scanner.i;
        }
    }
    scanner.stack.is_empty().then_some(scanner.scan)
}

/// The state of [`scan`] between tokens.
struct Scanner<'a> {
    code: &'a str,
    b: &'a [u8],
    /// The byte offset being looked at.
    i: usize,
    stack: Vec<Open>,
    last: Last,
    /// The next top-level token starts a statement.
    pending: bool,
    /// A line break since the last token.
    newline: bool,
    scan: Scan,
}

impl<'a> Scanner<'a> {
    /// The text of the last token if it is a word, else "".
    fn last_word(&self) -> &'a str {
        match self.last {
            Last::Word(s, e) => &self.code[s..e],
            _ => "",
        }
    }

    /// Skips one whitespace character or one comment at `i`, noting line breaks: `Some(false)`
    /// when a significant token starts there, `None` at an unterminated comment.
    fn skip_trivia(&mut self) -> Option<bool> {
        let (b, i) = (self.b, self.i);
        let c = b[i];
        if c == b'\n' {
            self.newline = true;
            self.i += 1;
        } else if c.is_ascii_whitespace() {
            self.i += 1;
        } else if c == b'/' && b.get(i + 1) == Some(&b'/') {
            while self.i < b.len() && b[self.i] != b'\n' {
                self.i += 1;
            }
        } else if c == b'/' && b.get(i + 1) == Some(&b'*') {
            let end = self.code[i + 2..].find("*/")? + i + 2;
            if self.code[i..end].contains('\n') {
                self.newline = true;
            }
            self.i = end + 2;
        } else {
            return Some(false);
        }
        Some(true)
    }

    /// Records a top-level statement starting at `i`: after a `;` or a block, or after a line
    /// break that ends an expression (automatic semicolon insertion).
    fn mark_statement_start(&mut self) {
        let c = self.b[self.i];
        let continuing = matches!(
            word_at(self.code, self.i),
            Some("else" | "catch" | "finally")
        );
        let asi = self.newline
            && !self.pending
            && !continuing
            && (is_ident_start(c) || c.is_ascii_digit() || c == b'"' || c == b'\'')
            && match self.last {
                Last::Value => true,
                Last::Word(..) => !CONTINUING_KEYWORDS.contains(&self.last_word()),
                _ => false,
            };
        if continuing {
            self.pending = false;
        } else if self.pending || asi {
            self.scan.starts.push(self.i);
            self.pending = false;
        }
    }

    /// Reads the significant token at `i`: `Some(true)` when it extends the body's end,
    /// `Some(false)` for a top-level `;`, `None` when the code cannot be scanned.
    fn token(&mut self, top: bool) -> Option<bool> {
        match self.b[self.i] {
            quote @ (b'"' | b'\'') => self.string(quote)?,
            b'`' => self.template(self.i + 1)?,
            b'/' => self.slash()?,
            b'(' => {
                let header = matches!(self.last_word(), "if" | "for" | "while" | "with" | "switch");
                self.open(Open::Paren { header }, Last::Punct(b'('));
            }
            b'[' => self.open(Open::Bracket, Last::Punct(b'[')),
            b'{' => self.open_brace(top),
            close @ (b')' | b']') => self.close(close)?,
            b'}' => self.close_brace()?,
            b';' => {
                self.i += 1;
                self.last = Last::Start;
                if top {
                    self.pending = true;
                    return Some(false);
                }
            }
            c if is_ident_start(c) => self.word(top),
            c if c.is_ascii_digit() => self.number(),
            other => {
                self.i += 1;
                self.last = Last::Punct(other);
            }
        }
        Some(true)
    }

    /// A string literal opened by `quote` at `i` (it may not span lines).
    fn string(&mut self, quote: u8) -> Option<()> {
        let b = self.b;
        let mut j = self.i + 1;
        loop {
            match b.get(j)? {
                b'\\' => j += 2,
                b'\n' => return None,
                q if *q == quote => break,
                _ => j += 1,
            }
        }
        self.i = j + 1;
        self.last = Last::Value;
        Some(())
    }

    /// A template literal's text from `from` (just after a backtick or a `}` closing `${`): up
    /// to the closing backtick (a value), or to `${` (pushing a template frame).
    fn template(&mut self, from: usize) -> Option<()> {
        let b = self.b;
        let mut i = from;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 2,
                b'`' => {
                    self.i = i + 1;
                    self.last = Last::Value;
                    return Some(());
                }
                b'$' if b.get(i + 1) == Some(&b'{') => {
                    self.stack.push(Open::Template);
                    self.i = i + 2;
                    self.last = Last::Start;
                    return Some(());
                }
                _ => i += 1,
            }
        }
        None
    }

    /// Whether a `/` at `i` starts a regex literal rather than dividing.
    fn regex_allowed(&self) -> bool {
        match self.last {
            Last::Start | Last::Punct(_) => true,
            Last::Word(..) => CONTINUING_KEYWORDS.contains(&self.last_word()),
            Last::Value | Last::Header => self.last == Last::Header,
        }
    }

    /// A `/` at `i`: a regex literal with its flags, or a division.
    fn slash(&mut self) -> Option<()> {
        if !self.regex_allowed() {
            self.i += 1;
            self.last = Last::Punct(b'/');
            return Some(());
        }
        let b = self.b;
        let mut j = self.i + 1;
        let mut class = false;
        loop {
            match b.get(j)? {
                b'\\' => j += 2,
                b'\n' => return None,
                b'[' => {
                    class = true;
                    j += 1
                }
                b']' => {
                    class = false;
                    j += 1
                }
                b'/' if !class => break,
                _ => j += 1,
            }
        }
        j += 1;
        while j < b.len() && is_ident(b[j]) {
            j += 1;
        }
        self.i = j;
        self.last = Last::Value;
        Some(())
    }

    /// Pushes `open` for the bracket at `i`.
    fn open(&mut self, open: Open, last: Last) {
        self.stack.push(open);
        self.i += 1;
        self.last = last;
    }

    /// A `{` at `i`: a block at statement level, else an object literal or function body.
    fn open_brace(&mut self, top: bool) {
        let last = self.last;
        let block = top
            && (matches!(last, Last::Start | Last::Header)
                || matches!(self.last_word(), "else" | "try" | "finally" | "do")
                || (last == Last::Value && prev_is_close_paren(self.code, self.i)));
        let open = if block { Open::Block } else { Open::Brace };
        self.open(open, Last::Start);
    }

    /// A `)` or `]` at `i`, which must close the innermost bracket.
    fn close(&mut self, close: u8) -> Option<()> {
        self.last = match (close, self.stack.pop()?) {
            (b')', Open::Paren { header: true }) => Last::Header,
            (b')', Open::Paren { header: false }) | (b']', Open::Bracket) => Last::Value,
            _ => return None,
        };
        self.i += 1;
        Some(())
    }

    /// A `}` at `i`: ends a template's `${`, a block or an object literal.
    fn close_brace(&mut self) -> Option<()> {
        match self.stack.pop()? {
            Open::Template => return self.template(self.i + 1),
            Open::Block => {
                if self.stack.is_empty() {
                    self.pending = true;
                }
                self.last = Last::Start;
            }
            Open::Brace => self.last = Last::Value,
            Open::Paren { .. } | Open::Bracket => return None,
        }
        self.i += 1;
        Some(())
    }

    /// An identifier or keyword at `i` (a `return` at the top level is noted).
    fn word(&mut self, top: bool) {
        let start = self.i;
        while self.i < self.b.len() && is_ident(self.b[self.i]) {
            self.i += 1;
        }
        let property = matches!(self.last, Last::Punct(b'.'));
        let word = &self.code[start..self.i];
        if top && word == "return" && !property {
            self.scan.returns = true;
        }
        self.last = if property {
            Last::Value
        } else {
            Last::Word(start, self.i)
        };
    }

    /// A number at `i`.
    fn number(&mut self) {
        while self.i < self.b.len() && (is_ident(self.b[self.i]) || self.b[self.i] == b'.') {
            self.i += 1;
        }
        self.last = Last::Value;
    }
}

fn prev_is_close_paren(code: &str, i: usize) -> bool {
    code[..i].trim_end().ends_with(')')
}

fn word_at(code: &str, i: usize) -> Option<&str> {
    let b = code.as_bytes();
    if !b.get(i).copied().is_some_and(is_ident_start) {
        return None;
    }
    let mut end = i;
    while end < b.len() && is_ident(b[end]) {
        end += 1;
    }
    Some(&code[i..end])
}

/// `body` with its last top-level expression returned, or `None` to leave it as it is.
fn with_return(body: &str) -> Option<String> {
    let scan = scan(body)?;
    if scan.returns {
        return None;
    }
    let start = *scan.starts.last()?;
    if scan.end <= start {
        return None;
    }
    let head = &body[..start];
    // What follows the last token is only semicolons, whitespace and comments: dropped.
    let last = body[start..scan.end].trim_end();
    let first = word_at(last, 0);
    // `async function main() {…}` declared but never called: call it.
    if let Some(name) = declared_function(last)
        && body.matches(&format!("{name}(")).count() == 1
    {
        return Some(format!("{body}\nreturn await {name}();"));
    }
    if first.is_some_and(|w| STATEMENT_KEYWORDS.contains(&w)) {
        return None;
    }
    let opening = last.as_bytes()[0];
    if !(is_ident_start(opening)
        || opening.is_ascii_digit()
        || matches!(opening, b'(' | b'[' | b'"' | b'\'' | b'`' | b'!' | b'-'))
    {
        return None;
    }
    // A function written as the whole expression (`async () => {…}`): run it.
    if is_function_expression(last) {
        return Some(format!("{head}return await ({last}\n)();"));
    }
    Some(format!("{head}return (\n{last}\n);"))
}

/// The name of `async function NAME() {…}` / `function NAME() {…}` (no parameters).
fn declared_function(statement: &str) -> Option<&str> {
    let rest = statement
        .strip_prefix("async")
        .map_or(statement, str::trim_start);
    let rest = rest.strip_prefix("function")?.trim_start();
    let name_end = rest
        .bytes()
        .position(|b| !is_ident(b))
        .unwrap_or(rest.len());
    let name = &rest[..name_end];
    let after = rest[name_end..].trim_start();
    (!name.is_empty() && after.starts_with('(') && after[1..].trim_start().starts_with(')'))
        .then_some(name)
}

/// `async () => …`, `() => …`, `async function () {…}` or `function () {…}`, optionally in one
/// pair of parentheses.
fn is_function_expression(expression: &str) -> bool {
    let mut text = expression.trim();
    if let Some(inner) = text.strip_prefix('(').and_then(|t| t.strip_suffix(')')) {
        // Only when those parentheses enclose the whole expression.
        if scan(inner).is_some() {
            text = inner.trim();
        }
    }
    let rest = text.strip_prefix("async").map_or(text, str::trim_start);
    if let Some(after) = rest.strip_prefix("function") {
        return after.trim_start().starts_with('(')
            && after.trim_start()[1..].trim_start().starts_with(')');
    }
    rest.strip_prefix('(')
        .map(str::trim_start)
        .and_then(|r| r.strip_prefix(')'))
        .is_some_and(|r| r.trim_start().starts_with("=>"))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn normalized(code: &str) -> String {
        normalize_body(code).body
    }

    #[test]
    fn unknown_names_search_for_their_words_and_argument_keys() {
        let query = |name: &str, args: Value| {
            unknown_name_search(name, &args).map(|plan| {
                assert_eq!((plan.op, plan.form), (Op::Search, Form::UnknownName));
                plan.first()
            })
        };
        assert_eq!(
            query("post_message", json!({"channel": "C1", "text": "hi"})),
            Some(json!("post message channel text"))
        );
        assert_eq!(
            query("functions.getWeatherForecast", json!({})),
            Some(json!("get weather forecast"))
        );
        assert_eq!(
            query("star-repository", json!({"repo_name": 1})),
            Some(json!("star repository repo name"))
        );
        assert_eq!(query("__", json!({})), None);
        let long = (0..100)
            .map(|i| format!("w{i}"))
            .collect::<Vec<_>>()
            .join("_");
        let q = query(&long, Value::Null).unwrap();
        assert!(q.as_str().unwrap().len() <= MAX_NAME_QUERY, "{q}");
        let plan = catalog_call("plugin:a:b", &Value::Null);
        assert_eq!(
            plan.cell_body(),
            "return await openclaw.tools.call(\"plugin:a:b\", {});"
        );
    }

    #[test]
    fn names_and_shapes() {
        let plan = |name: &str, args: Value| classify(name, &args, true);
        for name in [
            "openclaw.tools.search",
            "openclaw_tools_search",
            "openclaw-tools-search",
            "functions.openclaw.tools.search",
            "OpenClaw.Tools.Search",
        ] {
            let p = plan(name, json!({"query": "x", "limit": 1})).unwrap();
            assert_eq!((p.op, p.form), (Op::Search, Form::BridgeName), "{name}");
            assert_eq!(p.args, vec![json!({"query": "x", "limit": 1})]);
        }
        let p = plan("search", json!(["x", {"limit": 2}])).unwrap();
        assert_eq!(p.args, vec![json!("x"), json!({"limit": 2})]);
        assert_eq!(
            p.cell_body(),
            r#"return await openclaw.tools.search("x", {"limit":2});"#
        );
        let batch = plan("openclaw.tools.search", json!(["a", "b"])).unwrap();
        assert_eq!(batch.args, vec![json!(["a", "b"])]);
        assert_eq!(
            plan("describe", json!({"id": "a:b:c"})).unwrap().op,
            Op::Describe
        );
        let call = plan("call", json!(["a:b:c", {"k": 1}])).unwrap();
        assert_eq!((call.op, call.args.len()), (Op::Call, 2));
        assert_eq!(
            plan("call", json!({"id": "x", "args": {}})).unwrap().op,
            Op::Call
        );
        // Bare names need the shape, and may be turned off.
        assert!(plan("search", json!({"q": "x"})).is_none());
        assert!(plan("call", json!({"id": "x", "args": 3})).is_none());
        assert!(plan("describe", json!({"id": "x", "extra": 1})).is_none());
        assert!(classify("search", &json!({"query": "x"}), false).is_none());
        // The code tool with search arguments.
        let p = plan("tool_search_code", json!({"query": "x"})).unwrap();
        assert_eq!((p.op, p.form), (Op::Search, Form::CodeToolSearch));
        assert!(plan("tool_search_code", json!({"code": "return 1"})).is_none());
        assert_eq!(
            plan("tool_call", json!({"id": "x"})).unwrap().form,
            Form::ControlName
        );
        assert!(plan("openclaw.tools.run", json!({})).is_none());
        assert!(plan("lookup_release_order", json!({})).is_none());
    }

    #[test]
    fn bodies_that_return_are_never_changed() {
        for code in [
            "return await openclaw.tools.search(\"x\");",
            "const h = await openclaw.tools.search('x');\nreturn h;",
            "if (x) return 1; 2",
            "",
            "// only a comment",
            "const a = 1;",
            "for (const q of qs) { await f(q); }",
            "throw new Error('x')",
        ] {
            let n = normalize_body(code);
            assert!(!n.changed(), "{code:?} → {:?}", n.body);
            assert_eq!(n.body, code);
        }
    }

    #[test]
    fn last_expressions_are_returned() {
        assert_eq!(
            normalized("await openclaw.tools.search(\"x\")"),
            "return (\nawait openclaw.tools.search(\"x\")\n);"
        );
        assert_eq!(
            normalized("const h = await s('a; b'); // c;\nawait call(h[0].id, {a: \"}\"})\n"),
            "const h = await s('a; b'); // c;\nreturn (\nawait call(h[0].id, {a: \"}\"})\n);"
        );
        // Strings, templates, comments and regexes with statement characters inside.
        let code = "const t = `a;${ {b: 1}.b }\n}`; /* ; */ const r = /[;}]/g;\nt.replace(r, \"\")";
        assert_eq!(
            normalized(code),
            "const t = `a;${ {b: 1}.b }\n}`; /* ; */ const r = /[;}]/g;\nreturn (\nt.replace(r, \"\")\n);"
        );
        // Automatic semicolons between lines; a continued expression is one statement.
        assert_eq!(
            normalized("const a = 1\nconst b = 2\na +\n  b"),
            "const a = 1\nconst b = 2\nreturn (\na +\n  b\n);"
        );
        assert_eq!(
            normalized("const hits = await f()\nhits\n  .map(h => h.id)"),
            "const hits = await f()\nreturn (\nhits\n  .map(h => h.id)\n);"
        );
        // A block statement before the expression; a return inside a block is not top level.
        assert_eq!(
            normalized("if (x) { return 1 }\nawait g()"),
            "if (x) { return 1 }\nreturn (\nawait g()\n);"
        );
        // An object literal is part of its statement.
        assert_eq!(
            normalized("const o = {a: 1}\no.a"),
            "const o = {a: 1}\nreturn (\no.a\n);"
        );
    }

    #[test]
    fn fences_and_functions() {
        let n = normalize_body("```js\nreturn 1;\n```");
        assert_eq!(
            (n.body.as_str(), n.fenced, n.returned),
            ("return 1;", true, false)
        );
        let n = normalize_body("```javascript\nawait openclaw.tools.search('x')\n```\n");
        assert!(n.fenced && n.returned);
        assert_eq!(n.body, "return (\nawait openclaw.tools.search('x')\n);");
        assert!(!normalize_body("```js\na\n```\nprose\n```b```").fenced);
        assert_eq!(
            normalized("async () => { return 1 }"),
            "return await (async () => { return 1 }\n)();"
        );
        assert_eq!(
            normalized("async function main() { return 2 }"),
            "async function main() { return 2 }\nreturn await main();"
        );
        // Called already: left alone.
        let code = "async function main() { return 2 }\nmain()";
        assert_eq!(
            normalized(code),
            "async function main() { return 2 }\nreturn (\nmain()\n);"
        );
        // Unterminated input is left alone.
        for code in ["f('x", "f(`x", "f(1", "/* x"] {
            assert_eq!(normalized(code), code);
        }
    }
}
