//! Files that are not what they claim, through the real cdylib and the CLI:
//! a FIFO named `*.jsonl` in the sessions directory and `<id>.meta.json` in
//! sessions-meta, and symlinks leading out of both. Nothing may hang (every
//! scenario runs under a deadline), nothing outside the sessions directory
//! may be read, and no outside text may reach a meta file.
#![cfg(unix)]

use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use crate::support::plugin::{event_on, tool_on};
use crate::support::synth::{Agent, Synth};
use pi_ext_abi::protocol::SessionContext;
use pi_ext_host::PluginInstance;
use serde_json::{json, Value};

const BIN: &str = env!("CARGO_BIN_EXE_session-index");
const DEADLINE: Duration = Duration::from_secs(90);
const CURRENT_ID: &str = "64ddb985-5b6b-4d0c-854b-e8300d86dee4";
const FIFO_ID: &str = "0f1f0000-0000-4000-8000-00000000f1f0";
const OUTSIDE_ID: &str = "0e000000-0000-4000-8000-00000000e0e0";
const OUTSIDE_NAME: &str = "Outside secret plans";

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o600) },
        0,
        "mkfifo {}",
        path.display()
    );
}

/// An agent dir holding: two real sessions, a FIFO session file, a FIFO as
/// the current session's meta file, and symlinks to a session and a meta
/// file outside the agent dir. Returns (agent, outside dir, current session).
fn hostile_agent() -> (Agent, Agent, std::path::PathBuf) {
    let a = Agent::new();
    let current = a.copy_fixture(&format!("real/2026-02-19T13-30-29-055Z_{CURRENT_ID}.jsonl"));
    let branch = a.copy_fixture("generated/branch-summary-2026-11-22T01-22-32-496Z.jsonl");
    let project = branch.parent().unwrap().to_path_buf();
    mkfifo(&project.join(format!("2026-02-21T00-00-00-000Z_{FIFO_ID}.jsonl")));
    mkfifo(&a.meta_dir().join(format!("{CURRENT_ID}.meta.json")));
    mkfifo(&a.meta_dir().join(format!("{FIFO_ID}.meta.json")));

    let outside = Agent::new();
    let secret = outside.session(
        &Synth::new(OUTSIDE_ID, "/out")
            .name(OUTSIDE_NAME)
            .user(&["the outside secret"]),
    );
    std::os::unix::fs::symlink(
        &secret,
        project.join(format!("2026-02-22T00-00-00-000Z_{OUTSIDE_ID}.jsonl")),
    )
    .unwrap();
    outside.meta(
        OUTSIDE_ID,
        OUTSIDE_NAME,
        "outside",
        &[],
        "outside summary",
        &secret,
    );
    // An outside meta file claiming a real session of this agent dir.
    outside.meta(
        "01a200d9-05af-72e1-a418-11f8875a7958",
        "Outside meta name",
        "x",
        &[],
        "x",
        &branch,
    );
    for id in [OUTSIDE_ID, "01a200d9-05af-72e1-a418-11f8875a7958"] {
        let name = format!("{id}.meta.json");
        std::os::unix::fs::symlink(outside.meta_dir().join(&name), a.meta_dir().join(&name))
            .unwrap();
    }
    (a, outside, current)
}

/// Run `f` on its own thread; fail (instead of hanging) past the deadline.
fn within_deadline<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(DEADLINE)
        .unwrap_or_else(|_| panic!("{what} did not finish within {DEADLINE:?}"))
}

fn run_cli(args: &[&str], agent: &Path) -> Output {
    let mut child = Command::new(BIN)
        .args(args)
        .arg("--agent-dir")
        .arg(agent)
        .env("HOME", agent)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn session-index");
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > DEADLINE {
            let _ = child.kill();
            panic!("session-index {args:?} did not finish within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().unwrap()
}

fn query(
    instance: &PluginInstance,
    ctx: &SessionContext,
    session: &str,
) -> pi_ext_abi::protocol::ToolResult {
    let params = json!({"session": session, "question": "What was decided?"});
    tool_on(instance, ctx, "query_session", params)
}

#[test]
fn the_plugin_reads_only_regular_files_inside_its_directories() {
    let (a, outside, current) = hostile_agent();
    let agent_dir = a.dir.clone();
    let (effects, refs, by_name, fifo_query, outside_query) = within_deadline(
        "the plugin scenario",
        move || {
            let ctx = pi_ext_host::session_context(&current, None, &agent_dir, None).unwrap();
            let config = r#"{"modelKeys":["local/extractive"],"minNewUserMessages":1,"query":{"maxCallsPerTurn":10},"references":{"maxRefsPerPrompt":5}}"#;
            let (instance, host) = crate::support::plugin::instance(&ctx, config);
            assert_eq!(
                event_on(
                    &instance,
                    &ctx,
                    "session_start",
                    json!({"reason": "startup"})
                ),
                Value::Null
            );
            assert!(
                instance.flush(Duration::from_secs(60)).idle,
                "the catalog build finished"
            );
            let prompt =
                format!("See @@0f1f0000 and @@0e000000 and @@\"{OUTSIDE_NAME}\" and @@01a200d9");
            let refs = event_on(
                &instance,
                &ctx,
                "before_agent_start",
                json!({"prompt": prompt, "systemPrompt": ""}),
            );
            let by_name = query(&instance, &ctx, "Cache layer design");
            let fifo_query = query(&instance, &ctx, FIFO_ID);
            let outside_query = query(&instance, &ctx, OUTSIDE_ID);
            event_on(&instance, &ctx, "agent_end", json!({"messages": []}));
            assert!(
                instance.flush(Duration::from_secs(60)).idle,
                "indexing finished"
            );
            (host.effects(), refs, by_name, fifo_query, outside_query)
        },
    );

    let m = &refs["message"];
    assert_eq!(
        m["details"]["sessionIds"],
        json!(["01a200d9-05af-72e1-a418-11f8875a7958"]),
        "{m}"
    );
    let content = m["content"].as_str().unwrap();
    for outside_text in ["Outside meta name", "the outside secret", "outside summary"] {
        assert!(
            !content.contains(outside_text),
            "outside text injected: {content}"
        );
    }
    let naming = content.lines().filter(|l| l.contains(OUTSIDE_NAME));
    assert!(
        naming.clone().count() == 1 && naming.clone().all(|l| l.starts_with("Unresolved")),
        "{content}"
    );
    assert_eq!(
        m["details"]["unresolved"].as_array().map(Vec::len),
        Some(3),
        "{m}"
    );

    assert!(!by_name.is_error, "{by_name:?}");
    assert!(
        fifo_query.is_error && outside_query.is_error,
        "{fifo_query:?} {outside_query:?}"
    );
    assert!(!format!("{outside_query:?}").contains("outside secret"));

    // Indexing met the FIFO meta file: a clear failure, no write over it.
    let all = serde_json::to_string(&effects).unwrap();
    assert!(
        all.contains("not a regular file"),
        "indexing reports the FIFO meta file: {all}"
    );
    let meta = a.meta_dir().join(format!("{CURRENT_ID}.meta.json"));
    assert!(
        std::fs::symlink_metadata(&meta)
            .unwrap()
            .file_type()
            .is_fifo(),
        "the FIFO is left alone"
    );
    drop(outside);
}

#[test]
fn the_cli_reads_only_regular_files_inside_the_sessions_directory() {
    let (a, outside, _current) = hostile_agent();
    let listed = run_cli(&["list", "--all", "--json", "--wait"], &a.dir);
    let list = crate::support::json_output(&listed);
    let ids = crate::support::ids(&list);
    assert_eq!(ids.len(), 2, "{ids:?}");
    assert!(
        !ids.contains(&OUTSIDE_ID) && !ids.contains(&FIFO_ID),
        "{ids:?}"
    );
    // Each skipped file gets one line, as `index` gives it.
    let noted = String::from_utf8_lossy(&listed.stderr);
    let skipped: Vec<&str> = noted
        .lines()
        .filter(|l| l.contains("not a regular file inside"))
        .collect();
    assert_eq!(skipped.len(), 2, "{noted}");
    assert!(
        skipped
            .iter()
            .all(|l| l.starts_with("session-index list: skipping ")),
        "{noted}"
    );

    let indexed = run_cli(&["index", "--all", "--offline"], &a.dir);
    let out = String::from_utf8_lossy(&indexed.stdout);
    let err = String::from_utf8_lossy(&indexed.stderr);
    assert!(!out.contains(OUTSIDE_ID) && !out.contains(FIFO_ID), "{out}");
    // The current session's meta file is a FIFO: that one fails, clearly.
    assert!(
        out.contains("is a FIFO, not a regular file"),
        "{out}\n{err}"
    );
    assert!(
        err.contains("not a regular file inside"),
        "a note on skipped files: {err}"
    );
    // Named on the command line, an outside file is refused just the same.
    let secret = outside
        .sessions()
        .join("--out--")
        .join(format!("2026-02-20T12-00-00-000Z_{OUTSIDE_ID}.jsonl"));
    let named = run_cli(&["index", "--offline", secret.to_str().unwrap()], &a.dir);
    assert!(!named.status.success());
    assert!(
        String::from_utf8_lossy(&named.stdout).contains("outside"),
        "{}",
        String::from_utf8_lossy(&named.stdout)
    );
    let outside_meta =
        std::fs::read_to_string(outside.meta_dir().join(format!("{OUTSIDE_ID}.meta.json")))
            .unwrap();
    assert!(
        outside_meta.contains("outside summary"),
        "the outside meta file is untouched"
    );
}
