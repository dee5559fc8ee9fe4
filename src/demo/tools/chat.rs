//! `chat`: team chat channels with messages, threads, reactions, pins, direct messages and
//! presence. The current user is `alex`.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::clock::{DEMO_NOW, format_utc};
use super::super::kit::{Args, Reply, fail, listed, matches_all, next_id, not_found, ok};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "list_channels" => list_channels,
        "create_channel" => create_channel,
        "post_message" => post_message,
        "list_channel_messages" => list_channel_messages,
        "search_chat" => search_chat,
        "react_to_message" => react_to_message,
        "pin_message" => pin_message,
        "list_pinned_messages" => list_pinned_messages,
        "send_direct_message" => send_direct_message,
        "set_status" => set_status,
        "get_user_presence" => get_user_presence,
        "invite_to_channel" => invite_to_channel,
        "archive_channel" => archive_channel,
        "edit_chat_message" => edit_chat_message,
        "delete_chat_message" => delete_chat_message,
        "reply_in_thread" => reply_in_thread,
        _ => return None,
    })
}

const ME: &str = "alex";

#[derive(Debug, Clone)]
struct ChatMessage {
    id: String,
    channel: String,
    author: String,
    text: String,
    ts: i64,
    reactions: Vec<String>,
    pinned: bool,
    parent: Option<String>,
}

#[derive(Debug, Clone)]
struct Channel {
    topic: String,
    members: Vec<String>,
    archived: bool,
    private: bool,
}

#[derive(Debug, Clone)]
struct User {
    presence: &'static str,
    status: String,
    emoji: String,
    timezone: &'static str,
}

/// Channels, messages and people.
#[derive(Debug)]
pub(crate) struct Chat {
    channels: BTreeMap<String, Channel>,
    messages: BTreeMap<String, ChatMessage>,
    users: BTreeMap<String, User>,
    direct: Vec<(String, String, i64)>,
    next_message: u64,
}

impl Chat {
    pub(crate) fn seeded() -> Chat {
        let people = ["alex", "dana", "lee", "priya", "mara"];
        let mut channels = BTreeMap::new();
        for (name, topic, members) in [
            ("general", "Company-wide announcements", &people[..]),
            (
                "engineering",
                "Builds, deploys and code review",
                &["alex", "dana", "lee", "mara"][..],
            ),
            ("random", "Water-cooler chat", &["alex", "lee", "mara"][..]),
        ] {
            channels.insert(
                name.to_string(),
                Channel {
                    topic: topic.to_string(),
                    members: members.iter().map(|m| m.to_string()).collect(),
                    archived: false,
                    private: false,
                },
            );
        }
        let mut messages = BTreeMap::new();
        for (id, channel, author, text, minutes_ago, reactions, pinned) in [
            (
                "cm_9001",
                "engineering",
                "lee",
                "Deploying gateway v0.9 to staging now.",
                50,
                &["eyes"][..],
                false,
            ),
            (
                "cm_9002",
                "engineering",
                "dana",
                "Reminder: code freeze for the release starts Thursday.",
                40,
                &[][..],
                false,
            ),
            (
                "cm_9003",
                "engineering",
                "alex",
                "Release notes draft is in the shared drive.",
                30,
                &["+1"][..],
                false,
            ),
            (
                "cm_9004",
                "general",
                "mara",
                "Welcome Priya to the team!",
                120,
                &["tada", "wave"][..],
                true,
            ),
            (
                "cm_9005",
                "random",
                "lee",
                "Anyone up for lunch at the new ramen place?",
                15,
                &[][..],
                false,
            ),
        ] {
            messages.insert(
                id.to_string(),
                ChatMessage {
                    id: id.to_string(),
                    channel: channel.to_string(),
                    author: author.to_string(),
                    text: text.to_string(),
                    ts: DEMO_NOW - minutes_ago * 60,
                    reactions: reactions.iter().map(|r| r.to_string()).collect(),
                    pinned,
                    parent: None,
                },
            );
        }
        let mut users = BTreeMap::new();
        for (name, presence, status, tz) in [
            ("alex", "online", "", "Europe/London"),
            ("dana", "online", "Reviewing PRs", "America/New_York"),
            ("lee", "away", "Lunch", "Europe/London"),
            ("priya", "offline", "", "Asia/Kolkata"),
            ("mara", "online", "Heads down", "Europe/Berlin"),
        ] {
            users.insert(
                name.to_string(),
                User {
                    presence,
                    status: status.to_string(),
                    emoji: String::new(),
                    timezone: tz,
                },
            );
        }
        Chat {
            channels,
            messages,
            users,
            direct: Vec::new(),
            next_message: 9006,
        }
    }

    fn channel_name(raw: &str) -> String {
        raw.trim().trim_start_matches('#').to_lowercase()
    }

    fn channel(&self, raw: &str) -> Result<(String, &Channel), ToolError> {
        let name = Chat::channel_name(raw);
        match self.channels.get(&name) {
            Some(c) => Ok((name, c)),
            None => Err(not_found(
                "channel",
                &name,
                "list channels with list_channels",
            )),
        }
    }

    fn message_json(&self, m: &ChatMessage) -> Value {
        json!({
            "id": m.id,
            "channel": m.channel,
            "author": m.author,
            "text": m.text,
            "ts": format_utc(m.ts),
            "reactions": m.reactions,
            "pinned": m.pinned,
            "thread_replies": self.messages.values().filter(|r| r.parent.as_deref() == Some(m.id.as_str())).count(),
        })
    }

    fn message(&self, id: &str) -> Result<&ChatMessage, ToolError> {
        self.messages.get(id).ok_or_else(|| unknown_message(id))
    }

    fn message_mut(&mut self, id: &str) -> Result<&mut ChatMessage, ToolError> {
        self.messages.get_mut(id).ok_or_else(|| unknown_message(id))
    }

    fn post(
        &mut self,
        channel: &str,
        text: &str,
        parent: Option<String>,
    ) -> Result<String, ToolError> {
        let (name, c) = self.channel(channel)?;
        if c.archived {
            return Err(fail(format!("#{name} is archived and read-only")));
        }
        if text.trim().is_empty() {
            return Err(fail("message text must not be empty"));
        }
        let id = next_id("cm_", &mut self.next_message);
        self.messages.insert(
            id.clone(),
            ChatMessage {
                id: id.clone(),
                channel: name,
                author: ME.to_string(),
                text: text.to_string(),
                ts: DEMO_NOW,
                reactions: Vec::new(),
                pinned: false,
                parent,
            },
        );
        Ok(id)
    }
}

fn list_channels(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let archived = args.bool_or("include_archived", false)?;
    let chat = lock(&world.chat);
    let channels: Vec<Value> = chat
        .channels
        .iter()
        .filter(|(_, c)| archived || !c.archived)
        .map(|(n, c)| json!({"name": n, "topic": c.topic, "members": c.members.len(), "archived": c.archived}))
        .collect();
    ok(json!({ "channels": channels }))
}

fn create_channel(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let name = Chat::channel_name(args.str("name")?);
    if name.is_empty()
        || name.len() > 40
        || !name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
    {
        return Err(fail(
            "channel names use lowercase letters, digits and dashes (max 40)",
        ));
    }
    let mut chat = lock(&world.chat);
    if chat.channels.contains_key(&name) {
        return Err(fail(format!("#{name} already exists")));
    }
    let private = args.bool_or("private", false)?;
    let topic = args.str_or("topic", "")?.to_string();
    chat.channels.insert(
        name.clone(),
        Channel {
            topic: topic.clone(),
            members: vec![ME.to_string()],
            archived: false,
            private,
        },
    );
    ok(
        json!({"channel": {"name": name, "topic": topic, "private": private, "members": [ME]}, "channels_total": chat.channels.len()}),
    )
}

fn post_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut chat = lock(&world.chat);
    let id = chat.post(args.str("channel")?, args.str("text")?, None)?;
    let message = chat.message(&id)?;
    ok(json!({"message": chat.message_json(message)}))
}

fn list_channel_messages(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let limit = args.i64_or("limit", 20)?.clamp(1, 200) as usize;
    let chat = lock(&world.chat);
    let (name, _) = chat.channel(args.str("channel")?)?;
    let mut list: Vec<&ChatMessage> = chat
        .messages
        .values()
        .filter(|m| m.channel == name && m.parent.is_none())
        .collect();
    list.sort_by_key(|m| m.ts);
    let skip = list.len().saturating_sub(limit);
    let messages: Vec<Value> = list
        .iter()
        .skip(skip)
        .map(|m| chat.message_json(m))
        .collect();
    ok(json!({"channel": name, "messages": messages}))
}

fn search_chat(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    let channel = args.opt_str("channel")?.map(Chat::channel_name);
    let chat = lock(&world.chat);
    let messages = chat
        .messages
        .values()
        .filter(|m| channel.as_ref().is_none_or(|c| m.channel == *c))
        .filter(|m| matches_all(&format!("{} {}", m.author, m.text), query));
    ok(listed("messages", messages.map(|m| chat.message_json(m))))
}

fn react_to_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let emoji = args.str("emoji")?.trim_matches(':').to_string();
    if emoji.is_empty() {
        return Err(fail("emoji must not be empty"));
    }
    let mut chat = lock(&world.chat);
    let id = args.str("message_id")?;
    chat.message(id)?;
    if let Some(m) = chat.messages.get_mut(id)
        && !m.reactions.contains(&emoji)
    {
        m.reactions.push(emoji);
    }
    let m = chat.message(id)?;
    ok(json!({"message": chat.message_json(m)}))
}

fn pin_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.str("message_id")?;
    let mut chat = lock(&world.chat);
    let m = chat.message_mut(id)?;
    if m.pinned {
        return Err(fail(format!("{id} is already pinned")));
    }
    m.pinned = true;
    let channel = m.channel.clone();
    let pinned = chat
        .messages
        .values()
        .filter(|m| m.channel == channel && m.pinned)
        .count();
    ok(json!({"pinned": id, "channel": channel, "pinned_in_channel": pinned}))
}

fn list_pinned_messages(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let chat = lock(&world.chat);
    let (name, _) = chat.channel(args.str("channel")?)?;
    let pinned: Vec<Value> = chat
        .messages
        .values()
        .filter(|m| m.channel == name && m.pinned)
        .map(|m| chat.message_json(m))
        .collect();
    ok(json!({"channel": name, "pinned": pinned}))
}

fn send_direct_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let user = args.str("user")?.trim_start_matches('@').to_lowercase();
    let text = args.str("text")?;
    let mut chat = lock(&world.chat);
    let presence = chat
        .users
        .get(&user)
        .map(|u| u.presence)
        .ok_or_else(|| not_found("user", &user, "people: alex, dana, lee, priya, mara"))?;
    chat.direct.push((user.clone(), text.to_string(), DEMO_NOW));
    let count = chat.direct.iter().filter(|(u, _, _)| *u == user).count();
    ok(
        json!({"delivered_to": user, "recipient_presence": presence, "sent_at": format_utc(DEMO_NOW), "conversation_messages": count}),
    )
}

fn set_status(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = args.str("text")?;
    if text.chars().count() > 100 {
        return Err(fail("status text is limited to 100 characters"));
    }
    let emoji = args.str_or("emoji", "speech_balloon")?;
    let expires = args
        .opt_i64("expires_in_minutes")?
        .map(|m| format_utc(DEMO_NOW + m.clamp(1, 10_080) * 60));
    let mut chat = lock(&world.chat);
    let me = chat
        .users
        .get_mut(ME)
        .ok_or_else(|| fail("current user missing"))?;
    let previous = std::mem::replace(&mut me.status, text.to_string());
    me.emoji = emoji.to_string();
    ok(
        json!({"user": ME, "status": {"text": text, "emoji": emoji, "expires_at": expires}, "previous_text": previous}),
    )
}

fn get_user_presence(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let user = args.str("user")?.trim_start_matches('@').to_lowercase();
    let chat = lock(&world.chat);
    let u = chat
        .users
        .get(&user)
        .ok_or_else(|| not_found("user", &user, "people: alex, dana, lee, priya, mara"))?;
    ok(
        json!({"user": user, "presence": u.presence, "status_text": u.status, "timezone": u.timezone}),
    )
}

fn invite_to_channel(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let users = args.str_list("users")?;
    let mut chat = lock(&world.chat);
    let (name, _) = chat.channel(args.str("channel")?)?;
    if let Some(unknown) = users.iter().find(|u| !chat.users.contains_key(u.as_str())) {
        return Err(not_found(
            "user",
            unknown,
            "people: alex, dana, lee, priya, mara",
        ));
    }
    let channel = chat
        .channels
        .get_mut(&name)
        .ok_or_else(|| fail("channel vanished"))?;
    let mut added = Vec::new();
    for u in users {
        if !channel.members.contains(&u) {
            channel.members.push(u.clone());
            added.push(u);
        }
    }
    ok(
        json!({"channel": name, "private": channel.private, "added": added, "members": channel.members.len()}),
    )
}

fn archive_channel(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut chat = lock(&world.chat);
    let (name, _) = chat.channel(args.str("channel")?)?;
    if name == "general" {
        return Err(fail("#general cannot be archived"));
    }
    let channel = chat
        .channels
        .get_mut(&name)
        .ok_or_else(|| fail("channel vanished"))?;
    if channel.archived {
        return Err(fail(format!("#{name} is already archived")));
    }
    channel.archived = true;
    let active = chat.channels.values().filter(|c| !c.archived).count();
    ok(json!({"archived": name, "active_channels": active}))
}

fn own_message<'a>(chat: &'a mut Chat, id: &str) -> Result<&'a mut ChatMessage, ToolError> {
    let m = chat.message_mut(id)?;
    if m.author != ME {
        return Err(fail(format!(
            "{id} was written by {}; you can only change your own messages",
            m.author
        )));
    }
    Ok(m)
}

fn edit_chat_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = args.str("text")?;
    let id = args.str("message_id")?;
    let mut chat = lock(&world.chat);
    let m = own_message(&mut chat, id)?;
    let previous = std::mem::replace(&mut m.text, text.to_string());
    let m = chat.message(id)?;
    ok(
        json!({"message": chat.message_json(m), "previous_text": previous, "edited_at": format_utc(DEMO_NOW)}),
    )
}

fn delete_chat_message(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.str("message_id")?;
    let mut chat = lock(&world.chat);
    let channel = own_message(&mut chat, id)?.channel.clone();
    chat.messages.remove(id);
    chat.messages.retain(|_, m| m.parent.as_deref() != Some(id));
    let left = chat
        .messages
        .values()
        .filter(|m| m.channel == channel)
        .count();
    ok(json!({"deleted": id, "channel": channel, "messages_in_channel": left}))
}

fn reply_in_thread(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let parent = args.str("message_id")?.to_string();
    let mut chat = lock(&world.chat);
    let channel = chat.message(&parent)?.channel.clone();
    let id = chat.post(&channel, args.str("text")?, Some(parent.clone()))?;
    let (reply, original) = (chat.message(&id)?, chat.message(&parent)?);
    ok(json!({"reply": chat.message_json(reply), "parent": chat.message_json(original)}))
}

fn unknown_message(id: &str) -> ToolError {
    not_found(
        "chat message",
        id,
        "read a channel with list_channel_messages",
    )
}
