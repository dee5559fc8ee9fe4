//! The task suite of `bench agent --tasks` without a model: the scripted mock provider plays
//! every task in every mode, well-behaved and as each small model, and the verdicts are the
//! suite's own (targets run with the right arguments, nonces quoted, no decoy, no wrong tool).

use toolsearch::lab::tasks::{
    SuiteProvider, TaskRun, mock_scenario, run_suite, run_task, run_task_recording, suite,
    summarize,
};
use toolsearch::lab::{MockProvider, SmallModel};
use toolsearch::{AgentOptions, Mode, ProviderConfig};

use crate::support::{BIN, rt};

const MODES: [Mode; 5] = [
    Mode::Direct,
    Mode::Tools,
    Mode::Directory,
    Mode::Code,
    Mode::Auto,
];

fn lenient() -> AgentOptions {
    AgentOptions {
        lenient: true,
        ..AgentOptions::default()
    }
}

fn play(small_model: Option<SmallModel>) -> Vec<TaskRun> {
    let provider = SuiteProvider::Scripted {
        small_model,
        text_calls: false,
    };
    rt().block_on(run_suite(
        &suite(),
        &MODES,
        &provider,
        &lenient(),
        BIN.as_ref(),
    ))
    .unwrap()
}

fn assert_all_succeeded(runs: &[TaskRun], label: &str) {
    assert_eq!(runs.len(), suite().len() * MODES.len(), "{label}");
    for run in runs {
        assert!(
            run.success,
            "{label}: {} in {} failed: stop {}, called {:?}, answer {:?}",
            run.task, run.mode, run.stop, run.called, run.answer
        );
        assert!(run.wrong_tools.is_empty(), "{label}: {run:?}");
        assert!(!run.decoy_ran, "{label}: {run:?}");
        assert!(run.target_ms.is_some(), "{label}: {run:?}");
    }
    for summary in summarize(runs) {
        assert_eq!(summary.success_rate, 1.0, "{label}: {summary:?}");
        assert_eq!(summary.tasks, suite().len());
        assert!(summary.prompt_tokens > 0 && summary.completion_tokens > 0);
    }
}

/// A well-behaved scripted model solves every task in every mode; the two dependent tasks take
/// two target calls, the second with the value only the first one's result holds.
#[test]
fn every_task_is_solvable_in_every_mode() {
    let runs = play(None);
    assert_all_succeeded(&runs, "well-behaved");
    for run in runs
        .iter()
        .filter(|r| r.task == "release-then-commit" && r.mode == "tools")
    {
        assert_eq!(
            run.called.iter().filter(|c| *c == "tool_call").count(),
            2,
            "{run:?}"
        );
    }
}

/// Each small-model behaviour still completes every task (lenient parsing on), and calls in
/// the wrong shape are recovered where the mode makes them wrong.
#[test]
fn every_small_model_behaviour_completes_the_suite() {
    for model in SmallModel::ALL {
        let runs = play(Some(model));
        assert_all_succeeded(&runs, model.as_str());
        if model == SmallModel::RepeatsSearch {
            // Nothing in the wrong shape: each code-mode run searched, repeated the search and
            // still called its target (the answer to the repeat named it).
            for run in runs.iter().filter(|r| r.chosen_mode == "code") {
                let cells = run
                    .called
                    .iter()
                    .filter(|name| *name == "tool_search_code")
                    .count();
                assert!(cells >= 3, "{}: {:?}", run.task, run.called);
            }
            continue;
        }
        let recovered: usize = runs
            .iter()
            .filter(|r| r.mode == "code")
            .map(|r| r.recovered_calls)
            .sum();
        assert!(
            recovered > 0,
            "{}: nothing recovered in code mode",
            model.as_str()
        );
    }
}

/// A model that calls a wrong tool never counts as a success, whatever it answers: here the
/// scripted model is given another task's script (it stars a repository where the task asks
/// for a release), and the verdict lists the wrong tool it ran.
#[test]
fn a_wrong_tool_is_never_a_success() {
    let rt = rt();
    let tasks = suite();
    let asked = tasks.iter().find(|t| t.name == "latest-release").unwrap();
    let played = tasks.iter().find(|t| t.name == "star-exact-name").unwrap();
    for mode in [Mode::Tools, Mode::Code] {
        let run = rt.block_on(async {
            let mock = MockProvider::start(
                ([127, 0, 0, 1], 0).into(),
                mock_scenario(played, None, false),
            )
            .await
            .unwrap();
            let provider =
                SuiteProvider::External(ProviderConfig::new(mock.url(), "toolsearch-mock"));
            let run = run_task(asked, mode, &provider, &lenient(), BIN.as_ref())
                .await
                .unwrap();
            mock.shutdown().await;
            run
        });
        assert!(!run.success, "{mode}: {run:?}");
        assert_eq!(
            run.wrong_tools,
            ["mcp:github-mcp-server:star_repository"],
            "{mode}"
        );
        assert_eq!(run.target_ms, None, "{mode}");
        assert_eq!(run.stop, "answered", "{mode}");
    }
}

/// The denied decoy is invisible: a model asking for it by its exact name gets the same error
/// as for a tool that does not exist, and nothing runs.
#[test]
fn the_denied_decoy_never_runs() {
    let tasks = suite();
    let task = tasks
        .iter()
        .find(|t| t.name == "release-order-denied-decoy")
        .unwrap();
    let mut decoy_task = task.clone();
    // The script goes for the decoy by name.
    decoy_task.steps[0].target = task.denied[0].clone();
    let rt = rt();
    for mode in [Mode::Tools, Mode::Code, Mode::Directory] {
        let run = rt.block_on(async {
            let mock = MockProvider::start(
                ([127, 0, 0, 1], 0).into(),
                mock_scenario(&decoy_task, None, false),
            )
            .await
            .unwrap();
            let provider =
                SuiteProvider::External(ProviderConfig::new(mock.url(), "toolsearch-mock"));
            let run = run_task(task, mode, &provider, &lenient(), BIN.as_ref())
                .await
                .unwrap();
            mock.shutdown().await;
            run
        });
        assert!(!run.success, "{mode}: {run:?}");
        assert!(!run.decoy_ran, "{mode}: {run:?}");
        assert!(run.wrong_tools.is_empty(), "{mode}: {run:?}");
    }
}

/// The processes whose command line names `path` (a stub MCP server and its supervisor name
/// their record file).
fn processes_naming(path: &std::path::Path) -> Vec<String> {
    let needle = path.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) {
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains(&needle) {
                found.push(cmdline);
            }
        }
    }
    found
}

/// Waits (bounded) until no process names `path`.
fn assert_no_process_names(path: &std::path::Path) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let left = processes_naming(path);
        if left.is_empty() {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "stub processes outlived the run: {left:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// The calls one stub MCP server recorded.
fn records(dir: &std::path::Path, server: &str) -> Vec<serde_json::Value> {
    std::fs::read_to_string(dir.join(format!("{server}.jsonl")))
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// A GithubNpm task's tools are served by stub MCP servers, child processes of the binary
/// reached through the product's MCP client: the targets' calls are in their server's record,
/// made by another process (the second with the value the first one's answer yielded), the
/// verdict counts them; a wrong tool that ran there is listed and never counted; and no stub
/// process outlives its run.
#[test]
fn github_npm_tools_run_in_the_stub_mcp_server() {
    let rt = rt();
    let tasks = suite();
    let task = tasks
        .iter()
        .find(|t| t.name == "release-then-commit")
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let provider = SuiteProvider::Scripted {
        small_model: None,
        text_calls: false,
    };
    let run = rt
        .block_on(run_task_recording(
            task,
            Mode::Tools,
            &provider,
            &lenient(),
            BIN.as_ref(),
            dir.path(),
        ))
        .unwrap();
    assert!(run.success, "{run:?}");
    assert!(run.wrong_tools.is_empty(), "{run:?}");
    let calls = records(dir.path(), "github-mcp-server");
    let tools: Vec<&str> = calls.iter().map(|c| c["tool"].as_str().unwrap()).collect();
    assert_eq!(tools, ["get_latest_release", "get_commit"], "{calls:?}");
    assert_eq!(
        calls[1]["arguments"]["sha"], "9f3c2a17b0d54e1a",
        "{calls:?}"
    );
    for call in &calls {
        assert!(call["nonce"].as_str().unwrap().starts_with("CONF-"));
        assert_ne!(call["pid"], std::process::id(), "{call:?}");
    }
    assert!(records(dir.path(), "server-slack").is_empty());
    assert_no_process_names(dir.path());

    // The star script played on the release task: the wrong tool runs in the stub server and
    // is listed, never counted.
    let asked = tasks.iter().find(|t| t.name == "latest-release").unwrap();
    let played = tasks.iter().find(|t| t.name == "star-exact-name").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let run = rt.block_on(async {
        let mock = MockProvider::start(
            ([127, 0, 0, 1], 0).into(),
            mock_scenario(played, None, false),
        )
        .await
        .unwrap();
        let provider = SuiteProvider::External(ProviderConfig::new(mock.url(), "toolsearch-mock"));
        let run = run_task_recording(
            asked,
            Mode::Tools,
            &provider,
            &lenient(),
            BIN.as_ref(),
            dir.path(),
        )
        .await
        .unwrap();
        mock.shutdown().await;
        run
    });
    assert!(!run.success, "{run:?}");
    assert_eq!(run.wrong_tools, ["mcp:github-mcp-server:star_repository"]);
    let calls = records(dir.path(), "github-mcp-server");
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0]["tool"], "star_repository");
    assert_eq!(calls[0]["arguments"]["repo"], "json");
    assert_no_process_names(dir.path());
}
