//! The spending ledger written by several real processes at once: every
//! addition survives (lock + read-modify-write) and no reader ever sees a
//! torn file (atomic rename). The processes are this test binary re-run as
//! children (`ledger_child`), each adding many times.

use session_index::model::spend::{self, Kind};

const CHILD_ENV: &str = "SESSION_INDEX_LEDGER_CHILD";
const PROCESSES: usize = 6;
const ADDS: usize = 40;

/// In a child process: add 0.125 (exact in binary) `ADDS` times, alternating kinds.
#[test]
fn ledger_child() {
    let Ok(dir) = std::env::var(CHILD_ENV) else {
        return;
    };
    for i in 0..ADDS {
        let kind = if i % 2 == 0 {
            Kind::Indexing
        } else {
            Kind::Queries
        };
        spend::add(std::path::Path::new(&dir), kind, 0.125).expect("add");
    }
}

#[test]
fn concurrent_processes_lose_no_addition_and_never_tear_the_ledger() {
    let dir = tempfile::tempdir().unwrap();
    let meta_dir = dir.path().join("sessions-meta");
    let children: Vec<_> = (0..PROCESSES)
        .map(|_| {
            crate::support::this_test_binary(&crate::support::test_name(
                module_path!(),
                "ledger_child",
            ))
            .arg("--quiet")
            .env(CHILD_ENV, &meta_dir)
            .spawn()
            .expect("spawn a child")
        })
        .collect();
    // Read while they write: a torn document would fail to parse.
    let mut reads = 0;
    while !meta_dir.join(spend::LEDGER_FILE).exists() {
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
    for _ in 0..200 {
        let bytes = std::fs::read(meta_dir.join(spend::LEDGER_FILE)).unwrap();
        serde_json::from_slice::<spend::Ledger>(&bytes).expect("a complete ledger document");
        reads += 1;
    }
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    let ledger = spend::read(&meta_dir).unwrap();
    let each = (PROCESSES * ADDS / 2) as f64 * 0.125;
    assert_eq!(
        ledger.total,
        spend::Spent {
            indexing: each,
            queries: each
        },
        "after {reads} reads"
    );
    assert_eq!(ledger.today(), ledger.total);
    let names: Vec<String> = std::fs::read_dir(&meta_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names
            .iter()
            .all(|n| n == spend::LEDGER_FILE || n == ".spending.json.lock"),
        "no temp file left: {names:?}"
    );
}

// ------------------------------------------------- the cap across processes

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use crate::support::mock_provider::{MockProvider, Reply, Wire};
use crate::support::summarize::{Scratch, JWT, RATE_LIMITER};
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_session-index");
const JWT_ID: &str = "01a200f2-9f17-727b-b6a3-41610f73ac8c";

/// A scratch agent dir whose only model is `mock/paid` at `price` (USD per
/// million input, output tokens), its key in `$MOCK_KEY`, under `cap`.
fn paid_config(s: &Scratch, mock: &MockProvider, price: (f64, f64), cap: Option<f64>) -> PathBuf {
    let mut provider = mock.provider_config();
    provider["apiKeyEnv"] = "MOCK_KEY".into();
    let config = json!({
        "modelKeys": ["mock/paid"], "providers": {"mock": provider},
        "useHostModels": false, "offlineFallback": true,
        "prices": {"mock/paid": {"inputPerMtok": price.0, "outputPerMtok": price.1}},
        "spending": {"dailyCapUsd": cap},
    });
    let path = s.dir.path().join("config.json");
    std::fs::write(&path, config.to_string()).unwrap();
    path
}

/// `session-index index --all` with `config` and `$MOCK_KEY`.
fn index_all(s: &Scratch, config: &Path, args: &[&str]) -> Output {
    Command::new(BIN)
        .args(["index", "--all", "--yes", "--agent-dir"])
        .arg(&s.agent_dir)
        .arg("--config")
        .arg(config)
        .args(args)
        .env("MOCK_KEY", "sk-mock")
        .output()
        .unwrap()
}

fn today(meta_dir: &Path) -> f64 {
    spend::read(meta_dir).unwrap().today().total()
}

/// Issue 24: cap $0.50 with $0.45 spent, six `query_session` calls in six
/// processes at once (the real cdylib in `pi-ext-host tool`). Each answer
/// costs $0.011 (1,000 tokens in, 1,000 out at $1/$10 per million), so six
/// would pass the cap; the model replies slowly, so all six are in flight
/// together.
#[test]
fn parallel_query_processes_never_pass_the_daily_cap() {
    let s = Scratch::new(RATE_LIMITER);
    let project = s.session_file.parent().unwrap();
    std::fs::copy(
        crate::support::summarize::examples_dir().join(JWT),
        project.join(JWT),
    )
    .unwrap();
    let mock = MockProvider::start(Wire::OpenAi);
    let answer = r#"{"answerMarkdown":"Refresh tokens rotate.","confidence":"low","citations":[]}"#;
    for _ in 0..6 {
        mock.push(
            Reply::answer(answer)
                .usage(1000, 1000)
                .delay(Duration::from_millis(400)),
        );
    }
    let config = paid_config(&s, &mock, (1.0, 10.0), Some(0.50));
    let meta_dir = s.agent_dir.join("sessions-meta");
    spend::add(&meta_dir, Kind::Queries, 0.45).unwrap();
    let params = json!({"session": JWT_ID, "question": "How are refresh tokens handled?"});
    let children: Vec<_> = (0..6)
        .map(|_| {
            crate::support::plugin::host_command(&s.agent_dir, &config)
                .args(["tool", "query_session", "--session"])
                .arg(&s.session_file)
                .arg(params.to_string())
                .env("MOCK_KEY", "sk-mock")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().unwrap())
        .collect();
    let mut offline = 0;
    for output in &outputs {
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        offline += usize::from(report["result"]["details"]["offline"] == true);
    }
    let paid = mock.requests().len();
    let request_bytes = mock.requests()[0].body.len();
    assert!(
        request_bytes >= 1000,
        "the usage the mock reports is honest: {request_bytes} bytes sent"
    );
    let spent = today(&meta_dir);
    println!("6 parallel query processes: {paid} paid calls, {offline} answered offline, today ${spent:.4} of $0.50");
    assert!(spent <= 0.50 + 1e-9, "the cap was passed: ${spent}");
    assert!(paid >= 1, "a call that fits is made");
    assert_eq!(paid + offline, 6);
    assert!(
        (spent - (0.45 + 0.011 * paid as f64)).abs() < 1e-9,
        "every paid call is recorded: {spent}"
    );
    assert!(
        spend::read(&meta_dir).unwrap().reserved.is_empty(),
        "every hold settled"
    );
}

/// `session-index index` spends under the cap and records what it spent,
/// like pi: six sessions at $0.036 each under a $0.20 cap.
#[test]
fn the_cli_index_honours_and_records_the_daily_cap() {
    let s = Scratch::new(RATE_LIMITER);
    s.copies("0c000000", 5);
    let mock = MockProvider::start(Wire::OpenAi);
    for i in 0..6 {
        let answer = crate::support::summarize::answer(&format!("Rate limiter copy {i}"));
        mock.push(Reply::answer_json(&answer).usage(3000, 1500));
    }
    let config = paid_config(&s, &mock, (2.0, 20.0), Some(0.20));
    let output = index_all(&s, &config, &["--json"]);
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let meta_dir = s.agent_dir.join("sessions-meta");
    let spent = today(&meta_dir);
    let paid = mock.requests().len();
    assert!(mock.requests()[0].body.len() >= 3000, "honest usage");
    println!("CLI index under a $0.20 cap: {paid} paid, today ${spent:.4}");
    assert!(spent <= 0.20 + 1e-9, "the cap was passed: ${spent}");
    assert!(paid >= 1);
    assert!(
        (spent - 0.036 * paid as f64).abs() < 1e-9,
        "recorded: ${spent} for {paid} calls"
    );
    let skipped = report["skipped"].as_array().unwrap();
    assert_eq!(report["indexed"].as_array().unwrap().len(), paid);
    assert_eq!(skipped.len(), 6 - paid, "{report}");
    let reason = skipped[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("spending cap") && reason.contains("--over-cap"),
        "{reason}"
    );

    // --over-cap spends anyway, and records it.
    let output = index_all(&s, &config, &["--over-cap"]);
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(mock.requests().len(), 6);
    assert!((today(&meta_dir) - 0.216).abs() < 1e-9);
}

/// A damaged ledger is kept aside, warned about once, and counts as the cap
/// reached: nothing is spent until the user deletes it.
#[test]
fn a_damaged_ledger_stops_spending_until_the_user_deletes_it() {
    let s = Scratch::new(RATE_LIMITER);
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(
        Reply::answer_json(&crate::support::summarize::answer("Rate limiter")).usage(100, 100),
    );
    let config = paid_config(&s, &mock, (1.0, 1.0), Some(5.0));
    let meta_dir = s.agent_dir.join("sessions-meta");
    std::fs::create_dir_all(&meta_dir).unwrap();
    std::fs::write(
        meta_dir.join(spend::LEDGER_FILE),
        r#"{"total": {"queries": NaN}}"#,
    )
    .unwrap();
    let index = || index_all(&s, &config, &[]);
    let first = index();
    let stderr = String::from_utf8_lossy(&first.stderr);
    let stdout = String::from_utf8_lossy(&first.stdout);
    assert!(
        mock.requests().is_empty(),
        "spent with an unknown ledger: {stdout}"
    );
    assert_eq!(
        stderr.matches("spending ledger was damaged").count(),
        1,
        "warned once: {stderr}"
    );
    assert!(stderr.contains("delete"), "says what to do: {stderr}");
    assert!(stdout.contains("today's spending is unknown"), "{stdout}");
    let kept: Vec<String> = std::fs::read_dir(&meta_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("spending.json.corrupt-"))
        .collect();
    assert_eq!(kept.len(), 1);
    // Still unknown in the next process, not warned again (nothing more was moved).
    let again = index();
    assert!(mock.requests().is_empty());
    assert!(!String::from_utf8_lossy(&again.stderr).contains("was damaged ("));
    // The user deletes it: spending resumes and is counted from zero.
    std::fs::remove_file(meta_dir.join(spend::LEDGER_FILE)).unwrap();
    assert!(index().status.success());
    assert_eq!(mock.requests().len(), 1);
    assert!((today(&meta_dir) - 0.0002).abs() < 1e-9);
}

/// Temp files a SIGKILL left (a meta's, the ledger's) are removed by the
/// next writer once older than a minute; younger ones may be a live writer's.
#[test]
fn the_next_writer_removes_temp_files_older_than_a_minute() {
    let s = Scratch::new(RATE_LIMITER);
    let meta_dir = s.agent_dir.join("sessions-meta");
    std::fs::create_dir_all(&meta_dir).unwrap();
    let old = std::time::SystemTime::now() - Duration::from_secs(120);
    let plant = |name: &str, modified: Option<std::time::SystemTime>| {
        let path = meta_dir.join(name);
        let file = std::fs::File::create(&path).unwrap();
        if let Some(modified) = modified {
            file.set_modified(modified).unwrap();
        }
        path
    };
    let stale = [
        plant(".0d000000-dead.meta.json.4242.0.tmp", Some(old)),
        plant(".spending.json.4242.tmp", Some(old)),
    ];
    let young = plant(".0d000000-live.meta.json.4243.0.tmp", None);
    let output = Command::new(BIN)
        .args(["index", "--offline", "--agent-dir"])
        .arg(&s.agent_dir)
        .arg(&s.session_file)
        .output()
        .unwrap();
    assert!(output.status.success());
    for path in &stale {
        assert!(!path.exists(), "{} left behind", path.display());
    }
    assert!(young.exists());
}
