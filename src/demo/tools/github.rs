//! `github`: a GitHub-like code host in memory — repositories with branches, files, commits,
//! issues, pull requests, reviews, releases and CI runs. Issues and pull requests share one
//! number sequence per repository, like on GitHub. Shas are deterministic (FNV-1a based).

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::super::clock::{DAY, DEMO_NOW, days_from_civil, format_utc};
use super::super::kit::{Args, Reply, fail, listed, matches_all, not_found, ok, ok_text, tagged};
use super::super::world::{DemoWorld, Handler};
use crate::catalog::ToolError;
use crate::sync::lock;

pub(crate) fn handler(name: &str) -> Option<Handler> {
    Some(match name {
        "list_repos" => list_repos,
        "get_repo" => get_repo,
        "create_repo" => create_repo,
        "delete_repo" => delete_repo,
        "fork_repo" => fork_repo,
        "star_repo" => star_repo,
        "list_branches" => list_branches,
        "create_branch" => create_branch,
        "delete_branch" => delete_branch,
        "get_file_contents" => get_file_contents,
        "commit_file" => commit_file,
        "list_commits" => list_commits,
        "get_commit" => get_commit,
        "compare_branches" => compare_branches,
        "create_issue" => create_issue,
        "list_issues" => list_issues,
        "get_issue" => get_issue,
        "update_issue" => update_issue,
        "close_issue" => close_issue,
        "reopen_issue" => reopen_issue,
        "comment_on_issue" => comment_on_issue,
        "list_issue_comments" => list_issue_comments,
        "add_issue_labels" => add_issue_labels,
        "assign_issue" => assign_issue,
        "search_issues" => search_issues,
        "create_pull_request" => create_pull_request,
        "list_pull_requests" => list_pull_requests,
        "get_pull_request" => get_pull_request,
        "merge_pull_request" => merge_pull_request,
        "review_pull_request" => review_pull_request,
        "list_pr_files" => list_pr_files,
        "create_release" => create_release,
        "list_releases" => list_releases,
        "get_latest_release" => get_latest_release,
        "search_code" => search_code,
        "list_contributors" => list_contributors,
        "get_workflow_runs" => get_workflow_runs,
        "rerun_workflow" => rerun_workflow,
        _ => return None,
    })
}

const ME: &str = "alex";

#[derive(Debug, Clone)]
struct Commit {
    sha: String,
    message: String,
    author: String,
    date: i64,
    files: Vec<String>,
}

#[derive(Debug, Clone)]
struct Branch {
    /// Commit shas, oldest first; the last one is the head.
    history: Vec<String>,
    protected: bool,
    files: BTreeMap<String, String>,
}

impl Branch {
    fn head(&self) -> &str {
        self.history.last().map_or("", String::as_str)
    }
}

#[derive(Debug, Clone)]
struct Comment {
    id: u64,
    author: String,
    body: String,
    created_at: i64,
}

impl Comment {
    fn to_json(&self) -> Value {
        json!({"id": self.id, "author": self.author, "body": self.body, "created_at": format_utc(self.created_at)})
    }
}

#[derive(Debug, Clone)]
struct Issue {
    number: u64,
    title: String,
    body: String,
    open: bool,
    author: String,
    labels: Vec<String>,
    assignees: Vec<String>,
    comments: Vec<Comment>,
}

impl Issue {
    fn to_json(&self) -> Value {
        json!({
            "number": self.number,
            "title": self.title,
            "state": if self.open { "open" } else { "closed" },
            "author": self.author,
            "labels": self.labels,
            "assignees": self.assignees,
            "comments": self.comments.len(),
        })
    }
}

#[derive(Debug, Clone)]
struct PullRequest {
    number: u64,
    title: String,
    body: String,
    state: &'static str,
    author: String,
    head: String,
    base: String,
    draft: bool,
    reviews: Vec<(String, String)>,
    files: Vec<(String, u64, u64)>,
    comments: Vec<Comment>,
}

impl PullRequest {
    fn to_json(&self) -> Value {
        json!({
            "number": self.number,
            "title": self.title,
            "state": self.state,
            "author": self.author,
            "head": self.head,
            "base": self.base,
            "mergeable": self.state == "open" && !self.draft,
        })
    }
}

#[derive(Debug, Clone)]
struct Release {
    tag: String,
    name: String,
    notes: String,
    published_at: i64,
    prerelease: bool,
    target_sha: String,
}

impl Release {
    fn to_json(&self) -> Value {
        json!({"tag": self.tag, "name": self.name, "published_at": format_utc(self.published_at), "prerelease": self.prerelease, "target_sha": self.target_sha})
    }
}

#[derive(Debug, Clone)]
struct Run {
    id: u64,
    workflow: String,
    branch: String,
    status: &'static str,
    conclusion: Option<&'static str>,
    started_at: i64,
}

#[derive(Debug, Clone)]
struct Repo {
    description: String,
    language: String,
    stars: u64,
    forks: u64,
    private: bool,
    starred: bool,
    default_branch: String,
    branches: BTreeMap<String, Branch>,
    commits: BTreeMap<String, Commit>,
    issues: BTreeMap<u64, Issue>,
    pulls: BTreeMap<u64, PullRequest>,
    releases: Vec<Release>,
    runs: Vec<Run>,
    next_number: u64,
}

impl Repo {
    fn open_issues(&self) -> usize {
        self.issues.values().filter(|i| i.open).count()
    }

    fn branch(&self, name: &str) -> Result<&Branch, ToolError> {
        self.branches.get(name).ok_or_else(|| {
            not_found(
                "branch",
                name,
                &format!(
                    "branches: {}",
                    self.branches.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            )
        })
    }

    fn issue_mut(&mut self, number: u64) -> Result<&mut Issue, ToolError> {
        if self.pulls.contains_key(&number) {
            return Err(fail(format!(
                "#{number} is a pull request, not an issue; use the pull request tools"
            )));
        }
        self.issues
            .get_mut(&number)
            .ok_or_else(|| not_found("issue", &format!("#{number}"), "list them with list_issues"))
    }

    fn pull_mut(&mut self, number: u64) -> Result<&mut PullRequest, ToolError> {
        if self.issues.contains_key(&number) {
            return Err(fail(format!("#{number} is an issue, not a pull request")));
        }
        self.pulls.get_mut(&number).ok_or_else(|| {
            not_found(
                "pull request",
                &format!("#{number}"),
                "list them with list_pull_requests",
            )
        })
    }

    fn add_commit(
        &mut self,
        branch: &str,
        message: &str,
        author: &str,
        files: Vec<String>,
    ) -> Result<String, ToolError> {
        let parent = self.branch(branch)?.head().to_string();
        let sha = make_sha(&format!("{parent}\n{message}\n{}", self.commits.len()));
        self.commits.insert(
            sha.clone(),
            Commit {
                sha: sha.clone(),
                message: message.to_string(),
                author: author.to_string(),
                date: DEMO_NOW,
                files,
            },
        );
        if let Some(b) = self.branches.get_mut(branch) {
            b.history.push(sha.clone());
        }
        Ok(sha)
    }
}

fn make_sha(seed: &str) -> String {
    let mut out = String::with_capacity(40);
    let mut salt = 0u64;
    while out.len() < 40 {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325 ^ salt;
        for byte in seed.bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0100_0000_01b3);
        }
        out.push_str(&format!("{hash:016x}"));
        salt += 1;
    }
    out.truncate(40);
    out
}

/// All repositories by `owner/name`.
#[derive(Debug)]
pub(crate) struct CodeHost {
    repos: BTreeMap<String, Repo>,
    next_run: u64,
    next_comment: u64,
}

fn on(month: u32, day: u32) -> i64 {
    days_from_civil(2026, month, day) * DAY + 15 * 3600
}

fn files(list: &[(&str, &str)]) -> BTreeMap<String, String> {
    list.iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect()
}

fn new_repo(description: &str, language: &str, stars: u64, private: bool) -> Repo {
    Repo {
        description: description.to_string(),
        language: language.to_string(),
        stars,
        forks: 0,
        private,
        starred: false,
        default_branch: "main".to_string(),
        branches: BTreeMap::new(),
        commits: BTreeMap::new(),
        issues: BTreeMap::new(),
        pulls: BTreeMap::new(),
        releases: Vec::new(),
        runs: Vec::new(),
        next_number: 1,
    }
}

impl CodeHost {
    pub(crate) fn seeded() -> CodeHost {
        let mut repos = BTreeMap::new();

        // acme/widgets: the busy one.
        let mut widgets = new_repo("Dashboard widget layout engine", "Rust", 128, false);
        widgets.forks = 14;
        let readme = "# widgets\n\nLays out dashboard widgets on a 12-column grid.\n";
        let lib = "pub struct Config {\n    pub width: u32,\n}\n\npub fn render(config: &Config) -> String {\n    format!(\"{}px\", config.width)\n}\n";
        let commit_list = [
            (
                "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
                "Initial layout engine",
                "alex",
                on(1, 5),
                vec!["src/lib.rs", "README.md"],
            ),
            (
                "b2c3d4e5f60718293a4b5c6d7e8f901234567890",
                "Add render summary",
                "dana",
                on(2, 1),
                vec!["src/lib.rs"],
            ),
            (
                "c3d4e5f60718293a4b5c6d7e8f90123456789012",
                "Fix column rounding (#11)",
                "lee",
                on(2, 20),
                vec!["src/lib.rs"],
            ),
            (
                "d4e5f60718293a4b5c6d7e8f9012345678901234",
                "Retry flaky layout test",
                "lee",
                on(2, 25),
                vec!["tests/layout.rs"],
            ),
            (
                "e5f60718293a4b5c6d7e8f901234567890123456",
                "Add Theme struct",
                "mara",
                on(2, 26),
                vec!["src/theme.rs"],
            ),
            (
                "f60718293a4b5c6d7e8f90123456789012345678",
                "Dark mode toggle",
                "mara",
                on(2, 27),
                vec!["src/theme.rs", "src/lib.rs"],
            ),
        ];
        for (sha, message, author, date, changed) in commit_list {
            widgets.commits.insert(
                sha.to_string(),
                Commit {
                    sha: sha.to_string(),
                    message: message.to_string(),
                    author: author.to_string(),
                    date,
                    files: changed.into_iter().map(str::to_string).collect(),
                },
            );
        }
        let shas: Vec<String> = widgets.commits.keys().cloned().collect();
        let main_files = files(&[
            ("README.md", readme),
            (
                "Cargo.toml",
                "[package]\nname = \"widgets\"\nversion = \"1.3.0\"\n",
            ),
            ("src/lib.rs", lib),
        ]);
        widgets.branches.insert(
            "main".to_string(),
            Branch {
                history: shas[..3].to_vec(),
                protected: true,
                files: main_files.clone(),
            },
        );
        let mut develop_files = main_files.clone();
        develop_files.insert(
            "tests/layout.rs".to_string(),
            "#[test]\nfn renders() {}\n".to_string(),
        );
        widgets.branches.insert(
            "develop".to_string(),
            Branch {
                history: shas[..4].to_vec(),
                protected: false,
                files: develop_files,
            },
        );
        let mut dark_files = main_files;
        dark_files.insert(
            "src/theme.rs".to_string(),
            "pub enum Theme {\n    Light,\n    Dark,\n}\n".to_string(),
        );
        widgets.branches.insert(
            "feature/dark-mode".to_string(),
            Branch {
                history: [&shas[..3], &shas[4..]].concat(),
                protected: false,
                files: dark_files,
            },
        );
        let comment = |id: u64, author: &str, body: &str, at: i64| Comment {
            id,
            author: author.to_string(),
            body: body.to_string(),
            created_at: at,
        };
        widgets.issues.insert(
            9,
            Issue {
                number: 9,
                title: "Typo in README".to_string(),
                body: "\"widgts\" in the first line.".to_string(),
                open: false,
                author: "sam".to_string(),
                labels: vec!["documentation".to_string()],
                assignees: vec![],
                comments: vec![],
            },
        );
        widgets.issues.insert(12, Issue {
            number: 12,
            title: "Crash when config file is empty".to_string(),
            body: "Running with an empty widgets.toml panics with `unwrap on None` in Config::load.".to_string(),
            open: true,
            author: "priya".to_string(),
            labels: vec!["bug".to_string()],
            assignees: vec![],
            comments: vec![comment(1, "lee", "Reproduced on main.", on(2, 22)), comment(2, "alex", "Probably the missing default for width.", on(2, 23))],
        });
        widgets.issues.insert(
            13,
            Issue {
                number: 13,
                title: "Add dark mode".to_string(),
                body: "Users ask for a dark theme.".to_string(),
                open: true,
                author: "dana".to_string(),
                labels: vec!["enhancement".to_string()],
                assignees: vec!["mara".to_string()],
                comments: vec![],
            },
        );
        widgets.pulls.insert(
            11,
            PullRequest {
                number: 11,
                title: "Fix column rounding".to_string(),
                body: "Fixes #10.".to_string(),
                state: "merged",
                author: "lee".to_string(),
                head: "fix/rounding".to_string(),
                base: "main".to_string(),
                draft: false,
                reviews: vec![("alex".to_string(), "approve".to_string())],
                files: vec![("src/lib.rs".to_string(), 4, 2)],
                comments: vec![],
            },
        );
        widgets.pulls.insert(
            14,
            PullRequest {
                number: 14,
                title: "Add dark mode toggle".to_string(),
                body: "Closes #13. Adds a Theme enum and a toggle.".to_string(),
                state: "open",
                author: "mara".to_string(),
                head: "feature/dark-mode".to_string(),
                base: "main".to_string(),
                draft: false,
                reviews: vec![("dana".to_string(), "approve".to_string())],
                files: vec![
                    ("src/theme.rs".to_string(), 48, 0),
                    ("src/lib.rs".to_string(), 12, 3),
                ],
                comments: vec![],
            },
        );
        widgets.next_number = 15;
        widgets.releases = vec![
            Release {
                tag: "v1.2.0".to_string(),
                name: "1.2.0".to_string(),
                notes: "Grid snapping.".to_string(),
                published_at: on(1, 15),
                prerelease: false,
                target_sha: shas[0].clone(),
            },
            Release {
                tag: "v1.3.0".to_string(),
                name: "1.3.0".to_string(),
                notes: "Render summary; column rounding fix.".to_string(),
                published_at: on(2, 21),
                prerelease: false,
                target_sha: shas[2].clone(),
            },
            Release {
                tag: "v1.4.0-beta.1".to_string(),
                name: "1.4.0 beta 1".to_string(),
                notes: "Dark mode preview.".to_string(),
                published_at: on(2, 28),
                prerelease: true,
                target_sha: shas[5].clone(),
            },
        ];
        widgets.runs = vec![
            Run {
                id: 9001,
                workflow: "CI".to_string(),
                branch: "main".to_string(),
                status: "completed",
                conclusion: Some("success"),
                started_at: on(2, 20),
            },
            Run {
                id: 9002,
                workflow: "CI".to_string(),
                branch: "develop".to_string(),
                status: "completed",
                conclusion: Some("success"),
                started_at: on(2, 25),
            },
            Run {
                id: 9003,
                workflow: "CI".to_string(),
                branch: "feature/dark-mode".to_string(),
                status: "completed",
                conclusion: Some("failure"),
                started_at: on(2, 27),
            },
        ];
        repos.insert("acme/widgets".to_string(), widgets);

        // acme/gateway: a small service.
        let mut gateway = new_repo("API gateway for the widgets service", "Rust", 41, true);
        let sha = "0a1b2c3d4e5f60718293a4b5c6d7e8f901234567".to_string();
        gateway.commits.insert(
            sha.clone(),
            Commit {
                sha: sha.clone(),
                message: "Bootstrap gateway".to_string(),
                author: "dana".to_string(),
                date: on(1, 20),
                files: vec!["src/main.rs".to_string()],
            },
        );
        gateway.branches.insert(
            "main".to_string(),
            Branch {
                history: vec![sha],
                protected: true,
                files: files(&[
                    (
                        "README.md",
                        "# gateway\n\nRoutes API traffic to widget services.\n",
                    ),
                    (
                        "src/main.rs",
                        "fn main() {\n    println!(\"gateway listening on :8080\");\n}\n",
                    ),
                ]),
            },
        );
        gateway.issues.insert(
            1,
            Issue {
                number: 1,
                title: "Support rate limiting per API key".to_string(),
                body: "Needed before the public beta.".to_string(),
                open: true,
                author: "alex".to_string(),
                labels: vec!["enhancement".to_string()],
                assignees: vec!["dana".to_string()],
                comments: vec![],
            },
        );
        gateway.next_number = 2;
        repos.insert("acme/gateway".to_string(), gateway);

        // acme/website: marketing site.
        let mut website = new_repo("Marketing website", "TypeScript", 7, false);
        let sha = "1b2c3d4e5f60718293a4b5c6d7e8f90123456789".to_string();
        website.commits.insert(
            sha.clone(),
            Commit {
                sha: sha.clone(),
                message: "Landing page".to_string(),
                author: "mara".to_string(),
                date: on(2, 2),
                files: vec!["index.html".to_string()],
            },
        );
        website.branches.insert(
            "main".to_string(),
            Branch {
                history: vec![sha],
                protected: false,
                files: files(&[
                    ("README.md", "# website\n"),
                    ("index.html", "<h1>Acme Widgets</h1>\n"),
                ]),
            },
        );
        repos.insert("acme/website".to_string(), website);

        CodeHost {
            repos,
            next_run: 9004,
            next_comment: 100,
        }
    }

    fn repo(&self, full: &str) -> Result<&Repo, ToolError> {
        self.repos.get(full).ok_or_else(|| self.missing(full))
    }

    fn repo_mut(&mut self, full: &str) -> Result<&mut Repo, ToolError> {
        let error = self.missing(full);
        self.repos.get_mut(full).ok_or(error)
    }

    fn missing(&self, full: &str) -> ToolError {
        if !full.contains('/') {
            return fail(format!(
                "repository must be owner/name, got {full:?} (e.g. acme/widgets)"
            ));
        }
        not_found(
            "repository",
            full,
            &format!(
                "repositories: {}",
                self.repos.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
    }
}

fn number(args: &Args<'_>) -> Result<u64, ToolError> {
    let n = args.i64("number")?;
    u64::try_from(n)
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| fail(format!("number must be a positive integer, got {n}")))
}

fn url(repo: &str, kind: &str, number: u64) -> String {
    format!("https://code.example/{repo}/{kind}/{number}")
}

fn list_repos(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let owner = args.str_or("owner", "acme")?;
    let host = lock(&world.github);
    let repos: Vec<Value> = host
        .repos
        .iter()
        .filter(|(full, _)| full.split('/').next() == Some(owner))
        .map(|(full, r)| json!({"full_name": full, "description": r.description, "language": r.language, "stars": r.stars, "private": r.private, "default_branch": r.default_branch}))
        .collect();
    ok(json!({ "repos": repos }))
}

fn get_repo(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let full = args.str("repo")?;
    let host = lock(&world.github);
    let r = host.repo(full)?;
    ok(json!({
        "full_name": full, "description": r.description, "language": r.language, "stars": r.stars, "forks": r.forks,
        "open_issues": r.open_issues(), "default_branch": r.default_branch, "private": r.private,
    }))
}

fn create_repo(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let name = args.str("name")?;
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_.-".contains(c))
    {
        return Err(fail(format!(
            "invalid repository name {name:?}: use letters, digits, '-', '_' and '.'"
        )));
    }
    let owner = args.str_or("owner", "acme")?;
    let full = format!("{owner}/{name}");
    let description = args.str_or("description", "")?;
    let private = args.bool_or("private", true)?;
    let mut host = lock(&world.github);
    if host.repos.contains_key(&full) {
        return Err(fail(format!("{full} already exists")));
    }
    let mut repo = new_repo(description, "", 0, private);
    let readme = format!("# {name}\n\n{description}\n");
    repo.branches.insert(
        "main".to_string(),
        Branch {
            history: Vec::new(),
            protected: false,
            files: files(&[("README.md", &readme)]),
        },
    );
    let sha = repo.add_commit("main", "Initial commit", ME, vec!["README.md".to_string()])?;
    host.repos.insert(full.clone(), repo);
    ok(
        json!({"repo": {"full_name": full, "private": private, "default_branch": "main", "head": sha}, "url": format!("https://code.example/{full}")}),
    )
}

fn delete_repo(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let full = args.str("repo")?;
    let mut host = lock(&world.github);
    host.repo(full)?;
    let repo = host
        .repos
        .remove(full)
        .ok_or_else(|| fail("repository vanished"))?;
    ok(json!({
        "deleted": full,
        "branches_removed": repo.branches.len(),
        "issues_removed": repo.issues.len(),
        "pull_requests_removed": repo.pulls.len(),
        "repositories_left": host.repos.len(),
    }))
}

fn fork_repo(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let full = args.str("repo")?;
    let owner = args.str_or("owner", ME)?;
    let mut host = lock(&world.github);
    let source = host.repo(full)?.clone();
    let name = full.rsplit('/').next().unwrap_or(full);
    let fork_name = format!("{owner}/{name}");
    if host.repos.contains_key(&fork_name) {
        return Err(fail(format!("{fork_name} already exists")));
    }
    let mut fork = source;
    fork.stars = 0;
    fork.forks = 0;
    fork.starred = false;
    fork.issues.clear();
    fork.pulls.clear();
    fork.runs.clear();
    fork.releases.clear();
    for branch in fork.branches.values_mut() {
        branch.protected = false;
    }
    let branches = fork.branches.len();
    host.repos.insert(fork_name.clone(), fork);
    let source_forks = host.repo_mut(full).map(|r| {
        r.forks += 1;
        r.forks
    })?;
    ok(
        json!({"fork": fork_name, "source": full, "branches": branches, "source_forks": source_forks}),
    )
}

fn star_repo(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let full = args.str("repo")?;
    let mut host = lock(&world.github);
    let r = host.repo_mut(full)?;
    let already = r.starred;
    if !already {
        r.starred = true;
        r.stars += 1;
    }
    ok(json!({"repo": full, "starred": true, "stars": r.stars, "already_starred": already}))
}

fn list_branches(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let host = lock(&world.github);
    let r = host.repo(args.str("repo")?)?;
    let branches: Vec<Value> = r
        .branches
        .iter()
        .map(|(n, b)| json!({"name": n, "sha": b.head(), "protected": b.protected}))
        .collect();
    ok(json!({ "branches": branches }))
}

fn create_branch(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let name = args.str("branch")?.trim();
    if name.is_empty() || name.contains("..") || name.contains(' ') {
        return Err(fail(format!("invalid branch name {name:?}")));
    }
    let from = args.str_or("from_branch", "main")?;
    let mut host = lock(&world.github);
    let r = host.repo_mut(args.str("repo")?)?;
    if r.branches.contains_key(name) {
        return Err(fail(format!("branch {name} already exists")));
    }
    let mut branch = r.branch(from)?.clone();
    branch.protected = false;
    let sha = branch.head().to_string();
    r.branches.insert(name.to_string(), branch);
    ok(json!({"name": name, "sha": sha, "protected": false}))
}

fn delete_branch(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let name = args.str("branch")?;
    let mut host = lock(&world.github);
    let r = host.repo_mut(args.str("repo")?)?;
    let branch = r.branch(name)?;
    if name == r.default_branch || branch.protected {
        return Err(fail(format!("{name} is protected and cannot be deleted")));
    }
    let sha = branch.head().to_string();
    r.branches.remove(name);
    let closed: Vec<u64> = r
        .pulls
        .values_mut()
        .filter(|p| p.head == name && p.state == "open")
        .map(|p| {
            p.state = "closed";
            p.number
        })
        .collect();
    ok(
        json!({"deleted": name, "sha": sha, "closed_pull_requests": closed, "branches_left": r.branches.len()}),
    )
}

fn get_file_contents(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = args.str("path")?.trim_start_matches('/');
    let reference = args.str_or("ref", "main")?;
    let host = lock(&world.github);
    let r = host.repo(args.str("repo")?)?;
    let branch = r.branch(reference)?;
    let content = branch.files.get(path).ok_or_else(|| {
        not_found(
            "file",
            path,
            &format!(
                "files on {reference}: {}",
                branch.files.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
    })?;
    ok(json!({"path": path, "ref": reference, "size": content.len(), "content": content}))
}

fn commit_file(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let path = args.str("path")?.trim_start_matches('/').to_string();
    if path.is_empty() || path.contains("..") {
        return Err(fail("invalid file path"));
    }
    let content = args.str("content")?;
    let message = args.str("message")?;
    let branch = args.str_or("branch", "main")?;
    let mut host = lock(&world.github);
    let r = host.repo_mut(args.str("repo")?)?;
    let created = !r.branch(branch)?.files.contains_key(&path);
    let sha = r.add_commit(branch, message, ME, vec![path.clone()])?;
    if let Some(b) = r.branches.get_mut(branch) {
        b.files.insert(path.clone(), content.to_string());
    }
    ok(
        json!({"commit": {"sha": sha, "message": message, "author": ME}, "path": path, "branch": branch, "created": created}),
    )
}

fn list_commits(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let branch = args.str_or("branch", "main")?;
    let limit = args.i64_or("limit", 10)?.clamp(1, 100) as usize;
    let host = lock(&world.github);
    let r = host.repo(args.str("repo")?)?;
    let commits: Vec<Value> = r
        .branch(branch)?
        .history
        .iter()
        .rev()
        .take(limit)
        .filter_map(|sha| r.commits.get(sha))
        .map(|c| json!({"sha": c.sha, "message": c.message, "author": c.author, "date": format_utc(c.date)}))
        .collect();
    ok(json!({ "commits": commits }))
}

fn get_commit(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let prefix = args.str("sha")?.to_lowercase();
    if prefix.len() < 4 {
        return Err(fail("give at least 4 characters of the sha"));
    }
    let host = lock(&world.github);
    let r = host.repo(args.str("repo")?)?;
    let found: Vec<&Commit> = r
        .commits
        .values()
        .filter(|c| c.sha.starts_with(&prefix))
        .collect();
    let commit = match found.as_slice() {
        [one] => *one,
        [] => {
            return Err(not_found(
                "commit",
                &prefix,
                "list commits with list_commits",
            ));
        }
        _ => {
            return Err(fail(format!(
                "sha prefix {prefix} is ambiguous; give more characters"
            )));
        }
    };
    let branches: Vec<&String> = r
        .branches
        .iter()
        .filter(|(_, b)| b.history.contains(&commit.sha))
        .map(|(n, _)| n)
        .collect();
    ok(
        json!({"sha": commit.sha, "message": commit.message, "author": commit.author, "date": format_utc(commit.date), "files": commit.files, "branches": branches}),
    )
}

fn compare_branches(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let base = args.str_or("base", "main")?;
    let head = args.str("head")?;
    let host = lock(&world.github);
    let r = host.repo(args.str("repo")?)?;
    let (b, h) = (r.branch(base)?, r.branch(head)?);
    let ahead: Vec<&String> = h
        .history
        .iter()
        .filter(|s| !b.history.contains(s))
        .collect();
    let behind = b.history.iter().filter(|s| !h.history.contains(s)).count();
    let messages: Vec<String> = ahead
        .iter()
        .filter_map(|s| r.commits.get(*s))
        .map(|c| c.message.clone())
        .collect();
    ok(
        json!({"base": base, "head": head, "ahead_by": ahead.len(), "behind_by": behind, "commits": messages}),
    )
}

fn create_issue(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let full = args.str("repo")?;
    let title = args.str("title")?.trim();
    if title.is_empty() {
        return Err(fail("title must not be empty"));
    }
    let mut host = lock(&world.github);
    let r = host.repo_mut(full)?;
    let number = r.next_number;
    r.next_number += 1;
    let issue = Issue {
        number,
        title: title.to_string(),
        body: args.str_or("body", "")?.to_string(),
        open: true,
        author: ME.to_string(),
        labels: args.opt_str_list("labels")?.unwrap_or_default(),
        assignees: Vec::new(),
        comments: Vec::new(),
    };
    let details = json!({"issue": issue.to_json(), "url": url(full, "issues", number)});
    r.issues.insert(number, issue);
    ok(details)
}

fn list_issues(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let state = args.str_or("state", "open")?;
    let label = args.opt_str("label")?;
    let host = lock(&world.github);
    let r = host.repo(args.str("repo")?)?;
    let issues = r
        .issues
        .values()
        .rev()
        .filter(|i| match state {
            "open" => i.open,
            "closed" => !i.open,
            _ => true,
        })
        .filter(|i| tagged(&i.labels, label));
    ok(listed("issues", issues.map(Issue::to_json)))
}

fn get_issue(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let mut host = lock(&world.github);
    let issue = host.repo_mut(args.str("repo")?)?.issue_mut(n)?;
    ok(json!({"issue": issue.to_json(), "body": issue.body}))
}

fn update_issue(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let (title, body) = (args.opt_str("title")?, args.opt_str("body")?);
    let mut host = lock(&world.github);
    let issue = host.repo_mut(args.str("repo")?)?.issue_mut(n)?;
    let mut changed = Vec::new();
    if let Some(t) = title {
        issue.title = t.to_string();
        changed.push("title");
    }
    if let Some(b) = body {
        issue.body = b.to_string();
        changed.push("body");
    }
    let details = json!({"issue": issue.to_json(), "changed": changed});
    if changed.is_empty() {
        return ok_text(
            details,
            "Nothing changed: pass title or body to edit the issue.",
        );
    }
    ok(details)
}

fn close_issue(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let reason = args.str_or("reason", "completed")?;
    let mut host = lock(&world.github);
    let issue = host.repo_mut(args.str("repo")?)?.issue_mut(n)?;
    if !issue.open {
        return Err(fail(format!("issue #{n} is already closed")));
    }
    issue.open = false;
    if reason == "not_planned" && !issue.labels.iter().any(|l| l == "wontfix") {
        issue.labels.push("wontfix".to_string());
    }
    ok(json!({"issue": issue.to_json()}))
}

fn reopen_issue(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let mut host = lock(&world.github);
    let issue = host.repo_mut(args.str("repo")?)?.issue_mut(n)?;
    if issue.open {
        return Err(fail(format!("issue #{n} is already open")));
    }
    issue.open = true;
    ok(json!({"issue": issue.to_json()}))
}

fn comment_on_issue(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let body = args.str("body")?;
    let mut host = lock(&world.github);
    let id = host.next_comment;
    host.next_comment += 1;
    let comment = Comment {
        id,
        author: ME.to_string(),
        body: body.to_string(),
        created_at: DEMO_NOW,
    };
    let details = comment.to_json();
    let r = host.repo_mut(args.str("repo")?)?;
    let (kind, count) = if let Some(issue) = r.issues.get_mut(&n) {
        issue.comments.push(comment);
        ("issue", issue.comments.len())
    } else if let Some(pull) = r.pulls.get_mut(&n) {
        pull.comments.push(comment);
        ("pull_request", pull.comments.len())
    } else {
        return Err(not_found(
            "issue or pull request",
            &format!("#{n}"),
            "list them with list_issues",
        ));
    };
    ok(json!({"comment": details, "on": kind, "number": n, "comments": count}))
}

fn list_issue_comments(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let mut host = lock(&world.github);
    let issue = host.repo_mut(args.str("repo")?)?.issue_mut(n)?;
    ok(json!({"comments": issue.comments.iter().map(Comment::to_json).collect::<Vec<_>>()}))
}

fn add_issue_labels(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let labels = args.str_list("labels")?;
    let mut host = lock(&world.github);
    let issue = host.repo_mut(args.str("repo")?)?.issue_mut(n)?;
    for label in labels {
        if !issue.labels.contains(&label) {
            issue.labels.push(label);
        }
    }
    ok(json!({"issue": issue.to_json()}))
}

fn assign_issue(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let people = args.str_list("assignees")?;
    if people.len() > 10 {
        return Err(fail("at most 10 assignees"));
    }
    let mut host = lock(&world.github);
    let issue = host.repo_mut(args.str("repo")?)?.issue_mut(n)?;
    let mut added = Vec::new();
    for person in people {
        if !issue.assignees.contains(&person) {
            issue.assignees.push(person.clone());
            added.push(person);
        }
    }
    ok(json!({"issue": issue.to_json(), "newly_assigned": added}))
}

fn search_issues(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    let state = args.str_or("state", "all")?;
    let host = lock(&world.github);
    let mut items = Vec::new();
    for (full, r) in &host.repos {
        for i in r.issues.values() {
            let s = if i.open { "open" } else { "closed" };
            if (state == "all" || state == s)
                && matches_all(&format!("{} {}", i.title, i.body), query)
            {
                items.push(json!({"repo": full, "number": i.number, "title": i.title, "state": s, "kind": "issue"}));
            }
        }
        for p in r.pulls.values() {
            let s = if p.state == "open" { "open" } else { "closed" };
            if (state == "all" || state == s)
                && matches_all(&format!("{} {}", p.title, p.body), query)
            {
                items.push(json!({"repo": full, "number": p.number, "title": p.title, "state": p.state, "kind": "pull_request"}));
            }
        }
    }
    ok(listed("items", items))
}

fn create_pull_request(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let full = args.str("repo")?;
    let title = args.str("title")?;
    let head = args.str("head")?;
    let base = args.str_or("base", "main")?;
    if head == base {
        return Err(fail("head and base must be different branches"));
    }
    let mut host = lock(&world.github);
    let r = host.repo_mut(full)?;
    let (h, b) = (r.branch(head)?, r.branch(base)?);
    let ahead: Vec<String> = h
        .history
        .iter()
        .filter(|s| !b.history.contains(s))
        .cloned()
        .collect();
    if ahead.is_empty() {
        return Err(fail(format!(
            "{head} has no commits that {base} lacks; nothing to merge"
        )));
    }
    if let Some(existing) = r
        .pulls
        .values()
        .find(|p| p.head == head && p.base == base && p.state == "open")
    {
        return Err(fail(format!(
            "pull request #{} already proposes {head} into {base}",
            existing.number
        )));
    }
    let changed: Vec<(String, u64, u64)> = h
        .files
        .iter()
        .filter(|(path, content)| b.files.get(*path) != Some(*content))
        .map(|(path, content)| {
            let old = b.files.get(path).map_or(0, |c| c.lines().count() as u64);
            (path.clone(), content.lines().count() as u64, old)
        })
        .collect();
    let number = r.next_number;
    r.next_number += 1;
    let pull = PullRequest {
        number,
        title: title.to_string(),
        body: args.str_or("body", "")?.to_string(),
        state: "open",
        author: ME.to_string(),
        head: head.to_string(),
        base: base.to_string(),
        draft: args.bool_or("draft", false)?,
        reviews: Vec::new(),
        files: changed,
        comments: Vec::new(),
    };
    let details = json!({"pull_request": pull.to_json(), "url": url(full, "pull", number)});
    r.pulls.insert(number, pull);
    ok(details)
}

fn list_pull_requests(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let state = args.str_or("state", "open")?;
    let host = lock(&world.github);
    let r = host.repo(args.str("repo")?)?;
    let pulls = r
        .pulls
        .values()
        .rev()
        .filter(|p| state == "all" || p.state == state);
    ok(listed("pull_requests", pulls.map(PullRequest::to_json)))
}

fn get_pull_request(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let mut host = lock(&world.github);
    let p = host.repo_mut(args.str("repo")?)?.pull_mut(n)?;
    let reviews: Vec<Value> = p
        .reviews
        .iter()
        .map(|(r, v)| json!({"reviewer": r, "verdict": v}))
        .collect();
    ok(json!({"pull_request": p.to_json(), "reviews": reviews, "files_changed": p.files.len()}))
}

fn merge_pull_request(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let method = args.str_or("method", "squash")?;
    let mut host = lock(&world.github);
    let r = host.repo_mut(args.str("repo")?)?;
    let pull = r.pull_mut(n)?.clone();
    if pull.state != "open" {
        return Err(fail(format!(
            "pull request #{n} is {}, not open",
            pull.state
        )));
    }
    if pull.draft {
        return Err(fail(format!(
            "pull request #{n} is a draft; mark it ready first"
        )));
    }
    if pull.reviews.iter().any(|(_, v)| v == "request_changes") {
        return Err(fail(format!(
            "pull request #{n} has requested changes; address the review first"
        )));
    }
    let head = r.branch(&pull.head)?.clone();
    let base = r.branch(&pull.base)?.clone();
    let new_commits: Vec<String> = head
        .history
        .iter()
        .filter(|s| !base.history.contains(s))
        .cloned()
        .collect();
    let mut merged_files = base.files.clone();
    merged_files.extend(head.files.clone());
    let sha = match method {
        "squash" => {
            let files: Vec<String> = pull.files.iter().map(|(p, _, _)| p.clone()).collect();
            r.add_commit(&pull.base, &format!("{} (#{n})", pull.title), ME, files)?
        }
        "rebase" | "merge" => {
            if let Some(b) = r.branches.get_mut(&pull.base) {
                b.history.extend(new_commits.iter().cloned());
            }
            if method == "merge" {
                r.add_commit(
                    &pull.base,
                    &format!("Merge pull request #{n} from {}", pull.head),
                    ME,
                    Vec::new(),
                )?
            } else {
                r.branch(&pull.base)?.head().to_string()
            }
        }
        other => {
            return Err(fail(format!(
                "method must be merge, squash or rebase, got {other:?}"
            )));
        }
    };
    if let Some(b) = r.branches.get_mut(&pull.base) {
        b.files = merged_files;
    }
    let closes: Vec<u64> = r
        .issues
        .values_mut()
        .filter(|i| i.open && pull.body.contains(&format!("Closes #{}", i.number)))
        .map(|i| {
            i.open = false;
            i.number
        })
        .collect();
    let p = r.pull_mut(n)?;
    p.state = "merged";
    ok(
        json!({"merged": true, "sha": sha, "method": method, "pull_request": p.to_json(), "closed_issues": closes}),
    )
}

fn review_pull_request(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let verdict = args.str("verdict")?;
    if !["approve", "request_changes", "comment"].contains(&verdict) {
        return Err(fail("verdict must be approve, request_changes or comment"));
    }
    let body = args.str_or("body", "")?;
    let mut host = lock(&world.github);
    let p = host.repo_mut(args.str("repo")?)?.pull_mut(n)?;
    if p.state != "open" {
        return Err(fail(format!(
            "pull request #{n} is {}; only open ones can be reviewed",
            p.state
        )));
    }
    if p.author == ME && verdict == "approve" {
        return Err(fail("you cannot approve your own pull request"));
    }
    p.reviews.push((ME.to_string(), verdict.to_string()));
    ok(
        json!({"review": {"reviewer": ME, "verdict": verdict, "body": body}, "pull_request": p.to_json(), "reviews": p.reviews.len()}),
    )
}

fn list_pr_files(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let n = number(args)?;
    let mut host = lock(&world.github);
    let p = host.repo_mut(args.str("repo")?)?.pull_mut(n)?;
    let files: Vec<Value> = p
        .files
        .iter()
        .map(|(path, a, d)| json!({"path": path, "additions": a, "deletions": d}))
        .collect();
    ok(json!({ "files": files }))
}

fn create_release(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let tag = args.str("tag")?;
    let mut host = lock(&world.github);
    let r = host.repo_mut(args.str("repo")?)?;
    if r.releases.iter().any(|rel| rel.tag == tag) {
        return Err(fail(format!("release {tag} already exists")));
    }
    let target = r.branch(&r.default_branch.clone())?.head().to_string();
    let release = Release {
        tag: tag.to_string(),
        name: args
            .str_or("name", tag.trim_start_matches('v'))?
            .to_string(),
        notes: args.str_or("notes", "")?.to_string(),
        published_at: DEMO_NOW,
        prerelease: args.bool_or("prerelease", false)?,
        target_sha: target,
    };
    let details = release.to_json();
    r.releases.push(release);
    ok(details)
}

fn list_releases(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let host = lock(&world.github);
    let r = host.repo(args.str("repo")?)?;
    let mut releases: Vec<&Release> = r.releases.iter().collect();
    releases.sort_by_key(|r| std::cmp::Reverse(r.published_at));
    ok(json!({"releases": releases.iter().map(|r| r.to_json()).collect::<Vec<_>>()}))
}

fn get_latest_release(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let full = args.str("repo")?;
    let host = lock(&world.github);
    let r = host.repo(full)?;
    let latest = r
        .releases
        .iter()
        .filter(|r| !r.prerelease)
        .max_by_key(|r| r.published_at)
        .ok_or_else(|| {
            not_found(
                "release",
                full,
                "this repository has no published release yet",
            )
        })?;
    ok(json!({"release": latest.to_json(), "notes": latest.notes}))
}

fn search_code(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let query = args.str("query")?;
    if query.chars().count() < 2 {
        return Err(fail("query must be at least 2 characters"));
    }
    let only = args.opt_str("repo")?;
    let needle = query.to_lowercase();
    let host = lock(&world.github);
    if let Some(full) = only {
        host.repo(full)?;
    }
    let mut matches = Vec::new();
    for (full, r) in host
        .repos
        .iter()
        .filter(|(f, _)| only.is_none_or(|o| o == f.as_str()))
    {
        let Ok(branch) = r.branch(&r.default_branch) else {
            continue;
        };
        for (path, content) in &branch.files {
            for (i, line) in content.lines().enumerate() {
                if line.to_lowercase().contains(&needle) {
                    matches.push(
                        json!({"repo": full, "path": path, "line": i + 1, "text": line.trim()}),
                    );
                }
            }
        }
    }
    let total = matches.len();
    matches.truncate(50);
    ok(json!({"matches": matches, "total": total}))
}

fn list_contributors(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let host = lock(&world.github);
    let r = host.repo(args.str("repo")?)?;
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for c in r.commits.values() {
        *counts.entry(c.author.as_str()).or_default() += 1;
    }
    let mut list: Vec<(&str, usize)> = counts.into_iter().collect();
    list.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    ok(
        json!({"contributors": list.iter().map(|(login, commits)| json!({"login": login, "commits": commits})).collect::<Vec<_>>()}),
    )
}

fn run_json(run: &Run) -> Value {
    json!({"id": run.id, "workflow": run.workflow, "branch": run.branch, "status": run.status, "conclusion": run.conclusion, "started_at": format_utc(run.started_at)})
}

fn get_workflow_runs(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let branch = args.opt_str("branch")?;
    let host = lock(&world.github);
    let r = host.repo(args.str("repo")?)?;
    let runs: Vec<Value> = r
        .runs
        .iter()
        .rev()
        .filter(|run| branch.is_none_or(|b| run.branch == b))
        .map(run_json)
        .collect();
    ok(
        json!({"runs": runs, "failing": r.runs.iter().filter(|run| run.conclusion == Some("failure")).count()}),
    )
}

fn rerun_workflow(world: &DemoWorld, args: &Args<'_>) -> Reply {
    let id = args.i64("run_id")?;
    let mut host = lock(&world.github);
    let new_id = host.next_run;
    let r = host.repo_mut(args.str("repo")?)?;
    let original = r
        .runs
        .iter()
        .find(|run| i64::try_from(run.id).ok() == Some(id))
        .cloned()
        .ok_or_else(|| {
            not_found(
                "workflow run",
                &id.to_string(),
                "list runs with get_workflow_runs",
            )
        })?;
    if original.status != "completed" {
        return Err(fail(format!("run {id} is still {}", original.status)));
    }
    let run = Run {
        id: new_id,
        workflow: original.workflow.clone(),
        branch: original.branch.clone(),
        status: "queued",
        conclusion: None,
        started_at: DEMO_NOW,
    };
    let details = json!({"rerun_of": original.id, "run": run_json(&run)});
    r.runs.push(run);
    host.next_run += 1;
    ok(details)
}
