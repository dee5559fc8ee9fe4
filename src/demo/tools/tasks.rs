//! `tasks`: a to-do list with projects, priorities, due dates, subtasks and comments. Tasks
//! move between `todo`, `in_progress`, `blocked` and `done`; moves that make no sense (finish
//! a finished task, start a blocked one) are refused with the current state in the message.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::clock::{DAY, DEMO_NOW, format_date, parse_date};
use super::super::kit::{
    Args, Changed, Kind, Reply, fail, listed, next_id, ok, round_to, unique_name,
};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "create_task" => create_task,
        "list_tasks" => list_tasks,
        "get_task" => get_task,
        "update_task" => update_task,
        "start_task" => start_task,
        "complete_task" => complete_task,
        "block_task" => block_task,
        "reopen_task" => reopen_task,
        "delete_task" => delete_task,
        "assign_task" => assign_task,
        "set_task_priority" => set_task_priority,
        "set_due_date" => set_due_date,
        "add_subtask" => add_subtask,
        "add_task_comment" => add_task_comment,
        "list_projects" => list_projects,
        "create_project" => create_project,
        "move_task_to_project" => move_task_to_project,
        "list_overdue_tasks" => list_overdue_tasks,
        "get_task_stats" => get_task_stats,
        _ => return None,
    })
}

const PRIORITIES: [&str; 4] = ["low", "medium", "high", "urgent"];

#[derive(Debug, Clone)]
struct Task {
    id: String,
    title: String,
    description: String,
    status: &'static str,
    priority: &'static str,
    due: Option<i64>,
    project_id: Option<String>,
    assignee: Option<String>,
    subtasks: Vec<(String, bool)>,
    comments: Vec<(String, String)>,
    blocked_reason: Option<String>,
}

impl Task {
    fn to_json(&self) -> Value {
        json!({
            "id": self.id,
            "title": self.title,
            "status": self.status,
            "priority": self.priority,
            "due": self.due.map(format_date),
            "project_id": self.project_id,
            "assignee": self.assignee,
            "subtasks": self.subtasks.len(),
            "comments": self.comments.len(),
        })
    }

    fn overdue(&self) -> bool {
        self.status != "done" && self.due.is_some_and(|d| d < DEMO_NOW.div_euclid(DAY))
    }
}

/// Tasks and projects (id → (name, colour)).
#[derive(Debug)]
pub(crate) struct Tasks {
    tasks: BTreeMap<String, Task>,
    projects: BTreeMap<String, (String, String)>,
    next_task: u64,
    next_project: u64,
}

impl Tasks {
    pub(crate) fn seeded() -> Tasks {
        let today = DEMO_NOW.div_euclid(DAY);
        let mut tasks = BTreeMap::new();
        for (id, title, status, priority, due, project, assignee) in [
            (
                "tsk_301",
                "Write release notes",
                "todo",
                "high",
                Some(today + 2),
                Some("prj_launch"),
                Some("alex"),
            ),
            (
                "tsk_302",
                "Fix login redirect bug",
                "in_progress",
                "urgent",
                Some(today + 1),
                Some("prj_launch"),
                Some("lee"),
            ),
            (
                "tsk_303",
                "Renew passport",
                "todo",
                "medium",
                Some(today - 3),
                Some("prj_home"),
                None,
            ),
            (
                "tsk_304",
                "Book offsite venue",
                "done",
                "medium",
                Some(today - 7),
                Some("prj_launch"),
                Some("dana"),
            ),
            (
                "tsk_305",
                "Update onboarding docs",
                "todo",
                "low",
                None,
                None,
                None,
            ),
        ] {
            tasks.insert(
                id.to_string(),
                Task {
                    id: id.to_string(),
                    title: title.to_string(),
                    description: String::new(),
                    status,
                    priority,
                    due,
                    project_id: project.map(str::to_string),
                    assignee: assignee.map(str::to_string),
                    subtasks: Vec::new(),
                    comments: Vec::new(),
                    blocked_reason: None,
                },
            );
        }
        if let Some(t) = tasks.get_mut("tsk_301") {
            t.subtasks = vec![
                ("Collect merged PRs".to_string(), true),
                ("Draft highlights".to_string(), false),
            ];
            t.comments = vec![(
                "dana".to_string(),
                "Please mention the new search.".to_string(),
            )];
        }
        let mut projects = BTreeMap::new();
        projects.insert(
            "prj_launch".to_string(),
            ("Website launch".to_string(), "blue".to_string()),
        );
        projects.insert(
            "prj_home".to_string(),
            ("Home".to_string(), "green".to_string()),
        );
        Tasks {
            tasks,
            projects,
            next_task: 306,
            next_project: 1,
        }
    }

    fn task_mut(&mut self, id: &str) -> Result<&mut Task, ToolError> {
        TASK.get_mut(&mut self.tasks, id)
    }

    fn check_project(&self, id: &str) -> Result<(), ToolError> {
        PROJECT.check(&self.projects, id)
    }
}

const TASK: Kind = Kind::new("task", "find ids with list_tasks");
const PROJECT: Kind = Kind::new("project", "list them with list_projects");

fn priority_arg(value: &str) -> Result<&'static str, ToolError> {
    PRIORITIES.into_iter().find(|p| *p == value).ok_or_else(|| {
        fail(format!(
            "priority must be low, medium, high or urgent, got {value:?}"
        ))
    })
}

fn rank(task: &Task) -> (usize, i64, String) {
    let p = PRIORITIES
        .iter()
        .position(|x| *x == task.priority)
        .unwrap_or(0);
    (3 - p, task.due.unwrap_or(i64::MAX), task.id.clone())
}

fn create_task(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let title = args.trimmed("title")?;
    let priority = priority_arg(args.str_or("priority", "medium")?)?;
    let due = args.opt_str("due")?.map(parse_date).transpose()?;
    let mut tasks = lock(&world.tasks);
    let project_id = args.opt_str("project_id")?;
    if let Some(p) = project_id {
        tasks.check_project(p)?;
    }
    let id = next_id("tsk_", &mut tasks.next_task);
    let task = Task {
        id: id.clone(),
        title: title.to_string(),
        description: String::new(),
        status: "todo",
        priority,
        due,
        project_id: project_id.map(str::to_string),
        assignee: args.opt_str("assignee")?.map(str::to_string),
        subtasks: Vec::new(),
        comments: Vec::new(),
        blocked_reason: None,
    };
    let details = json!({"task": task.to_json()});
    tasks.tasks.insert(id, task);
    ok(details)
}

fn list_tasks(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let status = args.str_or("status", "open")?;
    let (project, assignee) = (args.opt_str("project_id")?, args.opt_str("assignee")?);
    let tasks = lock(&world.tasks);
    let mut list: Vec<&Task> = tasks
        .tasks
        .values()
        .filter(|t| {
            if status == "open" {
                t.status != "done"
            } else {
                t.status == status
            }
        })
        .filter(|t| project.is_none_or(|p| t.project_id.as_deref() == Some(p)))
        .filter(|t| assignee.is_none_or(|a| t.assignee.as_deref() == Some(a)))
        .collect();
    list.sort_by_key(|t| rank(t));
    ok(listed("tasks", list.iter().map(|t| t.to_json())))
}

fn get_task(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut tasks = lock(&world.tasks);
    let t = tasks.task_mut(args.str("task_id")?)?;
    ok(json!({
        "task": t.to_json(),
        "subtasks": t.subtasks.iter().map(|(title, done)| json!({"title": title, "done": done})).collect::<Vec<_>>(),
        "comments": t.comments.iter().map(|(author, text)| json!({"author": author, "text": text})).collect::<Vec<_>>(),
    }))
}

fn update_task(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let (title, description) = (args.opt_str("title")?, args.opt_str("description")?);
    let mut tasks = lock(&world.tasks);
    let t = tasks.task_mut(args.str("task_id")?)?;
    let mut changed = Changed::default();
    changed.set("title", &mut t.title, title);
    changed.set("description", &mut t.description, description);
    let details = json!({"task": t.to_json(), "description": t.description, "changed": changed});
    changed.reply(
        details,
        "Nothing changed: pass title or description to update the task.",
    )
}

fn transition(
    world: &DemoWorld,
    id: &str,
    to: &'static str,
    allowed_from: &[&str],
    reason: Option<String>,
) -> Reply {
    let mut tasks = lock(&world.tasks);
    let t = tasks.task_mut(id)?;
    if !allowed_from.contains(&t.status) {
        return Err(fail(format!(
            "task {id} is {}; it cannot move to {to} from there",
            t.status
        )));
    }
    let previous = std::mem::replace(&mut t.status, to);
    t.blocked_reason = reason;
    ok(json!({"task": t.to_json(), "previous_status": previous}))
}

fn start_task(world: &DemoWorld, args: &Args<'_>) -> Reply {
    transition(
        world,
        args.str("task_id")?,
        "in_progress",
        &["todo", "blocked"],
        None,
    )
}

fn complete_task(world: &DemoWorld, args: &Args<'_>) -> Reply {
    transition(
        world,
        args.str("task_id")?,
        "done",
        &["todo", "in_progress", "blocked"],
        None,
    )
}

fn block_task(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let reason = args.str("reason")?.to_string();
    transition(
        world,
        args.str("task_id")?,
        "blocked",
        &["todo", "in_progress"],
        Some(reason),
    )
}

fn reopen_task(world: &DemoWorld, args: &Args<'_>) -> Reply {
    transition(world, args.str("task_id")?, "todo", &["done"], None)
}

fn delete_task(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let mut tasks = lock(&world.tasks);
    let t = TASK.take(&mut tasks.tasks, args.str("task_id")?)?;
    ok(
        json!({"deleted": {"id": t.id, "title": t.title}, "subtasks_removed": t.subtasks.len(), "tasks_left": tasks.tasks.len()}),
    )
}

fn assign_task(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let assignee = args.str("assignee")?.trim().trim_start_matches('@');
    if assignee.is_empty() {
        return Err(fail("assignee must not be empty"));
    }
    let mut tasks = lock(&world.tasks);
    let t = tasks.task_mut(args.str("task_id")?)?;
    t.assignee = Some(assignee.to_string());
    ok(json!({"task": t.to_json()}))
}

fn set_task_priority(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let priority = priority_arg(args.str("priority")?)?;
    let mut tasks = lock(&world.tasks);
    let t = tasks.task_mut(args.str("task_id")?)?;
    t.priority = priority;
    ok(json!({"task": t.to_json()}))
}

fn set_due_date(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let due = parse_date(args.str("due")?)?;
    let mut tasks = lock(&world.tasks);
    let t = tasks.task_mut(args.str("task_id")?)?;
    t.due = Some(due);
    ok(json!({"task": t.to_json()}))
}

fn add_subtask(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let title = args.trimmed("title")?;
    let mut tasks = lock(&world.tasks);
    let t = tasks.task_mut(args.str("task_id")?)?;
    t.subtasks.push((title.to_string(), false));
    let done = t.subtasks.iter().filter(|(_, d)| *d).count();
    ok(json!({"task": t.to_json(), "checklist": format!("{done}/{} done", t.subtasks.len())}))
}

fn add_task_comment(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let text = args.str("text")?;
    let mut tasks = lock(&world.tasks);
    let t = tasks.task_mut(args.str("task_id")?)?;
    t.comments.push(("alex".to_string(), text.to_string()));
    ok(
        json!({"task_id": t.id, "comment": {"author": "alex", "text": text, "index": t.comments.len()}, "comments": t.comments.len()}),
    )
}

fn list_projects(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let tasks = lock(&world.tasks);
    let projects: Vec<Value> = tasks
        .projects
        .iter()
        .map(|(id, (name, _))| {
            let of = || tasks.tasks.values().filter(|t| t.project_id.as_deref() == Some(id.as_str()));
            json!({"id": id, "name": name, "open_tasks": of().filter(|t| t.status != "done").count(), "done_tasks": of().filter(|t| t.status == "done").count()})
        })
        .collect();
    ok(json!({ "projects": projects }))
}

fn create_project(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let name = args.trimmed("name")?;
    let color = args.str_or("color", "blue")?;
    let mut tasks = lock(&world.tasks);
    unique_name("project", name, tasks.projects.values().map(|p| &p.0))?;
    let id = next_id("prj_", &mut tasks.next_project);
    tasks
        .projects
        .insert(id.clone(), (name.to_string(), color.to_string()));
    ok(
        json!({"project": {"id": id, "name": name, "color": color}, "projects_total": tasks.projects.len()}),
    )
}

fn move_task_to_project(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let project = args.str("project_id")?;
    let mut tasks = lock(&world.tasks);
    tasks.check_project(project)?;
    let t = tasks.task_mut(args.str("task_id")?)?;
    if t.project_id.as_deref() == Some(project) {
        return Err(fail(format!("{} is already in {project}", t.id)));
    }
    t.project_id = Some(project.to_string());
    ok(json!({"task": t.to_json()}))
}

fn list_overdue_tasks(world: &DemoWorld, _args: &Args<'_>) -> Reply {
    let tasks = lock(&world.tasks);
    let mut list: Vec<&Task> = tasks.tasks.values().filter(|t| t.overdue()).collect();
    list.sort_by_key(|t| t.due);
    ok(listed("tasks", list.iter().map(|t| t.to_json())))
}

fn get_task_stats(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let project = args.opt_str("project_id")?;
    let tasks = lock(&world.tasks);
    if let Some(p) = project {
        tasks.check_project(p)?;
    }
    let list: Vec<&Task> = tasks
        .tasks
        .values()
        .filter(|t| project.is_none_or(|p| t.project_id.as_deref() == Some(p)))
        .collect();
    let count = |s: &str| list.iter().filter(|t| t.status == s).count();
    let done = count("done");
    let rate = if list.is_empty() {
        0.0
    } else {
        round_to(done as f64 / list.len() as f64, 4)
    };
    ok(json!({
        "total": list.len(),
        "by_status": {"todo": count("todo"), "in_progress": count("in_progress"), "blocked": count("blocked"), "done": done},
        "overdue": list.iter().filter(|t| t.overdue()).count(),
        "completion_rate": rate,
    }))
}
