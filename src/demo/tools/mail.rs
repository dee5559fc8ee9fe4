//! `mail`: a mailbox with folders (inbox, sent, archive, trash), threads, labels, drafts,
//! filters and an out-of-office responder. Sending only moves a copy into `sent`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::clock::{DEMO_NOW, format_utc};
use super::super::kit::{
    Args, Kind, Reply, fail, listed_first, matches_all, next_id, not_found, ok, ok_text,
};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "send_email" => send_email,
        "draft_email" => draft_email,
        "list_drafts" => list_drafts,
        "send_draft" => send_draft,
        "delete_draft" => delete_draft,
        "list_messages" => list_messages,
        "get_message" => get_message,
        "search_messages" => search_messages,
        "reply_to_message" => reply_to_message,
        "forward_message" => forward_message,
        "mark_as_read" => mark_as_read,
        "mark_as_unread" => mark_as_unread,
        "archive_message" => archive_message,
        "move_message" => move_message,
        "delete_message" => delete_message,
        "add_label" => add_label,
        "list_labels" => list_labels,
        "get_thread" => get_thread,
        "list_attachments" => list_attachments,
        "count_unread" => count_unread,
        "create_filter" => create_filter,
        "list_filters" => list_filters,
        "set_vacation_responder" => set_vacation_responder,
        "empty_trash" => empty_trash,
        _ => return None,
    })
}

const ME: &str = "alex@acme.example";
const FOLDERS: [&str; 4] = ["inbox", "sent", "archive", "trash"];

#[derive(Debug, Clone)]
struct Message {
    id: String,
    thread_id: String,
    folder: String,
    sender: String,
    to: Vec<String>,
    cc: Vec<String>,
    subject: String,
    body: String,
    date: i64,
    unread: bool,
    labels: Vec<String>,
    attachments: Vec<(String, u64)>,
}

impl Message {
    fn to_json(&self) -> Value {
        let snippet: String = self.body.chars().take(80).collect();
        json!({
            "id": self.id,
            "thread_id": self.thread_id,
            "folder": self.folder,
            "sender": self.sender,
            "to": self.to,
            "subject": self.subject,
            "snippet": snippet,
            "date": format_utc(self.date),
            "unread": self.unread,
            "labels": self.labels,
            "attachments": self.attachments.iter().map(|(n, _)| n.clone()).collect::<Vec<_>>(),
        })
    }
}

#[derive(Debug, Clone)]
struct Draft {
    id: String,
    to: Vec<String>,
    cc: Vec<String>,
    subject: String,
    body: String,
    thread_id: Option<String>,
    created_at: i64,
}

impl Draft {
    fn summary(&self) -> Value {
        json!({"draft_id": self.id, "to": self.to, "subject": self.subject, "created_at": format_utc(self.created_at)})
    }
}

#[derive(Debug, Clone)]
struct Filter {
    id: String,
    from: Option<String>,
    subject_contains: Option<String>,
    label: String,
    skip_inbox: bool,
}

/// The mailbox.
#[derive(Debug)]
pub(crate) struct Mailbox {
    messages: BTreeMap<String, Message>,
    drafts: BTreeMap<String, Draft>,
    filters: Vec<Filter>,
    vacation: Option<(String, Option<String>)>,
    next_message: u64,
    next_draft: u64,
    next_thread: u64,
    next_filter: u64,
}

/// A seeded message: id, thread, folder, sender, recipients, subject, body, date, unread,
/// labels and attachments (name, size).
type SeedMessage = (
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    &'static str,
    &'static str,
    i64,
    bool,
    &'static [&'static str],
    &'static [(&'static str, u64)],
);

impl Mailbox {
    pub(crate) fn seeded() -> Mailbox {
        let hours = |h: i64| DEMO_NOW - h * 3600;
        let seed: [SeedMessage; 7] = [
            (
                "msg_2001",
                "thr_501",
                "inbox",
                "priya@northwind.example",
                &[ME],
                "Invoice #4471 for February",
                "Hi Alex, please find attached invoice #4471 for February consulting (EUR 3,200). Payment is due by March 15. Thanks, Priya",
                hours(2),
                true,
                &["finance"],
                &[("invoice-4471.pdf", 184_320)],
            ),
            (
                "msg_2002",
                "thr_502",
                "inbox",
                "dana@acme.example",
                &[ME],
                "Re: Search ranking design doc",
                "Looks good overall. Two comments: can we measure NDCG on the toolbench set, and should stop words be configurable?",
                hours(5),
                false,
                &["team"],
                &[],
            ),
            (
                "msg_2003",
                "thr_503",
                "inbox",
                "noreply@flights.example",
                &[ME],
                "Your flight to Lisbon is confirmed",
                "Booking ABC123: TP 1351 from London Heathrow to Lisbon on March 18, 2026 at 07:40. Seat 14C.",
                hours(20),
                true,
                &["travel"],
                &[("boarding-pass.pdf", 96_256)],
            ),
            (
                "msg_2004",
                "thr_504",
                "archive",
                "sam@friends.example",
                &[ME],
                "Dinner Friday?",
                "Are we still on for Friday at 7? I booked a table at Casa Lisboa.",
                hours(70),
                false,
                &["personal"],
                &[],
            ),
            (
                "msg_2005",
                "thr_502",
                "sent",
                ME,
                &["dana@acme.example"],
                "Search ranking design doc",
                "Hi Dana, here is the draft design doc for search ranking. Feedback welcome before Friday.",
                hours(26),
                false,
                &[],
                &[("ranking-design.md", 12_800)],
            ),
            (
                "msg_2006",
                "thr_505",
                "inbox",
                "lee@acme.example",
                &[ME, "dana@acme.example"],
                "Offsite agenda",
                "Draft agenda for the Lisbon offsite: day 1 strategy, day 2 hack day. Comments by Wednesday please.",
                hours(1),
                true,
                &["team"],
                &[("offsite-agenda.docx", 40_960)],
            ),
            (
                "msg_2007",
                "thr_506",
                "trash",
                "newsletter@shop.example",
                &[ME],
                "March deals inside",
                "Spring sale: 20% off everything this week only.",
                hours(48),
                false,
                &[],
                &[],
            ),
        ];
        let messages = seed
            .into_iter()
            .map(
                |(
                    id,
                    thread,
                    folder,
                    sender,
                    to,
                    subject,
                    body,
                    date,
                    unread,
                    labels,
                    attachments,
                )| {
                    (
                        id.to_string(),
                        Message {
                            id: id.to_string(),
                            thread_id: thread.to_string(),
                            folder: folder.to_string(),
                            sender: sender.to_string(),
                            to: to.iter().map(|s| s.to_string()).collect(),
                            cc: Vec::new(),
                            subject: subject.to_string(),
                            body: body.to_string(),
                            date,
                            unread,
                            labels: labels.iter().map(|s| s.to_string()).collect(),
                            attachments: attachments
                                .iter()
                                .map(|(n, s)| (n.to_string(), *s))
                                .collect(),
                        },
                    )
                },
            )
            .collect();
        let mut drafts = BTreeMap::new();
        drafts.insert(
            "drf_3001".to_string(),
            Draft {
                id: "drf_3001".to_string(),
                to: vec!["lee@acme.example".to_string()],
                cc: Vec::new(),
                subject: "Re: Offsite agenda".to_string(),
                body: "Looks great. Could we add a session on hiring?".to_string(),
                thread_id: Some("thr_505".to_string()),
                created_at: DEMO_NOW - 1800,
            },
        );
        Mailbox {
            messages,
            drafts,
            filters: vec![Filter {
                id: "flt_1".to_string(),
                from: Some("newsletter@shop.example".to_string()),
                subject_contains: None,
                label: "newsletters".to_string(),
                skip_inbox: true,
            }],
            vacation: None,
            next_message: 2008,
            next_draft: 3002,
            next_thread: 507,
            next_filter: 2,
        }
    }

    fn message(&self, id: &str) -> Result<&Message, ToolError> {
        MESSAGE.get(&self.messages, id)
    }

    fn message_mut(&mut self, id: &str) -> Result<&mut Message, ToolError> {
        MESSAGE.get_mut(&mut self.messages, id)
    }

    fn deliver(
        &mut self,
        to: Vec<String>,
        cc: Vec<String>,
        subject: String,
        body: String,
        thread: Option<String>,
    ) -> Message {
        let id = next_id("msg_", &mut self.next_message);
        let thread_id = thread.unwrap_or_else(|| next_id("thr_", &mut self.next_thread));
        let message = Message {
            id: id.clone(),
            thread_id,
            folder: "sent".to_string(),
            sender: ME.to_string(),
            to,
            cc,
            subject,
            body,
            date: DEMO_NOW,
            unread: false,
            labels: Vec::new(),
            attachments: Vec::new(),
        };
        self.messages.insert(id, message.clone());
        message
    }
}

const MESSAGE: Kind = Kind::new("message", "find ids with list_messages or search_messages");
const DRAFT: Kind = Kind::new("draft", "list drafts with list_drafts");

fn check_recipients(to: &[String]) -> Result<(), ToolError> {
    if to.is_empty() {
        return Err(fail("at least one recipient is required"));
    }
    match to.iter().find(|a| !a.contains('@')) {
        Some(bad) => Err(fail(format!("{bad:?} is not an email address"))),
        None => Ok(()),
    }
}

fn folder_arg(value: &str) -> Result<&'static str, ToolError> {
    FOLDERS.into_iter().find(|f| *f == value).ok_or_else(|| {
        fail(format!(
            "unknown folder {value:?}; use inbox, sent, archive or trash"
        ))
    })
}

fn send_email(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let to = args.str_list("to")?;
    check_recipients(&to)?;
    let cc = args.opt_str_list("cc")?.unwrap_or_default();
    let mut mail = lock(&world.mail);
    let message = mail.deliver(
        to,
        cc,
        args.str("subject")?.to_string(),
        args.str("body")?.to_string(),
        None,
    );
    let recipients = message.to.len() + message.cc.len();
    ok_text(
        json!({"message_id": message.id, "thread_id": message.thread_id, "sent_at": format_utc(message.date), "recipients": recipients}),
        format!("Sent \"{}\" to {}", message.subject, message.to.join(", ")),
    )
}

fn draft_email(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let to = args.str_list("to")?;
    check_recipients(&to)?;
    let mut mail = lock(&world.mail);
    let id = next_id("drf_", &mut mail.next_draft);
    let draft = Draft {
        id: id.clone(),
        to,
        cc: args.opt_str_list("cc")?.unwrap_or_default(),
        subject: args.str("subject")?.to_string(),
        body: args.str("body")?.to_string(),
        thread_id: None,
        created_at: DEMO_NOW,
    };
    let summary = draft.summary();
    mail.drafts.insert(id.clone(), draft);
    ok(json!({
        "draft_id": id,
        "to": summary["to"],
        "subject": summary["subject"],
        "created_at": summary["created_at"],
        "drafts_total": mail.drafts.len(),
    }))
}

fn list_drafts(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let mail = lock(&world.mail);
    let mut drafts: Vec<&Draft> = mail.drafts.values().collect();
    drafts.sort_by(|a, b| b.created_at.cmp(&a.created_at).then(b.id.cmp(&a.id)));
    ok(json!({"drafts": drafts.iter().map(|d| d.summary()).collect::<Vec<_>>()}))
}

fn send_draft(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.str("draft_id")?;
    let mut mail = lock(&world.mail);
    let draft = take_draft(&mut mail, id)?;
    let message = mail.deliver(
        draft.to,
        draft.cc,
        draft.subject,
        draft.body,
        draft.thread_id,
    );
    ok(json!({"sent": message.to_json(), "drafts_left": mail.drafts.len()}))
}

fn delete_draft(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.str("draft_id")?;
    let mut mail = lock(&world.mail);
    let draft = take_draft(&mut mail, id)?;
    ok(json!({"discarded": draft.summary(), "drafts_left": mail.drafts.len()}))
}

/// The first `limit` of `list`, newest first, as a listing of messages.
fn newest_first(mut list: Vec<&Message>, limit: usize) -> Value {
    list.sort_by(|a, b| b.date.cmp(&a.date).then(b.id.cmp(&a.id)));
    listed_first("messages", limit, list.iter().map(|m| m.to_json()))
}

fn list_messages(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let folder = folder_arg(args.str_or("folder", "inbox")?)?;
    let unread_only = args.bool_or("unread_only", false)?;
    let limit = args.i64_or("limit", 20)?.clamp(1, 100) as usize;
    let mail = lock(&world.mail);
    let list = mail
        .messages
        .values()
        .filter(|m| m.folder == folder && (!unread_only || m.unread));
    ok(newest_first(list.collect(), limit))
}

fn get_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mail = lock(&world.mail);
    let m = mail.message(args.str("message_id")?)?;
    ok_text(
        json!({"message": m.to_json(), "body": m.body}),
        format!("From: {}\nSubject: {}\n\n{}", m.sender, m.subject, m.body),
    )
}

fn search_messages(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    let folder = args.opt_str("folder")?.map(folder_arg).transpose()?;
    let limit = args.i64_or("limit", 10)?.clamp(1, 50) as usize;
    let mail = lock(&world.mail);
    let list = mail
        .messages
        .values()
        .filter(|m| folder.is_none_or(|f| m.folder == f))
        .filter(|m| matches_all(&format!("{} {} {}", m.sender, m.subject, m.body), query));
    ok(newest_first(list.collect(), limit))
}

fn reply_to_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let body = args.str("body")?;
    let reply_all = args.bool_or("reply_all", false)?;
    let mut mail = lock(&world.mail);
    let original = mail.message(args.str("message_id")?)?.clone();
    let mut to = vec![if original.sender == ME {
        original.to.first().cloned().unwrap_or_default()
    } else {
        original.sender.clone()
    }];
    if reply_all {
        to.extend(
            original
                .to
                .iter()
                .filter(|a| *a != ME && !to.contains(a))
                .cloned()
                .collect::<Vec<_>>(),
        );
    }
    let subject = if original.subject.starts_with("Re: ") {
        original.subject.clone()
    } else {
        format!("Re: {}", original.subject)
    };
    let quoted: String = original.body.lines().map(|l| format!("> {l}\n")).collect();
    let id = next_id("drf_", &mut mail.next_draft);
    let draft = Draft {
        id: id.clone(),
        to,
        cc: Vec::new(),
        subject,
        body: format!(
            "{body}\n\nOn {}, {} wrote:\n{quoted}",
            format_utc(original.date),
            original.sender
        ),
        thread_id: Some(original.thread_id.clone()),
        created_at: DEMO_NOW,
    };
    let summary = draft.summary();
    mail.drafts.insert(id, draft);
    ok(
        json!({"draft": summary, "in_reply_to": original.id, "thread_id": original.thread_id, "next_step": "send it with send_draft"}),
    )
}

fn forward_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let to = args.str_list("to")?;
    check_recipients(&to)?;
    let note = args.opt_str("note")?.unwrap_or("");
    let mut mail = lock(&world.mail);
    let original = mail.message(args.str("message_id")?)?.clone();
    let note = if note.is_empty() {
        String::new()
    } else {
        format!("{note}\n\n")
    };
    let body = format!(
        "{note}---------- Forwarded message ----------\nFrom: {}\nSubject: {}\n\n{}",
        original.sender, original.subject, original.body
    );
    let mut message = mail.deliver(
        to,
        Vec::new(),
        format!("Fwd: {}", original.subject),
        body,
        None,
    );
    message.attachments = original.attachments.clone();
    mail.messages.insert(message.id.clone(), message.clone());
    ok(json!({"forwarded": message.to_json(), "original": original.id}))
}

fn set_unread(world: &DemoWorld, args: &Args<'_>, unread: bool) -> Reply {
    let mut mail = lock(&world.mail);
    let m = mail.message_mut(args.str("message_id")?)?;
    let was = m.unread;
    m.unread = unread;
    let message = m.to_json();
    let unread_in_inbox = mail
        .messages
        .values()
        .filter(|m| m.folder == "inbox" && m.unread)
        .count();
    ok(json!({"message": message, "changed": was != unread, "inbox_unread": unread_in_inbox}))
}

fn mark_as_read(world: &DemoWorld, args: &Args<'_>) -> Reply {
    set_unread(world, args, false)
}

fn mark_as_unread(world: &DemoWorld, args: &Args<'_>) -> Reply {
    set_unread(world, args, true)
}

fn move_to(world: &DemoWorld, id: &str, folder: &'static str) -> Reply {
    let mut mail = lock(&world.mail);
    let m = mail.message_mut(id)?;
    if m.folder == folder {
        return Err(fail(format!("{id} is already in {folder}")));
    }
    let from = std::mem::replace(&mut m.folder, folder.to_string());
    ok(json!({"message": m.to_json(), "from_folder": from}))
}

fn archive_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    move_to(world, args.str("message_id")?, "archive")
}

fn move_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    move_to(
        world,
        args.str("message_id")?,
        folder_arg(args.str("folder")?)?,
    )
}

fn delete_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    move_to(world, args.str("message_id")?, "trash")
}

fn add_label(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let label = args.str("label")?.trim().to_lowercase();
    if label.is_empty() {
        return Err(fail("label must not be empty"));
    }
    let mut mail = lock(&world.mail);
    let m = mail.message_mut(args.str("message_id")?)?;
    if !m.labels.contains(&label) {
        m.labels.push(label);
        m.labels.sort();
    }
    ok(json!({"message": m.to_json()}))
}

fn list_labels(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let mail = lock(&world.mail);
    let mut counts: BTreeMap<String, usize> = BTreeMap::new();
    for label in mail.filters.iter().map(|f| f.label.clone()) {
        counts.entry(label).or_default();
    }
    for m in mail.messages.values() {
        for label in &m.labels {
            *counts.entry(label.clone()).or_default() += 1;
        }
    }
    ok(
        json!({"labels": counts.into_iter().map(|(name, messages)| json!({"name": name, "messages": messages})).collect::<Vec<_>>()}),
    )
}

fn get_thread(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let thread = args.str("thread_id")?;
    let mail = lock(&world.mail);
    let mut messages: Vec<&Message> = mail
        .messages
        .values()
        .filter(|m| m.thread_id == thread)
        .collect();
    if messages.is_empty() {
        return Err(not_found(
            "thread",
            thread,
            "thread ids appear on every message (list_messages)",
        ));
    }
    messages.sort_by_key(|m| m.date);
    ok(
        json!({"thread_id": thread, "messages": messages.iter().map(|m| m.to_json()).collect::<Vec<_>>()}),
    )
}

fn list_attachments(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mail = lock(&world.mail);
    let m = mail.message(args.str("message_id")?)?;
    let attachments: Vec<Value> = m
        .attachments
        .iter()
        .map(|(name, size)| {
            let kind = match name.rsplit('.').next() {
                Some("pdf") => "application/pdf",
                Some("docx") => {
                    "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
                }
                Some("md") => "text/markdown",
                _ => "application/octet-stream",
            };
            json!({"name": name, "size_bytes": size, "content_type": kind})
        })
        .collect();
    ok(json!({"message_id": m.id, "subject": m.subject, "attachments": attachments}))
}

fn count_unread(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let only = args.opt_str("folder")?.map(folder_arg).transpose()?;
    let mail = lock(&world.mail);
    let by_folder: Vec<Value> = FOLDERS
        .iter()
        .filter(|f| only.is_none_or(|o| o == **f))
        .map(|f| json!({"folder": f, "unread": mail.messages.values().filter(|m| m.folder == *f && m.unread).count()}))
        .collect();
    let unread: u64 = by_folder.iter().filter_map(|v| v["unread"].as_u64()).sum();
    ok(json!({"unread": unread, "by_folder": by_folder}))
}

fn create_filter(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let from = args.opt_str("from")?.map(str::to_lowercase);
    let subject = args.opt_str("subject_contains")?.map(str::to_string);
    if from.is_none() && subject.is_none() {
        return Err(fail(
            "a filter needs `from` or `subject_contains` to match on",
        ));
    }
    let label = args.str("label")?.trim().to_lowercase();
    let skip_inbox = args.bool_or("skip_inbox", false)?;
    let mut mail = lock(&world.mail);
    let id = next_id("flt_", &mut mail.next_filter);
    // Apply the new rule to mail already received, like most clients offer.
    let mut matched = 0;
    for m in mail.messages.values_mut() {
        let hit_from = from
            .as_deref()
            .is_none_or(|f| m.sender.to_lowercase().contains(f));
        let hit_subject = subject
            .as_deref()
            .is_none_or(|s| m.subject.to_lowercase().contains(&s.to_lowercase()));
        if hit_from && hit_subject && m.folder != "sent" {
            matched += 1;
            if !m.labels.contains(&label) {
                m.labels.push(label.clone());
            }
            if skip_inbox && m.folder == "inbox" {
                m.folder = "archive".to_string();
            }
        }
    }
    mail.filters.push(Filter {
        id: id.clone(),
        from,
        subject_contains: subject,
        label,
        skip_inbox,
    });
    ok(
        json!({"filter_id": id, "applied_to_existing": matched, "filters_total": mail.filters.len()}),
    )
}

fn list_filters(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let mail = lock(&world.mail);
    let filters: Vec<Value> = mail
        .filters
        .iter()
        .map(|f| json!({"id": f.id, "from": f.from, "subject_contains": f.subject_contains, "label": f.label, "skip_inbox": f.skip_inbox}))
        .collect();
    ok(json!({ "filters": filters }))
}

fn set_vacation_responder(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let enabled = args.bool_or("enabled", false)?;
    let mut mail = lock(&world.mail);
    let previous = mail.vacation.is_some();
    mail.vacation = if enabled {
        let message = args
            .opt_str("message")?
            .unwrap_or("I'm out of the office and will reply when I'm back.");
        Some((
            message.to_string(),
            args.opt_str("until")?.map(str::to_string),
        ))
    } else {
        None
    };
    let state = match &mail.vacation {
        Some((message, until)) => json!({"active": true, "message": message, "until": until}),
        None => json!({"active": false, "message": null, "until": null}),
    };
    ok(json!({"vacation_responder": state, "was_active": previous}))
}

fn empty_trash(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let mut mail = lock(&world.mail);
    let before = mail.messages.len();
    mail.messages.retain(|_, m| m.folder != "trash");
    let removed = before - mail.messages.len();
    ok(json!({"permanently_deleted": removed, "messages_left": mail.messages.len()}))
}

fn take_draft(mail: &mut Mailbox, id: &str) -> Result<Draft, ToolError> {
    DRAFT.take(&mut mail.drafts, id)
}
