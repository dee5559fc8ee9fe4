//! The core coding primitives over an in-memory workspace: `read`, `write`, `edit`,
//! `apply_patch`, `exec` and `process`.
//!
//! The workspace is a map of absolute paths to text plus a set of explicit directories. `exec`
//! is a tiny interpreter, not a shell: the command line is tokenized here (single and double
//! quotes, backslash escapes), split into `&&` chains and `|` pipelines with an optional final
//! `>`/`>>` redirect, and every stage must be one of the built-ins (`ls`, `cat`, `echo`,
//! `grep`, `wc`, `head`, `tail`, `pwd`, `mkdir`, `rm`, `find`). Anything else is refused
//! before any stage runs. No host process, file or environment variable is ever touched.
//! `grep` matches fixed strings (no regular expressions).
//!
//! Background commands (`background: true`) run to completion at once, like a very fast job;
//! their output is kept under a pid for `process`. One long-running process (pid 4100, a test
//! watcher) is seeded so `process kill` has something to stop.
//!
//! Bounds: commands up to 10,000 chars and 16 stages; captured output up to 64 KiB per stream;
//! paths up to 1,024 chars; at most 256 kept processes; files up to 1 MiB each and 16 MiB in
//! total (a stage reads at most 1 MiB of input), so no command can grow memory geometrically.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::{Value, json};

use super::super::clock::{DEMO_NOW, format_utc};
use super::super::kit::{Args, Reply, fail, ok, ok_text};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

const MAX_COMMAND: usize = 10_000;
const MAX_STAGES: usize = 16;
const MAX_OUTPUT: usize = 64 * 1024;
const MAX_PATH: usize = 1024;
const MAX_PROCESSES: usize = 256;
/// Largest workspace file, and largest input a single command stage reads.
const MAX_FILE: usize = 1 << 20;
/// Largest total size of all workspace files.
const MAX_WORKSPACE: usize = 16 << 20;
const BUILTINS: &str = "ls, cat, echo, grep, wc, head, tail, pwd, mkdir, rm, find";

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "read" => read,
        "write" => write,
        "edit" => edit,
        "apply_patch" => apply_patch,
        "exec" => exec,
        "process" => process,
        _ => return None,
    })
}

#[derive(Debug, Clone)]
pub(crate) struct Process {
    pid: u32,
    command: String,
    status: &'static str,
    exit_code: Option<i32>,
    stdout: String,
    stderr: String,
    started_at: String,
}

impl Process {
    fn summary(&self) -> Value {
        json!({
            "pid": self.pid,
            "command": self.command,
            "status": self.status,
            "exit_code": self.exit_code,
            "started_at": self.started_at,
        })
    }
}

/// The in-memory file tree and process table.
#[derive(Debug)]
pub(crate) struct Workspace {
    files: BTreeMap<String, String>,
    dirs: BTreeSet<String>,
    processes: BTreeMap<u32, Process>,
    next_pid: u32,
}

const README: &str = "# Acme Widgets\n\nA small Rust library that lays out dashboard widgets.\n\n## Build\n\n    cargo build\n\n## Test\n\n    cargo test\n\nSee docs/guide.md for the layout rules.\n";
const CARGO_TOML: &str = "[package]\nname = \"widgets\"\nversion = \"0.3.1\"\nedition = \"2021\"\n\n[dependencies]\nserde = \"1\"\n";
const MAIN_RS: &str = "use widgets::{render, Config};\n\nfn main() {\n    let config = Config::default();\n    println!(\"{}\", render(&config));\n}\n";
const LIB_RS: &str = "/// Layout settings.\npub struct Config {\n    pub width: u32,\n    pub columns: u32,\n}\n\nimpl Default for Config {\n    fn default() -> Self {\n        Config { width: 1200, columns: 3 }\n    }\n}\n\n/// Renders a one-line summary of the layout.\npub fn render(config: &Config) -> String {\n    // Note: gutters come later\n    format!(\"{} columns over {}px\", config.columns, config.width)\n}\n";
const GUIDE_MD: &str = "# Layout guide\n\nWidgets snap to a 12-column grid.\nEach widget declares a minimum width.\nGutters are 16px (not implemented yet).\n";
const TODO_TXT: &str = "- add gutter support\n- write tests for render\n- publish 0.4.0\n";

impl Workspace {
    pub(crate) fn seeded() -> Workspace {
        let files = [
            ("/README.md", README),
            ("/Cargo.toml", CARGO_TOML),
            ("/src/main.rs", MAIN_RS),
            ("/src/lib.rs", LIB_RS),
            ("/docs/guide.md", GUIDE_MD),
            ("/notes/todo.txt", TODO_TXT),
        ]
        .into_iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect();
        let mut dirs = BTreeSet::new();
        dirs.insert("/".to_string());
        dirs.insert("/tmp".to_string());
        let mut processes = BTreeMap::new();
        processes.insert(
            4100,
            Process {
                pid: 4100,
                command: "cargo watch -x test".to_string(),
                status: "running",
                exit_code: None,
                stdout: "[Running 'cargo test']\nrunning 4 tests\ntest render_default ... ok\ntest result: ok. 4 passed; 0 failed\n[Finished running. Exit status: 0]\n".to_string(),
                stderr: String::new(),
                started_at: format_utc(DEMO_NOW - 3600),
            },
        );
        Workspace {
            files,
            dirs,
            processes,
            next_pid: 4101,
        }
    }

    fn is_dir(&self, path: &str) -> bool {
        if self.dirs.contains(path) {
            return true;
        }
        let prefix = dir_prefix(path);
        self.files.keys().any(|f| f.starts_with(&prefix))
            || self.dirs.iter().any(|d| d.starts_with(&prefix))
    }

    /// Immediate children of a directory: (name, is_dir, size).
    fn children(&self, dir: &str) -> Vec<(String, bool, usize)> {
        let prefix = dir_prefix(dir);
        let mut out: BTreeMap<String, (bool, usize)> = BTreeMap::new();
        for (path, content) in &self.files {
            if let Some(rest) = path.strip_prefix(&prefix) {
                match rest.split_once('/') {
                    Some((first, _)) => {
                        out.insert(first.to_string(), (true, 0));
                    }
                    None => {
                        out.insert(rest.to_string(), (false, content.len()));
                    }
                }
            }
        }
        for path in &self.dirs {
            if let Some(rest) = path.strip_prefix(&prefix)
                && !rest.is_empty()
            {
                let first = rest.split('/').next().unwrap_or(rest);
                out.insert(first.to_string(), (true, 0));
            }
        }
        out.into_iter().map(|(n, (d, s))| (n, d, s)).collect()
    }

    /// Refuses a store that would make `path` larger than [`MAX_FILE`] or the workspace larger
    /// than [`MAX_WORKSPACE`].
    fn check_store(&self, path: &str, new_len: usize) -> Result<(), String> {
        if new_len > MAX_FILE {
            return Err(format!(
                "{path} would be {new_len} bytes; files are limited to 1 MiB"
            ));
        }
        let total: usize = self.files.values().map(String::len).sum();
        let old = self.files.get(path).map_or(0, String::len);
        if total - old + new_len > MAX_WORKSPACE {
            return Err("the workspace is full (16 MiB); remove files first".to_string());
        }
        Ok(())
    }

    fn add_parents(&mut self, path: &str) {
        let mut current = String::new();
        let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
        for part in parts.iter().take(parts.len().saturating_sub(1)) {
            current.push('/');
            current.push_str(part);
            self.dirs.insert(current.clone());
        }
    }
}

fn dir_prefix(dir: &str) -> String {
    if dir == "/" {
        "/".to_string()
    } else {
        format!("{dir}/")
    }
}

/// Resolves `path` against `cwd` into a normalized absolute path.
fn normalize(cwd: &str, path: &str) -> Result<String, ToolError> {
    if path.is_empty() {
        return Err(fail("empty path"));
    }
    if path.len() > MAX_PATH || path.contains('\0') {
        return Err(fail(format!(
            "path too long or contains NUL (max {MAX_PATH} chars)"
        )));
    }
    let joined = if path.starts_with('/') {
        path.to_string()
    } else {
        format!("{cwd}/{path}")
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            other => parts.push(other),
        }
    }
    Ok(format!("/{}", parts.join("/")))
}

// ---------------------------------------------------------------------------------------------
// read / write / edit

fn read(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = normalize("/", args.str("path")?)?;
    let offset = args.i64_or("offset", 1)?.max(1) as usize;
    let limit = args.i64_or("limit", 400)?.clamp(1, 2000) as usize;
    let ws = lock(&world.workspace);
    let Some(content) = ws.files.get(&path) else {
        return Err(if ws.is_dir(&path) {
            fail(format!(
                "{path} is a directory; list it with exec \"ls {path}\""
            ))
        } else {
            fail(format!(
                "no file at {path}; list files with exec \"find /\""
            ))
        });
    };
    let lines: Vec<&str> = content.lines().collect();
    let start = (offset - 1).min(lines.len());
    let end = (start + limit).min(lines.len());
    let window = lines[start..end].join("\n");
    ok(json!({
        "path": path,
        "content": window,
        "start_line": offset,
        "lines_returned": end - start,
        "total_lines": lines.len(),
        "truncated": end < lines.len(),
    }))
}

fn write(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = normalize("/", args.str("path")?)?;
    let content = args.str("content")?;
    let mut ws = lock(&world.workspace);
    if path == "/" || ws.dirs.contains(&path) {
        return Err(fail(format!("{path} is a directory")));
    }
    ws.check_store(&path, content.len()).map_err(fail)?;
    ws.add_parents(&path);
    let created = ws.files.insert(path.clone(), content.to_string()).is_none();
    ok(json!({"path": path, "bytes_written": content.len(), "created": created}))
}

fn edit(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = normalize("/", args.str("path")?)?;
    let old = args.str("old_text")?;
    let new = args.str("new_text")?;
    let all = args.bool_or("replace_all", false)?;
    if old.is_empty() {
        return Err(fail("old_text must not be empty"));
    }
    let mut ws = lock(&world.workspace);
    let count = ws
        .files
        .get(&path)
        .ok_or_else(|| fail(format!("no file at {path}; create it with write")))?
        .matches(old)
        .count();
    if count == 0 {
        return Err(fail(format!(
            "old_text was not found in {path}; read the file and copy the exact text, whitespace included"
        )));
    }
    if count > 1 && !all {
        return Err(fail(format!(
            "old_text matches {count} times in {path}; add surrounding lines to make it unique or set replace_all"
        )));
    }
    let replaced = if all { count } else { 1 };
    let current = ws.files.get(&path).map_or(0, String::len);
    let new_len = (current + replaced * new.len()).saturating_sub(replaced * old.len());
    ws.check_store(&path, new_len).map_err(fail)?;
    let Some(content) = ws.files.get_mut(&path) else {
        return Err(fail(format!("no file at {path}")));
    };
    *content = if all {
        content.replace(old, new)
    } else {
        content.replacen(old, new, 1)
    };
    ok(json!({"path": path, "replacements": replaced, "bytes": content.len()}))
}

// ---------------------------------------------------------------------------------------------
// apply_patch (unified diff)

struct Hunk {
    old_start: usize,
    old: Vec<String>,
    new: Vec<String>,
}

struct FilePatch {
    old_path: Option<String>,
    new_path: Option<String>,
    hunks: Vec<Hunk>,
}

fn patch_path(raw: &str) -> Result<Option<String>, ToolError> {
    let raw = raw.split('\t').next().unwrap_or(raw).trim();
    if raw == "/dev/null" {
        return Ok(None);
    }
    let stripped = raw
        .strip_prefix("a/")
        .or_else(|| raw.strip_prefix("b/"))
        .unwrap_or(raw);
    normalize("/", stripped).map(Some)
}

/// `@@ -a,b +c,d @@` → (a, b, d); counts default to 1, and are `None` for a bare `@@`.
fn hunk_header(line: &str) -> (usize, Option<(usize, usize)>) {
    let mut old_start = 1;
    let mut counts = None;
    let inner = line
        .trim_start_matches('@')
        .split("@@")
        .next()
        .unwrap_or("")
        .trim();
    let mut old_count = None;
    let mut new_count = None;
    for part in inner.split_whitespace() {
        let (sign, range) = part.split_at(1.min(part.len()));
        let mut nums = range.split(',');
        let start = nums.next().and_then(|n| n.parse::<usize>().ok());
        let count = match nums.next() {
            Some(c) => c.parse::<usize>().ok(),
            None => start.map(|_| 1),
        };
        match sign {
            "-" => {
                old_start = start.unwrap_or(1);
                old_count = count;
            }
            "+" => new_count = count,
            _ => {}
        }
    }
    if let (Some(o), Some(n)) = (old_count, new_count) {
        counts = Some((o, n));
    }
    (old_start, counts)
}

fn parse_patch(text: &str) -> Result<Vec<FilePatch>, ToolError> {
    let lines: Vec<&str> = text.lines().collect();
    let mut patches = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        if let Some(old) = line.strip_prefix("--- ") {
            let Some(new) = lines.get(i + 1).and_then(|l| l.strip_prefix("+++ ")) else {
                return Err(fail(format!(
                    "patch line {}: `--- ` must be followed by a `+++ ` line",
                    i + 1
                )));
            };
            let mut patch = FilePatch {
                old_path: patch_path(old)?,
                new_path: patch_path(new)?,
                hunks: Vec::new(),
            };
            i += 2;
            while i < lines.len() && lines[i].starts_with("@@") {
                let (old_start, counts) = hunk_header(lines[i]);
                i += 1;
                let mut hunk = Hunk {
                    old_start,
                    old: Vec::new(),
                    new: Vec::new(),
                };
                let (mut old_left, mut new_left) = counts.unwrap_or((usize::MAX, usize::MAX));
                while i < lines.len() && (old_left > 0 || new_left > 0) {
                    let body = lines[i];
                    if counts.is_none()
                        && (body.starts_with("@@")
                            || (body.starts_with("--- ")
                                && lines.get(i + 1).is_some_and(|l| l.starts_with("+++ "))))
                    {
                        break;
                    }
                    if body.starts_with('\\') {
                        i += 1;
                        continue;
                    }
                    let (tag, rest) = if body.is_empty() {
                        (' ', "")
                    } else {
                        let tag = body.chars().next().unwrap_or(' ');
                        (tag, &body[tag.len_utf8()..])
                    };
                    match tag {
                        ' ' => {
                            hunk.old.push(rest.to_string());
                            hunk.new.push(rest.to_string());
                            old_left = old_left.saturating_sub(1);
                            new_left = new_left.saturating_sub(1);
                        }
                        '-' => {
                            hunk.old.push(rest.to_string());
                            old_left = old_left.saturating_sub(1);
                        }
                        '+' => {
                            hunk.new.push(rest.to_string());
                            new_left = new_left.saturating_sub(1);
                        }
                        _ => {
                            return Err(fail(format!(
                                "patch line {}: hunk lines start with ' ', '-' or '+'",
                                i + 1
                            )));
                        }
                    }
                    i += 1;
                }
                patch.hunks.push(hunk);
            }
            if patch.hunks.is_empty() {
                return Err(fail("patch has a file header without any @@ hunk"));
            }
            patches.push(patch);
        } else {
            i += 1;
        }
    }
    if patches.is_empty() {
        return Err(fail(
            "no file changes found; expected a unified diff with `--- a/path`, `+++ b/path` and `@@` hunks",
        ));
    }
    Ok(patches)
}

fn find_block(lines: &[String], block: &[String], hint: usize) -> Option<usize> {
    if block.len() > lines.len() {
        return None;
    }
    let candidates: Vec<usize> = (0..=lines.len() - block.len())
        .filter(|&start| lines[start..start + block.len()] == *block)
        .collect();
    candidates
        .iter()
        .copied()
        .min_by_key(|&start| start.abs_diff(hint))
}

fn apply_patch(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let patches = parse_patch(args.str("patch")?)?;
    let mut ws = lock(&world.workspace);
    // Compute every change first: the patch applies completely or not at all.
    let mut changes: Vec<(String, Option<String>, &'static str, usize)> = Vec::new();
    for patch in &patches {
        match (&patch.old_path, &patch.new_path) {
            (None, None) => return Err(fail("a file patch cannot go from /dev/null to /dev/null")),
            (None, Some(path)) => {
                if ws.files.contains_key(path) {
                    return Err(fail(format!(
                        "{path} already exists; patch it instead of creating it"
                    )));
                }
                let lines: Vec<String> = patch.hunks.iter().flat_map(|h| h.new.clone()).collect();
                changes.push((
                    path.clone(),
                    Some(join_lines(&lines, true)),
                    "created",
                    patch.hunks.len(),
                ));
            }
            (Some(path), target) => {
                let content = ws
                    .files
                    .get(path)
                    .ok_or_else(|| fail(format!("patch targets {path}, which does not exist")))?;
                if target.is_none() {
                    changes.push((path.clone(), None, "deleted", patch.hunks.len()));
                    continue;
                }
                let trailing = content.ends_with('\n') || content.is_empty();
                let mut lines: Vec<String> = content.lines().map(str::to_string).collect();
                for (n, hunk) in patch.hunks.iter().enumerate() {
                    let hint = hunk.old_start.saturating_sub(1);
                    let at = if hunk.old.is_empty() {
                        hint.min(lines.len())
                    } else {
                        find_block(&lines, &hunk.old, hint).ok_or_else(|| {
                            fail(format!(
                                "hunk {} does not match {path}: its context and removed lines must equal the current file exactly",
                                n + 1
                            ))
                        })?
                    };
                    lines.splice(at..at + hunk.old.len(), hunk.new.iter().cloned());
                }
                let destination = target.clone().unwrap_or_else(|| path.clone());
                if destination != *path {
                    changes.push((path.clone(), None, "deleted", 0));
                }
                changes.push((
                    destination,
                    Some(join_lines(&lines, trailing)),
                    "modified",
                    patch.hunks.len(),
                ));
            }
        }
    }
    for (path, content, _, _) in &changes {
        if let Some(text) = content {
            ws.check_store(path, text.len()).map_err(fail)?;
        }
    }
    let mut files = Vec::new();
    for (path, content, action, hunks) in changes {
        match content {
            Some(text) => {
                ws.add_parents(&path);
                ws.files.insert(path.clone(), text);
            }
            None => {
                ws.files.remove(&path);
            }
        }
        if hunks > 0 || action == "deleted" {
            files.push(json!({"path": path, "action": action, "hunks": hunks}));
        }
    }
    ok(json!({ "files": files }))
}

fn join_lines(lines: &[String], trailing_newline: bool) -> String {
    let mut text = lines.join("\n");
    if trailing_newline && !lines.is_empty() {
        text.push('\n');
    }
    text
}

// ---------------------------------------------------------------------------------------------
// exec: tokenizer, parser, built-ins

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Word(String),
    Pipe,
    And,
    Redirect { append: bool },
}

fn tokenize(command: &str) -> Result<Vec<Token>, ToolError> {
    let mut tokens = Vec::new();
    let mut chars = command.chars().peekable();
    let mut word = String::new();
    let mut in_word = false;
    while let Some(c) = chars.next() {
        match c {
            ' ' | '\t' | '\n' => {
                if in_word {
                    tokens.push(Token::Word(std::mem::take(&mut word)));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => word.push(ch),
                        None => return Err(fail("unterminated single quote")),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch @ ('"' | '\\' | '$' | '`')) => word.push(ch),
                            Some(ch) => {
                                word.push('\\');
                                word.push(ch);
                            }
                            None => return Err(fail("unterminated double quote")),
                        },
                        Some(ch) => word.push(ch),
                        None => return Err(fail("unterminated double quote")),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(ch) = chars.next() {
                    word.push(ch);
                }
            }
            '|' | '&' | '>' | ';' | '<' | '`' | '$' | '(' | ')' => {
                if in_word {
                    tokens.push(Token::Word(std::mem::take(&mut word)));
                    in_word = false;
                }
                match c {
                    '|' if chars.peek() == Some(&'|') => {
                        return Err(fail("`||` is not supported; use `&&` chains and `|` pipes"));
                    }
                    '|' => tokens.push(Token::Pipe),
                    '&' if chars.peek() == Some(&'&') => {
                        chars.next();
                        tokens.push(Token::And);
                    }
                    '>' => {
                        let append = chars.peek() == Some(&'>');
                        if append {
                            chars.next();
                        }
                        tokens.push(Token::Redirect { append });
                    }
                    other => {
                        return Err(fail(format!(
                            "`{other}` is not supported here: this sandbox understands only words, quotes, `|`, `&&` and `>`/`>>` (no variables, subshells or background `&`; use background: true)"
                        )));
                    }
                }
            }
            other => {
                in_word = true;
                word.push(other);
            }
        }
    }
    if in_word {
        tokens.push(Token::Word(word));
    }
    Ok(tokens)
}

struct Stage {
    argv: Vec<String>,
}

struct Pipeline {
    stages: Vec<Stage>,
    redirect: Option<(String, bool)>,
}

fn parse_command(command: &str) -> Result<Vec<Pipeline>, ToolError> {
    let tokens = tokenize(command)?;
    let mut chain = Vec::new();
    let mut pipeline = Pipeline {
        stages: Vec::new(),
        redirect: None,
    };
    let mut argv: Vec<String> = Vec::new();
    let mut iter = tokens.into_iter().peekable();
    let mut stages = 0;
    while let Some(token) = iter.next() {
        match token {
            Token::Word(w) => {
                if pipeline.redirect.is_some() {
                    return Err(fail("a redirect must come last in its pipeline"));
                }
                argv.push(w);
            }
            Token::Pipe | Token::And => {
                if argv.is_empty() {
                    return Err(fail("empty command before `|` or `&&`"));
                }
                pipeline.stages.push(Stage {
                    argv: std::mem::take(&mut argv),
                });
                stages += 1;
                if token == Token::And {
                    chain.push(std::mem::replace(
                        &mut pipeline,
                        Pipeline {
                            stages: Vec::new(),
                            redirect: None,
                        },
                    ));
                } else if pipeline.redirect.is_some() {
                    return Err(fail("a redirect must come last in its pipeline"));
                }
            }
            Token::Redirect { append } => {
                let Some(Token::Word(target)) = iter.next() else {
                    return Err(fail("`>` must be followed by a file path"));
                };
                pipeline.redirect = Some((target, append));
            }
        }
    }
    if argv.is_empty() {
        return Err(fail("empty command"));
    }
    pipeline.stages.push(Stage { argv });
    stages += 1;
    chain.push(pipeline);
    if stages > MAX_STAGES {
        return Err(fail(format!("too many commands (max {MAX_STAGES})")));
    }
    // Refuse unknown commands before anything runs.
    for stage in chain.iter().flat_map(|p| p.stages.iter()) {
        let name = stage.argv.first().map(String::as_str).unwrap_or("");
        if !BUILTINS.split(", ").any(|b| b == name) {
            return Err(fail(format!(
                "command not found: {name:?}; this sandbox runs only the built-ins {BUILTINS} (no host programs)"
            )));
        }
    }
    Ok(chain)
}

struct Outcome {
    stdout: String,
    stderr: String,
    code: i32,
}

impl Outcome {
    fn ok(stdout: String) -> Outcome {
        Outcome {
            stdout,
            stderr: String::new(),
            code: 0,
        }
    }
}

/// Splits `-abc` style flags from operands; `-n 5`/`-n5`/`-5` handled by the callers.
fn flags_and_operands(
    args: &[String],
    with_value: &[char],
) -> Result<(BTreeMap<char, String>, Vec<String>), String> {
    let mut flags = BTreeMap::new();
    let mut operands = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--" {
            operands.extend(args[i + 1..].iter().cloned());
            break;
        }
        if arg.len() > 1 && arg.starts_with('-') {
            let body = &arg[1..];
            if body.chars().all(|c| c.is_ascii_digit()) {
                flags.insert('n', body.to_string());
                i += 1;
                continue;
            }
            let chars = body.char_indices();
            for (pos, c) in chars {
                if with_value.contains(&c) {
                    let rest = &body[pos + c.len_utf8()..];
                    let value = if !rest.is_empty() {
                        rest.to_string()
                    } else {
                        i += 1;
                        args.get(i)
                            .cloned()
                            .ok_or_else(|| format!("option -{c} needs a value"))?
                    };
                    flags.insert(c, value);
                    break;
                }
                flags.insert(c, String::new());
            }
        } else {
            operands.push(arg.clone());
        }
        i += 1;
    }
    Ok((flags, operands))
}

fn run_stage(ws: &mut Workspace, cwd: &str, argv: &[String], stdin: Option<&str>) -> Outcome {
    let name = argv[0].as_str();
    let rest = &argv[1..];
    let result = match name {
        "pwd" => Ok(Outcome::ok(format!("{cwd}\n"))),
        "echo" => {
            let (newline, words) = match rest.first().map(String::as_str) {
                Some("-n") => (false, &rest[1..]),
                _ => (true, rest),
            };
            let mut out = words.join(" ");
            if newline {
                out.push('\n');
            }
            Ok(Outcome::ok(out))
        }
        "ls" => cmd_ls(ws, cwd, rest),
        "cat" => cmd_cat(ws, cwd, rest, stdin),
        "grep" => cmd_grep(ws, cwd, rest, stdin),
        "wc" => cmd_wc(ws, cwd, rest, stdin),
        "head" | "tail" => cmd_head_tail(ws, cwd, rest, stdin, name == "head"),
        "mkdir" => cmd_mkdir(ws, cwd, rest),
        "rm" => cmd_rm(ws, cwd, rest),
        "find" => cmd_find(ws, cwd, rest),
        _ => Err(format!("{name}: command not found")),
    };
    result.unwrap_or_else(|message| Outcome {
        stdout: String::new(),
        stderr: format!("{name}: {message}\n"),
        code: 1,
    })
}

fn read_inputs(
    ws: &Workspace,
    cwd: &str,
    operands: &[String],
    stdin: Option<&str>,
) -> Result<Vec<(String, String)>, String> {
    if operands.is_empty() || operands == ["-"] {
        return Ok(vec![("-".to_string(), stdin.unwrap_or("").to_string())]);
    }
    let mut total = 0;
    let mut inputs = Vec::with_capacity(operands.len());
    for op in operands {
        let path = normalize(cwd, op).map_err(|e| e.message)?;
        match ws.files.get(&path) {
            Some(content) => {
                total += content.len();
                if total > MAX_FILE {
                    return Err("input larger than 1 MiB".to_string());
                }
                inputs.push((op.clone(), content.clone()));
            }
            None if ws.is_dir(&path) => return Err(format!("{op}: Is a directory")),
            None => return Err(format!("{op}: No such file or directory")),
        }
    }
    Ok(inputs)
}

fn cmd_ls(ws: &Workspace, cwd: &str, args: &[String]) -> Result<Outcome, String> {
    let (flags, operands) = flags_and_operands(args, &[])?;
    let long = flags.contains_key(&'l');
    let targets = if operands.is_empty() {
        vec![cwd.to_string()]
    } else {
        operands
    };
    let mut out = String::new();
    let many = targets.len() > 1;
    for target in &targets {
        let path = normalize(cwd, target).map_err(|e| e.message)?;
        if let Some(content) = ws.files.get(&path) {
            if long {
                out.push_str(&format!("-rw-r--r-- {:>8} {target}\n", content.len()));
            } else {
                out.push_str(&format!("{target}\n"));
            }
            continue;
        }
        if !ws.is_dir(&path) {
            return Err(format!(
                "cannot access '{target}': No such file or directory"
            ));
        }
        if many {
            out.push_str(&format!("{target}:\n"));
        }
        for (name, is_dir, size) in ws.children(&path) {
            match (long, is_dir) {
                (true, true) => out.push_str(&format!("drwxr-xr-x {:>8} {name}/\n", 0)),
                (true, false) => out.push_str(&format!("-rw-r--r-- {size:>8} {name}\n")),
                (false, true) => out.push_str(&format!("{name}/\n")),
                (false, false) => out.push_str(&format!("{name}\n")),
            }
        }
    }
    Ok(Outcome::ok(out))
}

fn cmd_cat(
    ws: &Workspace,
    cwd: &str,
    args: &[String],
    stdin: Option<&str>,
) -> Result<Outcome, String> {
    let (flags, operands) = flags_and_operands(args, &[])?;
    let number = flags.contains_key(&'n');
    let mut out = String::new();
    for (_, content) in read_inputs(ws, cwd, &operands, stdin)? {
        if number {
            for (i, line) in content.lines().enumerate() {
                out.push_str(&format!("{:>6}\t{line}\n", i + 1));
            }
        } else {
            out.push_str(&content);
        }
    }
    Ok(Outcome::ok(out))
}

fn cmd_grep(
    ws: &Workspace,
    cwd: &str,
    args: &[String],
    stdin: Option<&str>,
) -> Result<Outcome, String> {
    let (flags, mut operands) = flags_and_operands(args, &['e'])?;
    let pattern = match flags.get(&'e') {
        Some(p) => p.clone(),
        None if !operands.is_empty() => operands.remove(0),
        None => return Err("usage: grep [-inrvc] PATTERN [FILE...]".to_string()),
    };
    let (ignore_case, invert, count_only, numbers) = (
        flags.contains_key(&'i'),
        flags.contains_key(&'v'),
        flags.contains_key(&'c'),
        flags.contains_key(&'n'),
    );
    let recursive = flags.contains_key(&'r') || flags.contains_key(&'R');
    let mut inputs = Vec::new();
    if recursive {
        let roots = if operands.is_empty() {
            vec![cwd.to_string()]
        } else {
            operands.clone()
        };
        for root in roots {
            let path = normalize(cwd, &root).map_err(|e| e.message)?;
            let prefix = dir_prefix(&path);
            for (file, content) in &ws.files {
                if *file == path || file.starts_with(&prefix) {
                    inputs.push((file.clone(), content.clone()));
                }
            }
        }
    } else {
        inputs = read_inputs(ws, cwd, &operands, stdin)?;
    }
    let label = inputs.len() > 1 || recursive;
    let needle = if ignore_case {
        pattern.to_lowercase()
    } else {
        pattern.clone()
    };
    let mut out = String::new();
    let mut total = 0;
    for (name, content) in &inputs {
        let mut count = 0;
        for (i, line) in content.lines().enumerate() {
            let hay = if ignore_case {
                line.to_lowercase()
            } else {
                line.to_string()
            };
            if hay.contains(&needle) != invert {
                count += 1;
                if !count_only {
                    if label {
                        out.push_str(&format!("{name}:"));
                    }
                    if numbers {
                        out.push_str(&format!("{}:", i + 1));
                    }
                    out.push_str(line);
                    out.push('\n');
                }
            }
        }
        if count_only {
            if label {
                out.push_str(&format!("{name}:"));
            }
            out.push_str(&format!("{count}\n"));
        }
        total += count;
    }
    Ok(Outcome {
        stdout: out,
        stderr: String::new(),
        code: if total > 0 { 0 } else { 1 },
    })
}

fn cmd_wc(
    ws: &Workspace,
    cwd: &str,
    args: &[String],
    stdin: Option<&str>,
) -> Result<Outcome, String> {
    let (flags, operands) = flags_and_operands(args, &[])?;
    let pick: Vec<char> = ['l', 'w', 'c']
        .into_iter()
        .filter(|c| flags.contains_key(c))
        .collect();
    let pick = if pick.is_empty() {
        vec!['l', 'w', 'c']
    } else {
        pick
    };
    let inputs = read_inputs(ws, cwd, &operands, stdin)?;
    let mut out = String::new();
    let mut totals = [0usize; 3];
    for (name, content) in &inputs {
        let counts = [
            content.matches('\n').count(),
            content.split_whitespace().count(),
            content.len(),
        ];
        for k in 0..3 {
            totals[k] += counts[k];
        }
        let fields: Vec<String> = pick
            .iter()
            .map(|c| {
                counts[match c {
                    'l' => 0,
                    'w' => 1,
                    _ => 2,
                }]
                .to_string()
            })
            .collect();
        out.push_str(&fields.join(" "));
        if name != "-" {
            out.push_str(&format!(" {name}"));
        }
        out.push('\n');
    }
    if inputs.len() > 1 {
        let fields: Vec<String> = pick
            .iter()
            .map(|c| {
                totals[match c {
                    'l' => 0,
                    'w' => 1,
                    _ => 2,
                }]
                .to_string()
            })
            .collect();
        out.push_str(&format!("{} total\n", fields.join(" ")));
    }
    Ok(Outcome::ok(out))
}

fn cmd_head_tail(
    ws: &Workspace,
    cwd: &str,
    args: &[String],
    stdin: Option<&str>,
    head: bool,
) -> Result<Outcome, String> {
    let (flags, operands) = flags_and_operands(args, &['n'])?;
    let n: usize = match flags.get(&'n') {
        Some(v) => v
            .trim_start_matches('+')
            .parse()
            .map_err(|_| format!("invalid number of lines: {v:?}"))?,
        None => 10,
    };
    let mut out = String::new();
    for (_, content) in read_inputs(ws, cwd, &operands, stdin)? {
        let lines: Vec<&str> = content.lines().collect();
        let slice = if head {
            &lines[..n.min(lines.len())]
        } else {
            &lines[lines.len().saturating_sub(n)..]
        };
        for line in slice {
            out.push_str(line);
            out.push('\n');
        }
    }
    Ok(Outcome::ok(out))
}

fn cmd_mkdir(ws: &mut Workspace, cwd: &str, args: &[String]) -> Result<Outcome, String> {
    let (flags, operands) = flags_and_operands(args, &[])?;
    if operands.is_empty() {
        return Err("missing operand".to_string());
    }
    for op in operands {
        let path = normalize(cwd, &op).map_err(|e| e.message)?;
        if ws.files.contains_key(&path) {
            return Err(format!("cannot create directory '{op}': File exists"));
        }
        if ws.is_dir(&path) && !flags.contains_key(&'p') {
            return Err(format!("cannot create directory '{op}': File exists"));
        }
        let parent = path
            .rsplit_once('/')
            .map(|(p, _)| if p.is_empty() { "/" } else { p })
            .unwrap_or("/");
        if !flags.contains_key(&'p') && !ws.is_dir(parent) {
            return Err(format!(
                "cannot create directory '{op}': No such file or directory"
            ));
        }
        ws.add_parents(&path);
        ws.dirs.insert(path);
    }
    Ok(Outcome::ok(String::new()))
}

fn cmd_rm(ws: &mut Workspace, cwd: &str, args: &[String]) -> Result<Outcome, String> {
    let (flags, operands) = flags_and_operands(args, &[])?;
    let recursive = flags.contains_key(&'r') || flags.contains_key(&'R');
    let force = flags.contains_key(&'f');
    if operands.is_empty() {
        return Err("missing operand".to_string());
    }
    for op in operands {
        let path = normalize(cwd, &op).map_err(|e| e.message)?;
        if path == "/" {
            return Err("refusing to remove '/'".to_string());
        }
        if ws.files.remove(&path).is_some() {
            continue;
        }
        if ws.is_dir(&path) {
            if !recursive {
                return Err(format!("cannot remove '{op}': Is a directory"));
            }
            let prefix = dir_prefix(&path);
            ws.files.retain(|f, _| !f.starts_with(&prefix));
            ws.dirs.retain(|d| *d != path && !d.starts_with(&prefix));
            continue;
        }
        if !force {
            return Err(format!("cannot remove '{op}': No such file or directory"));
        }
    }
    Ok(Outcome::ok(String::new()))
}

/// `*` and `?` glob over a file name.
fn glob_match(pattern: &[char], name: &[char]) -> bool {
    match (pattern.first(), name.first()) {
        (None, None) => true,
        (Some('*'), _) => {
            glob_match(&pattern[1..], name) || (!name.is_empty() && glob_match(pattern, &name[1..]))
        }
        (Some('?'), Some(_)) => glob_match(&pattern[1..], &name[1..]),
        (Some(p), Some(n)) if p == n => glob_match(&pattern[1..], &name[1..]),
        _ => false,
    }
}

fn cmd_find(ws: &Workspace, cwd: &str, args: &[String]) -> Result<Outcome, String> {
    let mut root = cwd.to_string();
    let mut name_pattern: Option<Vec<char>> = None;
    let mut kind: Option<char> = None;
    let mut i = 0;
    while i < args.len() {
        match args[i].as_str() {
            "-name" => {
                i += 1;
                let p = args.get(i).ok_or("-name needs a pattern")?;
                if p.len() > 256 {
                    return Err("pattern too long".to_string());
                }
                name_pattern = Some(p.chars().collect());
            }
            "-type" => {
                i += 1;
                kind = match args.get(i).map(String::as_str) {
                    Some("f") => Some('f'),
                    Some("d") => Some('d'),
                    _ => return Err("-type takes f or d".to_string()),
                };
            }
            other if !other.starts_with('-') => {
                root = normalize(cwd, other).map_err(|e| e.message)?
            }
            other => return Err(format!("unknown predicate {other}")),
        }
        i += 1;
    }
    if !ws.is_dir(&root) && !ws.files.contains_key(&root) {
        return Err(format!("'{root}': No such file or directory"));
    }
    let prefix = dir_prefix(&root);
    let mut entries: BTreeMap<String, char> = BTreeMap::new();
    if ws.is_dir(&root) {
        entries.insert(root.clone(), 'd');
    }
    for path in ws
        .files
        .keys()
        .filter(|f| **f == root || f.starts_with(&prefix))
    {
        entries.insert(path.clone(), 'f');
        // Every directory between root and the file.
        let mut dir = path.as_str();
        while let Some((parent, _)) = dir.rsplit_once('/') {
            if parent.len() <= root.len() || parent.is_empty() {
                break;
            }
            entries.insert(parent.to_string(), 'd');
            dir = parent;
        }
    }
    for dir in ws.dirs.iter().filter(|d| d.starts_with(&prefix)) {
        entries.insert(dir.clone(), 'd');
    }
    let mut out = String::new();
    for (path, k) in entries {
        if kind.is_some_and(|want| want != k) {
            continue;
        }
        if let Some(pattern) = &name_pattern {
            let base: Vec<char> = path.rsplit('/').next().unwrap_or("").chars().collect();
            if !glob_match(pattern, &base) {
                continue;
            }
        }
        out.push_str(&path);
        out.push('\n');
    }
    Ok(Outcome::ok(out))
}

fn cap(mut text: String) -> String {
    if text.len() > MAX_OUTPUT {
        let mut cut = MAX_OUTPUT;
        while !text.is_char_boundary(cut) {
            cut -= 1;
        }
        text.truncate(cut);
        text.push_str("\n[output truncated]\n");
    }
    text
}

fn run_chain(ws: &mut Workspace, cwd: &str, chain: &[Pipeline]) -> Outcome {
    let mut stdout = String::new();
    let mut stderr = String::new();
    let mut code = 0;
    for pipeline in chain {
        let mut input: Option<String> = None;
        let mut last = Outcome::ok(String::new());
        for stage in &pipeline.stages {
            last = run_stage(ws, cwd, &stage.argv, input.as_deref());
            stderr.push_str(&last.stderr);
            input = Some(std::mem::take(&mut last.stdout));
        }
        let out = input.unwrap_or_default();
        code = last.code;
        match &pipeline.redirect {
            Some((target, append)) => match normalize(cwd, target) {
                Ok(path) if !ws.is_dir(&path) => {
                    let base = if *append {
                        ws.files.get(&path).map_or(0, String::len)
                    } else {
                        0
                    };
                    match ws.check_store(&path, base + out.len()) {
                        Ok(()) => {
                            ws.add_parents(&path);
                            let entry = ws.files.entry(path).or_default();
                            if !append {
                                entry.clear();
                            }
                            entry.push_str(&out);
                        }
                        Err(message) => {
                            stderr.push_str(&format!("{target}: {message}\n"));
                            code = 1;
                        }
                    }
                }
                Ok(_) => {
                    stderr.push_str(&format!("{target}: Is a directory\n"));
                    code = 1;
                }
                Err(e) => {
                    stderr.push_str(&format!("{target}: {}\n", e.message));
                    code = 1;
                }
            },
            None => stdout.push_str(&out),
        }
        if code != 0 {
            break;
        }
    }
    Outcome {
        stdout: cap(stdout),
        stderr: cap(stderr),
        code,
    }
}

fn exec(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let command = args.str("command")?;
    if command.len() > MAX_COMMAND {
        return Err(fail(format!("command too long (max {MAX_COMMAND} chars)")));
    }
    let background = args.bool_or("background", false)?;
    let chain = parse_command(command)?;
    let mut ws = lock(&world.workspace);
    let cwd = normalize("/", args.str_or("cwd", "/")?)?;
    if !ws.is_dir(&cwd) {
        return Err(fail(format!("working directory {cwd} does not exist")));
    }
    let outcome = run_chain(&mut ws, &cwd, &chain);
    if background {
        if ws.processes.len() >= MAX_PROCESSES {
            let oldest = ws
                .processes
                .iter()
                .find(|(_, p)| p.status != "running")
                .map(|(pid, _)| *pid);
            match oldest {
                Some(pid) => {
                    ws.processes.remove(&pid);
                }
                None => {
                    return Err(fail(
                        "too many background processes; kill some with process",
                    ));
                }
            }
        }
        let pid = ws.next_pid;
        ws.next_pid += 1;
        ws.processes.insert(
            pid,
            Process {
                pid,
                command: command.to_string(),
                status: "exited",
                exit_code: Some(outcome.code),
                stdout: outcome.stdout,
                stderr: outcome.stderr,
                started_at: format_utc(DEMO_NOW),
            },
        );
        return ok_text(
            json!({"command": command, "exit_code": 0, "stdout": "", "stderr": "", "pid": pid}),
            format!(
                "started background process {pid}; read its output with process {{action: \"output\", pid: {pid}}}"
            ),
        );
    }
    let text = format!("{}{}", outcome.stdout, outcome.stderr);
    ok_text(
        json!({
            "command": command,
            "exit_code": outcome.code,
            "stdout": outcome.stdout,
            "stderr": outcome.stderr,
            "pid": null,
        }),
        text,
    )
}

fn process(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let action = args.str_or("action", "list")?;
    let mut ws = lock(&world.workspace);
    if action == "list" {
        let list: Vec<Value> = ws.processes.values().map(Process::summary).collect();
        let running = ws
            .processes
            .values()
            .filter(|p| p.status == "running")
            .count();
        return ok(json!({"processes": list, "running": running}));
    }
    let pid = args.opt_i64("pid")?.ok_or_else(|| {
        fail(format!(
            "action {action:?} needs a pid; list processes with action \"list\""
        ))
    })?;
    let pid = u32::try_from(pid).map_err(|_| fail(format!("invalid pid {pid}")))?;
    let process = ws.processes.get_mut(&pid).ok_or_else(|| {
        fail(format!(
            "no process {pid}; list processes with action \"list\""
        ))
    })?;
    match action {
        "status" => ok(json!({"process": process.summary()})),
        "output" => ok(
            json!({"pid": pid, "status": process.status, "stdout": process.stdout, "stderr": process.stderr}),
        ),
        "kill" => {
            if process.status != "running" {
                return Err(fail(format!("process {pid} already {}", process.status)));
            }
            process.status = "killed";
            process.exit_code = Some(137);
            ok(json!({"process": process.summary(), "signal": "SIGKILL"}))
        }
        other => Err(fail(format!(
            "unknown action {other:?}; use list, status, output or kill"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(command: &str) -> Outcome {
        let mut ws = Workspace::seeded();
        let chain = match parse_command(command) {
            Ok(chain) => chain,
            Err(e) => {
                return Outcome {
                    stdout: String::new(),
                    stderr: e.message,
                    code: -1,
                };
            }
        };
        run_chain(&mut ws, "/", &chain)
    }

    #[test]
    fn pipelines_and_builtins() {
        assert_eq!(run("cat /README.md | head -n 1").stdout, "# Acme Widgets\n");
        assert_eq!(run("grep -c Note /src/lib.rs").stdout, "1\n");
        assert_eq!(run("echo 'a b'  \"c\" | wc -w").stdout, "3\n");
        assert_eq!(run("ls /src").stdout, "lib.rs\nmain.rs\n");
        assert_eq!(
            run("find / -name '*.rs'").stdout,
            "/src/lib.rs\n/src/main.rs\n"
        );
        assert_eq!(run("grep nothing /README.md").code, 1);
        assert_eq!(run("cat /missing").code, 1);
        assert_eq!(
            run("tail -2 /notes/todo.txt").stdout,
            "- write tests for render\n- publish 0.4.0\n"
        );
    }

    #[test]
    fn unknown_commands_and_shell_syntax_are_refused() {
        assert_eq!(run("curl https://example.com").code, -1);
        assert_eq!(run("ls | sh").code, -1);
        assert_eq!(run("echo $HOME").code, -1);
        assert_eq!(run("echo `id`").code, -1);
    }

    #[test]
    fn commands_cannot_grow_memory_without_bound() {
        let mut ws = Workspace::seeded();
        let big = "x".repeat(600 * 1024);
        ws.files.insert("/big".to_string(), big);
        let chain = parse_command("cat /big /big > /bigger").unwrap_or_default();
        let out = run_chain(&mut ws, "/", &chain);
        assert_eq!(out.code, 1);
        // Like a shell, the redirect target is created even though `cat` failed.
        assert_eq!(ws.files.get("/bigger").map(String::len), Some(0));
        assert!(ws.check_store("/a", 2 << 20).is_err());
    }

    #[test]
    fn patch_applies_hunks() {
        let patches =
            parse_patch("--- a/x\n+++ b/x\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n").unwrap_or_default();
        assert_eq!(patches.len(), 1);
        assert_eq!(patches[0].hunks[0].old, vec!["a", "b"]);
        assert_eq!(patches[0].hunks[0].new, vec!["a", "c"]);
    }
}
