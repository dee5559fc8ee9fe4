//! `notes`: Markdown notes in notebooks, with tags and pins. Each edit bumps a logical clock so
//! "most recently edited" (the `this` tool) is well defined even though the demo clock is fixed.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::clock::{DEMO_NOW, format_utc};
use super::super::kit::{
    Args, Changed, Kind, Reply, fail, listed, matches_all, next_id, ok, ok_text, tagged,
};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "create_note" => create_note,
        "list_notes" => list_notes,
        "get_note" => get_note,
        "update_note" => update_note,
        "append_to_note" => append_to_note,
        "delete_note" => delete_note,
        "search_notes" => search_notes,
        "tag_note" => tag_note,
        "list_note_tags" => list_note_tags,
        "pin_note" => pin_note,
        "list_notebooks" => list_notebooks,
        "move_note" => move_note,
        "export_note" => export_note,
        "this" => this,
        _ => return None,
    })
}

#[derive(Debug, Clone)]
struct Note {
    id: String,
    title: String,
    body: String,
    notebook: String,
    tags: Vec<String>,
    pinned: bool,
    updated_at: i64,
    /// Logical edit counter: higher = edited later.
    revision: u64,
}

impl Note {
    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "title": self.title,
            "notebook": self.notebook,
            "tags": self.tags,
            "pinned": self.pinned,
            "updated_at": format_utc(self.updated_at),
            "chars": self.body.chars().count(),
        })
    }
}

/// All notes.
#[derive(Debug)]
pub(crate) struct Notes {
    notes: BTreeMap<String, Note>,
    next_note: u64,
    revision: u64,
}

impl Notes {
    pub(crate) fn seeded() -> Notes {
        let mut notes = BTreeMap::new();
        for (i, (id, title, body, notebook, tags, pinned, hours_ago)) in [
            ("note_401", "Search ranking ideas", "- BM25 over name, description and parameters\n- expand intents like \"look up\" to search terms\n- measure NDCG@10 on every dev set", "Work", &["search", "ideas"][..], true, 30),
            ("note_402", "Grocery list", "- eggs\n- coffee beans\n- spinach", "Personal", &["shopping"][..], false, 5),
            ("note_403", "Book recommendations", "The Pragmatic Programmer; Designing Data-Intensive Applications; Piranesi", "Personal", &["books"][..], false, 200),
            ("note_404", "Meeting notes: design review", "Attendees: Dana, Priya.\nDecision: keep a single indexed field.\nFollow-up: benchmark the stemmer.", "Work", &["meetings", "search"][..], false, 2),
        ]
        .into_iter()
        .enumerate()
        {
            notes.insert(id.to_string(), Note {
                id: id.to_string(),
                title: title.to_string(),
                body: body.to_string(),
                notebook: notebook.to_string(),
                tags: tags.iter().map(|t| t.to_string()).collect(),
                pinned,
                updated_at: DEMO_NOW - hours_ago * 3600,
                revision: i as u64,
            });
        }
        // The most recently edited seed note (note_404, two hours ago) gets the highest revision.
        if let Some(n) = notes.get_mut("note_404") {
            n.revision = 10;
        }
        Notes {
            notes,
            next_note: 405,
            revision: 11,
        }
    }

    fn note_mut(&mut self, id: &str) -> Result<&mut Note, ToolError> {
        self.revision += 1;
        let revision = self.revision;
        let note = NOTE.get_mut(&mut self.notes, id)?;
        note.revision = revision;
        note.updated_at = DEMO_NOW;
        Ok(note)
    }

    fn note(&self, id: &str) -> Result<&Note, ToolError> {
        NOTE.get(&self.notes, id)
    }

    fn sorted(&self, keep: impl Fn(&Note) -> bool) -> Vec<&Note> {
        let mut list: Vec<&Note> = self.notes.values().filter(|n| keep(n)).collect();
        list.sort_by(|a, b| b.pinned.cmp(&a.pinned).then(b.revision.cmp(&a.revision)));
        list
    }

    /// The notes whose title, body or tags match every word of `query`, pinned and newest first.
    fn search(&self, query: &str) -> Vec<&Note> {
        self.sorted(|n| {
            matches_all(
                &format!("{} {} {}", n.title, n.body, n.tags.join(" ")),
                query,
            )
        })
    }
}

const NOTE: Kind = Kind::new("note", "find ids with list_notes or search_notes");

fn listing(list: &[&Note]) -> Value {
    listed("notes", list.iter().map(|n| n.to_json()))
}

fn create_note(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let title = args.trimmed("title")?;
    let mut notes = lock(&world.notes);
    let id = next_id("note_", &mut notes.next_note);
    notes.revision += 1;
    let note = Note {
        id: id.clone(),
        title: title.to_string(),
        body: args.str_or("body", "")?.to_string(),
        notebook: args.str_or("notebook", "Personal")?.to_string(),
        tags: args.opt_str_list("tags")?.unwrap_or_default(),
        pinned: false,
        updated_at: DEMO_NOW,
        revision: notes.revision,
    };
    let details = json!({"note": note.to_json()});
    notes.notes.insert(id, note);
    ok(details)
}

fn list_notes(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (notebook, tag) = (args.opt_str("notebook")?, args.opt_str("tag")?);
    let notes = lock(&world.notes);
    let list = notes.sorted(|n| {
        notebook.is_none_or(|b| n.notebook.eq_ignore_ascii_case(b)) && tagged(&n.tags, tag)
    });
    ok(listing(&list))
}

fn get_note(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let notes = lock(&world.notes);
    let n = notes.note(args.str("note_id")?)?;
    ok_text(
        json!({"note": n.to_json(), "body": n.body}),
        format!("# {}\n\n{}", n.title, n.body),
    )
}

fn update_note(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (title, body) = (args.opt_str("title")?, args.opt_str("body")?);
    let mut notes = lock(&world.notes);
    if title.is_none() && body.is_none() {
        // Nothing to change: report the note as it is, without marking it edited.
        let n = notes.note(args.str("note_id")?)?;
        return ok_text(
            json!({"note": n.to_json(), "changed": []}),
            "Nothing changed: pass title or body to update the note.",
        );
    }
    let n = notes.note_mut(args.str("note_id")?)?;
    let mut changed = Changed::default();
    changed.set("title", &mut n.title, title);
    changed.set("body", &mut n.body, body);
    ok(json!({"note": n.to_json(), "changed": changed}))
}

fn append_to_note(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = args.str("text")?;
    let mut notes = lock(&world.notes);
    let n = notes.note_mut(args.str("note_id")?)?;
    if !n.body.is_empty() && !n.body.ends_with('\n') {
        n.body.push('\n');
    }
    n.body.push_str(text);
    ok(json!({"note": n.to_json(), "body": n.body}))
}

fn delete_note(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut notes = lock(&world.notes);
    let note = Kind::new("note", "find ids with list_notes")
        .take(&mut notes.notes, args.str("note_id")?)?;
    ok(json!({"deleted": {"id": note.id, "title": note.title}, "notes_left": notes.notes.len()}))
}

fn search_notes(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    let notes = lock(&world.notes);
    ok(listing(&notes.search(query)))
}

fn tag_note(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let tags = args.str_list("tags")?;
    let mut notes = lock(&world.notes);
    let n = notes.note_mut(args.str("note_id")?)?;
    for tag in tags {
        let tag = tag.trim().trim_start_matches('#').to_lowercase();
        if !tag.is_empty() && !n.tags.contains(&tag) {
            n.tags.push(tag);
        }
    }
    ok(json!({"note": n.to_json()}))
}

fn list_note_tags(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let notes = lock(&world.notes);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for tag in notes.notes.values().flat_map(|n| n.tags.iter()) {
        *counts.entry(tag).or_default() += 1;
    }
    ok(
        json!({"tags": counts.into_iter().map(|(tag, n)| json!({"tag": tag, "notes": n})).collect::<Vec<_>>()}),
    )
}

fn pin_note(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let pinned = args.bool_or("pinned", true)?;
    let mut notes = lock(&world.notes);
    let n = notes.note_mut(args.str("note_id")?)?;
    n.pinned = pinned;
    ok(json!({"note": n.to_json()}))
}

fn list_notebooks(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let notes = lock(&world.notes);
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for n in notes.notes.values() {
        *counts.entry(n.notebook.as_str()).or_default() += 1;
    }
    ok(
        json!({"notebooks": counts.into_iter().map(|(name, n)| json!({"name": name, "notes": n})).collect::<Vec<_>>()}),
    )
}

fn move_note(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let notebook = args.trimmed("notebook")?;
    let mut notes = lock(&world.notes);
    let n = notes.note_mut(args.str("note_id")?)?;
    let from = std::mem::replace(&mut n.notebook, notebook.to_string());
    ok(json!({"note": n.to_json(), "from_notebook": from}))
}

fn export_note(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let format = args.str_or("format", "markdown")?;
    let notes = lock(&world.notes);
    let n = notes.note(args.str("note_id")?)?;
    let document = match format {
        "markdown" => format!(
            "---\ntitle: {}\ntags: [{}]\n---\n\n# {}\n\n{}\n",
            n.title,
            n.tags.join(", "),
            n.title,
            n.body
        ),
        "text" => format!(
            "{}\n{}\n\n{}\n",
            n.title,
            "=".repeat(n.title.chars().count()),
            n.body.replace("- ", "* ")
        ),
        other => {
            return Err(fail(format!(
                "format must be markdown or text, got {other:?}"
            )));
        }
    };
    let filename = format!(
        "{}.{}",
        n.title
            .to_lowercase()
            .replace(|c: char| !c.is_alphanumeric(), "-"),
        if format == "text" { "txt" } else { "md" }
    );
    ok_text(
        json!({"note_id": n.id, "filename": filename, "format": format, "document": document}),
        document.clone(),
    )
}

fn this(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let notes = lock(&world.notes);
    let n = notes
        .notes
        .values()
        .max_by_key(|n| n.revision)
        .ok_or_else(|| fail("there are no notes yet; create one with create_note"))?;
    ok(json!({"note": n.to_json(), "body": n.body}))
}
