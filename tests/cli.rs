//! The `session-index` CLI as a person reads it: the list table, references as
//! arguments, `show`, `index --all` leaving up-to-date and model-written meta
//! files alone, exit codes and `--help` examples. Runs the real binary over a
//! copy of the bundled example sessions (written by pi 0.73.1).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

const DEMO: &str = "--home-user-demo--";
const JWT_ID: &str = "01a200f2-9f17-727b-b6a3-41610f73ac8c";
const RATE_LIMITER_ID: &str = "01a200f2-80e6-718b-8d1c-0b84326bbae8";

/// An agent dir with the three example sessions and one file that is not a session.
fn agent() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let project = dir.path().join("sessions").join(DEMO);
    std::fs::create_dir_all(&project).unwrap();
    let examples = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("examples/agent/sessions")
        .join(DEMO);
    for file in std::fs::read_dir(examples).unwrap() {
        let file = file.unwrap().path();
        std::fs::copy(&file, project.join(file.file_name().unwrap())).unwrap();
    }
    let not_a_session = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/sessions/divergent/not-a-session.jsonl");
    std::fs::copy(not_a_session, project.join("notes.jsonl")).unwrap();
    dir
}

/// The binary, with no keys (offline model) and a HOME that holds nothing.
pub(crate) fn run(agent: &Path, args: &[&str]) -> Output {
    command(agent, args).output().unwrap()
}

/// [`run`]'s command, to run with more set.
pub(crate) fn command(agent: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_session-index"));
    cmd.args(args)
        .arg("--agent-dir")
        .arg(agent)
        .env("HOME", agent)
        .env_remove("PI_CODING_AGENT_DIR");
    for key in ["ANTHROPIC_API_KEY", "OPENAI_API_KEY", "GEMINI_API_KEY"] {
        cmd.env_remove(key);
    }
    cmd
}

fn stdout(out: &Output) -> String {
    assert!(
        out.status.success(),
        "exit {:?}: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout.clone()).unwrap()
}

fn meta_file(agent: &Path, id: &str) -> PathBuf {
    agent.join("sessions-meta").join(format!("{id}.meta.json"))
}

#[test]
fn list_prints_a_table_newest_first() {
    let agent = agent();
    let table = stdout(&run(agent.path(), &["list", "--all", "--wait"]));
    let expected = "\
ID          NAME                                                      PROJECT          DATE              MSGS  MODEL  COST
01a200f2-c  The gateway_handles_concurrent_clients test fails about…  /home/user/demo  2026-11-22 01:50  22    -      -
01a200f2-9  JWT expiry and refresh tokens                             /home/user/demo  2026-11-22 01:50  20    -      -
01a200f2-8  Add per-client rate limiting to the API gateway for…      /home/user/demo  2026-11-22 01:50  22    -      -
";
    assert_eq!(table, expected);

    stdout(&run(agent.path(), &["index", "--all"]));
    let table = stdout(&run(
        agent.path(),
        &["list", "--cwd", "/home/user/demo", "--wait"],
    ));
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(1)
        .map(|l| l.split("  ").filter(|c| !c.is_empty()).collect())
        .collect();
    assert_eq!(rows.len(), 3, "{table}");
    for row in &rows {
        assert_eq!(
            row[row.len() - 2..],
            ["local/extractive", "$0.0000"],
            "indexed by, cost: {table}"
        );
    }
    assert!(
        rows.iter().any(|r| r[1] == "JWT expiry and refresh tokens"),
        "{table}"
    );
}

#[test]
fn list_json_is_for_machines() {
    let agent = agent();
    let list: Value = serde_json::from_str(&stdout(&run(
        agent.path(),
        &["list", "--all", "--json", "--wait"],
    )))
    .unwrap();
    let list = list.as_array().unwrap();
    assert_eq!(
        list.len(),
        3,
        "the file that is not a session is not listed"
    );
    let jwt = list.iter().find(|s| s["id"] == JWT_ID).unwrap();
    assert_eq!(jwt["name"], "JWT expiry and refresh tokens");
    assert_eq!(jwt["messageCount"], 20);
    assert!(
        jwt["model"].is_null() && jwt["costUsd"].is_null(),
        "not indexed: {jwt}"
    );
}

#[test]
fn show_inspect_and_index_take_references() {
    let agent = agent();
    for reference in [
        JWT_ID,
        "01a200f2-9f",
        "jwt-expiry-and-refresh-tokens",
        "JWT expiry and refresh tokens",
    ] {
        let text = stdout(&run(agent.path(), &["show", reference]));
        assert!(
            text.starts_with("JWT expiry and refresh tokens\n"),
            "{reference}: {text}"
        );
        assert!(text.contains(&format!("  id        {JWT_ID}\n")), "{text}");
        assert!(
            text.contains("Not indexed yet: session-index index 01a200f2"),
            "{text}"
        );
    }
    let doc: Value =
        serde_json::from_str(&stdout(&run(agent.path(), &["inspect", "01a200f2-9f"]))).unwrap();
    assert_eq!(doc["id"], JWT_ID);

    let index = stdout(&run(agent.path(), &["index", "01a200f2-80"]));
    let meta_dir = agent.path().join("sessions-meta");
    assert!(
        index.ends_with(&format!(
            "1 indexed ($0.0000), 0 skipped, 0 failed; meta files in {}\n",
            meta_dir.display()
        )),
        "{index}"
    );
    assert!(meta_file(agent.path(), RATE_LIMITER_ID).is_file());
    assert!(
        !meta_file(agent.path(), JWT_ID).exists(),
        "only the referenced session"
    );

    let text = stdout(&run(agent.path(), &["show", "01a200f2-80"]));
    for part in [
        "  indexed   ",
        " by local/extractive, $0.0000 (0 in / 0 out tokens)\n",
        "  tags      ",
        "\nFiles modified\n  - ",
    ] {
        assert!(text.contains(part), "{part:?} in\n{text}");
    }
    let doc: Value = serde_json::from_str(&stdout(&run(
        agent.path(),
        &["show", "--json", RATE_LIMITER_ID],
    )))
    .unwrap();
    assert_eq!(doc["meta"]["sessionId"], RATE_LIMITER_ID);
    assert_eq!(doc["session"]["id"], RATE_LIMITER_ID);

    // A miss: exit 1, one line naming the reference and the nearest names.
    let out = run(agent.path(), &["show", "no-such-session"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("session-index: no session matches \"no-such-session\""),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

#[test]
fn index_all_skips_up_to_date_sessions_and_files_that_are_not_sessions() {
    let agent = agent();
    let first = stdout(&run(agent.path(), &["index", "--all"]));
    assert_eq!(
        first.lines().filter(|l| l.starts_with("indexed  ")).count(),
        3,
        "{first}"
    );
    assert_eq!(
        first.lines().count(),
        4,
        "what was done and one summary line: {first}"
    );
    let summary = first.lines().last().unwrap_or_default();
    assert!(
        summary.starts_with("3 indexed (")
            && summary.contains(", 1 skipped (-v lists them), 0 failed; meta files in "),
        "{first}"
    );
    let before: Vec<Vec<u8>> = [JWT_ID, RATE_LIMITER_ID]
        .iter()
        .map(|id| std::fs::read(meta_file(agent.path(), id)).unwrap())
        .collect();

    let second: Value =
        serde_json::from_str(&stdout(&run(agent.path(), &["index", "--all", "--json"]))).unwrap();
    assert_eq!(
        second["indexed"],
        serde_json::json!([]),
        "nothing changed: {second}"
    );
    let reasons: Vec<&str> = second["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|s| s["reason"].as_str())
        .collect();
    assert_eq!(
        reasons.iter().filter(|r| **r == "up to date").count(),
        3,
        "{reasons:?}"
    );
    assert_eq!(
        reasons
            .iter()
            .filter(|r| r.starts_with("not a pi session"))
            .count(),
        1,
        "{reasons:?}"
    );
    let after: Vec<Vec<u8>> = [JWT_ID, RATE_LIMITER_ID]
        .iter()
        .map(|id| std::fs::read(meta_file(agent.path(), id)).unwrap())
        .collect();
    assert_eq!(before, after, "meta files untouched");

    let forced = stdout(&run(agent.path(), &["index", "--all", "--force", "-v"]));
    assert_eq!(
        forced
            .lines()
            .filter(|l| l.starts_with("indexed  "))
            .count(),
        3,
        "--force re-indexes: {forced}"
    );
    assert!(
        forced
            .lines()
            .any(|l| l.starts_with("skipped  ") && l.contains("notes.jsonl: not a pi session")),
        "-v lists the skips: {forced}"
    );
}

#[test]
fn index_all_never_replaces_a_model_written_meta_with_an_offline_one() {
    let agent = agent();
    stdout(&run(agent.path(), &["index", "--all"]));
    // As if a paid model had indexed the JWT session at an earlier leaf.
    let path = meta_file(agent.path(), JWT_ID);
    let mut meta: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    meta["model"] = "anthropic/claude-haiku-4-5".into();
    meta["lastIndexedLeafId"] = "an-older-leaf".into();
    meta["name"] = "Named by a model".into();
    std::fs::write(&path, serde_json::to_vec_pretty(&meta).unwrap()).unwrap();
    let written = std::fs::read(&path).unwrap();

    let out = stdout(&run(agent.path(), &["index", "--all", "-v"]));
    let line = out.lines().find(|l| l.contains(JWT_ID)).unwrap_or_default();
    assert!(
        line.starts_with("skipped  ")
            && line.ends_with(
                ": its meta was written by anthropic/claude-haiku-4-5; kept (--force replaces it with an offline one)"
            ),
        "{out}"
    );
    assert_eq!(
        std::fs::read(&path).unwrap(),
        written,
        "the model-written meta is kept byte for byte"
    );
    let table = stdout(&run(agent.path(), &["list", "--all", "--wait"]));
    let row = table
        .lines()
        .find(|l| l.contains("Named by a model"))
        .unwrap_or_default();
    assert!(
        row.contains("  anthropic/claude-haiku-4-5  "),
        "the list shows who wrote the meta: {table}"
    );

    stdout(&run(agent.path(), &["index", "--force", JWT_ID]));
    let replaced: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(replaced["model"], "local/extractive", "--force replaces it");
}

#[test]
fn exit_codes_and_help() {
    let agent = agent();
    let out = run(agent.path(), &["index"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "nothing to index is a usage error"
    );
    let out = run(agent.path(), &["list", "--no-such-flag"]);
    assert_eq!(out.status.code(), Some(2));

    let config = agent.path().join("session-index.config.json");
    std::fs::write(
        &config,
        r#"{"minNewUserMessages": 0, "search": {"maxResults": "ten"}}"#,
    )
    .unwrap();
    let out = run(agent.path(), &["index", "--all"]);
    assert_eq!(out.status.code(), Some(0), "a bad key takes its default");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "session-index: warning: {}: minNewUserMessages: lower than 1; its default applies; \
             search.maxResults: expected an integer, got \"ten\"; its default applies. \
             The rest of the config applies.",
            config.display()
        )),
        "{stderr}"
    );
    std::fs::write(&config, r#"{"privacy": {"exclude": [""]}}"#).unwrap();
    let out = run(agent.path(), &["index", "--all"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a bad key guarding privacy stops the command"
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!(
            "{}: invalid config: privacy.exclude[0]",
            config.display()
        )),
        "{stderr}"
    );
    std::fs::remove_file(&config).unwrap();

    let help = stdout(&run(agent.path(), &["--help"]));
    assert!(
        help.contains("Exit codes: 0 ok; 1 some items failed"),
        "{help}"
    );
    for sub in ["list", "show", "index", "inspect", "search", "embed"] {
        let help = stdout(&run(agent.path(), &[sub, "--help"]));
        assert!(
            help.contains("Examples:\n  session-index "),
            "{sub} --help has an example:\n{help}"
        );
    }
}

/// `| head`: a reader that goes away after the first bytes ends nothing in a
/// panic; the command finishes quietly (what it writes is dropped).
#[test]
fn output_to_a_closed_pipe_ends_quietly() {
    use std::io::Read;
    let agent = agent();
    // A session whose inspect output is far larger than a pipe's buffer.
    let project = agent.path().join("sessions").join(DEMO);
    let id = "0badc0de-0000-4000-8000-000000000024";
    let mut lines = vec![format!(
        r#"{{"type":"session","version":3,"id":"{id}","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/home/user/demo"}}"#
    )];
    for i in 0..400 {
        let parent = if i == 0 {
            "null".to_string()
        } else {
            format!("\"e{}\"", i - 1)
        };
        lines.push(format!(
            r#"{{"type":"message","id":"e{i}","parentId":{parent},"timestamp":"2026-01-01T00:00:01.000Z","message":{{"role":"user","content":"{}"}}}}"#,
            "words of a long message ".repeat(40)
        ));
    }
    std::fs::write(
        project.join(format!("2026-01-01T00-00-00-000Z_{id}.jsonl")),
        lines.join("\n") + "\n",
    )
    .unwrap();
    for args in [
        &["inspect", id][..],
        &["show", id, "--json"],
        &["list", "--all"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_session-index"))
            .args(args)
            .arg("--agent-dir")
            .arg(agent.path())
            .env("HOME", agent.path())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 16];
        child.stdout.take().unwrap().read_exact(&mut first).unwrap();
        // The read end is closed here (`head` exiting).
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(out.status.success(), "{args:?}: {:?} {stderr}", out.status);
    }
}

/// A config file must hold a JSON object, as the host requires of one: `null`
/// and a string are refused with what the file holds (they once meant "the
/// defaults" and "this message" to the CLI).
#[test]
fn a_config_file_that_is_not_an_object_is_refused_by_name() {
    let agent = agent();
    let file = agent.path().join("session-index.config.json");
    for (text, holds) in [("null", "null"), ("\"x\"", "a string"), ("[1]", "an array")] {
        std::fs::write(&file, text).unwrap();
        let out = run(agent.path(), &["list", "--all"]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{text}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "{}: invalid config: the config holds {holds}, not a JSON object",
                file.display()
            )),
            "{text}: {stderr}"
        );
    }
}

#[test]
fn a_wrong_agent_dir_is_one_error_for_every_command_and_nothing_is_created() {
    let wrong = tempfile::tempdir().unwrap();
    let typo = wrong.path().join("agnet");
    std::fs::create_dir(&typo).unwrap();
    for args in [
        &["list"][..],
        &["list", "--all"],
        &["search", "cron"],
        &["show", "abc"],
        &["index", "--all"],
        &["inspect", "abc"],
    ] {
        let out = run(&typo, args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains(&format!(
                "{}: not a pi agent directory (no sessions/ in it)",
                typo.display()
            )),
            "{args:?}: {stderr}"
        );
        let created: Vec<_> = std::fs::read_dir(&typo).unwrap().collect();
        assert!(created.is_empty(), "{args:?} created {created:?}");
    }
}

#[test]
fn purge_asks_then_removes_what_session_index_wrote_and_keeps_the_sessions() {
    let agent = agent();
    let sessions = || {
        let mut files: Vec<(PathBuf, Vec<u8>)> =
            std::fs::read_dir(agent.path().join("sessions").join(DEMO))
                .unwrap()
                .map(|f| f.unwrap().path())
                .map(|p| (p.clone(), std::fs::read(&p).unwrap()))
                .collect();
        files.sort();
        files
    };
    stdout(&run(agent.path(), &["index", "--all"]));
    stdout(&run(agent.path(), &["search", "token"]));
    let before = sessions();
    let written = ["sessions-meta", "sessions-index"].map(|d| agent.path().join(d));
    assert!(written.iter().all(|d| d.is_dir()));

    let out = run(agent.path(), &["purge"]);
    assert_eq!(out.status.code(), Some(2), "no terminal to ask on");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("pass --yes"),
        "{out:?}"
    );
    assert!(
        written.iter().all(|d| d.is_dir()),
        "nothing removed unasked"
    );

    let purged = stdout(&run(agent.path(), &["purge", "--yes"]));
    assert!(written.iter().all(|d| !d.exists()), "{purged}");
    assert!(purged.contains("Kept: pi's session files"), "{purged}");
    assert_eq!(sessions(), before, "pi's session files untouched");
    let again = stdout(&run(agent.path(), &["purge", "--yes"]));
    assert!(again.starts_with("Nothing to remove"), "{again}");
}

/// The binary's stdout on a terminal `columns` wide (util-linux `script`
/// gives it a pseudo-terminal), ANSI colours and carriage returns removed.
#[cfg(target_os = "linux")]
fn on_terminal(agent: &Path, args: &str, columns: usize) -> String {
    let bin = env!("CARGO_BIN_EXE_session-index");
    let line = format!(
        "stty cols {columns} rows 50; '{bin}' {args} --agent-dir '{}'",
        agent.display()
    );
    let out = Command::new("script")
        .args(["-qec", &line, "/dev/null"])
        .env("HOME", agent)
        .env_remove("PI_CODING_AGENT_DIR")
        .env_remove("COLUMNS")
        .output()
        .expect("util-linux script runs the binary on a pseudo-terminal");
    let text = String::from_utf8_lossy(&out.stdout).replace('\r', "");
    let ansi = regex::Regex::new("\x1b\\[[0-9;]*m").unwrap();
    ansi.replace_all(&text, "").into_owned()
}

#[cfg(target_os = "linux")]
#[test]
fn output_fits_the_terminal_and_is_whole_when_piped_or_wide() {
    let agent = agent();
    stdout(&run(agent.path(), &["index", "--all"]));
    let widest = |text: &str| text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    for args in [
        "list --cwd /home/user/demo",
        "list --all",
        "search token refresh",
        "show jwt",
        "--help",
        "index --help",
    ] {
        let text = on_terminal(agent.path(), args, 60);
        assert!(text.lines().count() > 2, "{args}: {text}");
        assert!(
            widest(&text) <= 60,
            "{args} is wider than the terminal:\n{text}"
        );
    }
    assert!(on_terminal(agent.path(), "list --all", 60).contains('…'));
    let wide = on_terminal(agent.path(), "list --all --wide", 60);
    assert!(widest(&wide) > 60 && !wide.contains('…'), "--wide: {wide}");
    let piped = stdout(&run(agent.path(), &["list", "--all"]));
    assert!(
        widest(&piped) > 60 && !piped.contains('…'),
        "piped: {piped}"
    );
}

#[test]
fn index_with_a_paid_model_shows_the_estimate_and_needs_a_yes() {
    let agent = agent();
    let config = agent.path().join("paid.json");
    std::fs::write(&config, r#"{"modelKeys": ["openai/gpt-4.1-mini"]}"#).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_session-index"))
        .args(["index", "--all", "--agent-dir"])
        .arg(agent.path())
        .arg("--config")
        .arg(&config)
        .env("HOME", agent.path())
        .env("OPENAI_API_KEY", "sk-test-never-sent")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "no terminal to ask on");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("not spending without asking (3 sessions, about ")
            && stderr.contains(" input tokens with openai/gpt-4.1-mini: at most $0.0")
            && stderr.contains("pass --yes to spend it, or --offline"),
        "{stderr}"
    );
    assert!(
        !agent.path().join("sessions-meta").exists(),
        "nothing indexed, nothing spent"
    );
}

/// What `search` guarantees without `--wait`: a session appended to before
/// the search started is found by what was appended, one deleted before it
/// is not found (the update's pass stats every file first), and a search
/// over unchanged files writes nothing.
#[test]
fn search_finds_what_changed_just_before_it_without_waiting() {
    let agent = agent();
    let search = |word: &str| -> Value {
        serde_json::from_str(&stdout(&run(agent.path(), &["search", "--json", word]))).unwrap()
    };
    let ids = |doc: &Value| -> Vec<String> {
        let ids = crate::support::ids(&doc["results"]);
        ids.into_iter().map(String::from).collect()
    };
    let first = search("token");
    assert!(first["index"]["updated"].as_u64().unwrap() >= 3, "{first}");
    assert_eq!(search("token")["index"]["updated"], 0);

    let project = agent.path().join("sessions").join(DEMO);
    let session = std::fs::read_dir(&project)
        .unwrap()
        .map(|f| f.unwrap().path())
        .find(|p| std::fs::read_to_string(p).unwrap().contains(JWT_ID))
        .unwrap();
    let line = serde_json::json!({"type": "message", "id": "zz000001", "parentId": null,
        "timestamp": "2026-11-27T12:00:00.000Z",
        "message": {"role": "user", "content": "what about the quetzalcoatl cache", "timestamp": 1}});
    crate::support::append_lines(&session, &[line]);
    let appended = search("quetzalcoatl");
    assert_eq!(appended["index"]["updated"], 1, "{appended}");
    assert_eq!(ids(&appended), vec![JWT_ID.to_string()], "{appended}");

    std::fs::remove_file(&session).unwrap();
    let removed = search("quetzalcoatl");
    assert_eq!(removed["index"]["removed"], 1, "{removed}");
    assert!(ids(&removed).is_empty(), "{removed}");
    let again = search("quetzalcoatl");
    assert_eq!(again["index"]["updated"], 0, "{again}");
    assert!(ids(&again).is_empty(), "{again}");
}
