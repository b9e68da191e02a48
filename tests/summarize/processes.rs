//! The meta store across processes: several `session-index index` processes
//! on one session at once, and SIGKILL at random points while indexing.

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::summarize::*;
use session_index::store::meta::{self, is_meta_file_name, MetaLock};

const BIN: &str = env!("CARGO_BIN_EXE_session-index");

fn scratch() -> Scratch {
    Scratch::new(RATE_LIMITER)
}

fn spawn_index(s: &Scratch) -> Child {
    Command::new(BIN)
        .args(["index", "--offline", "--force", "--agent-dir"])
        .arg(&s.agent_dir)
        .arg(&s.session_file)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn session-index")
}

/// Names in the meta dir, split into meta documents and temp files. Every
/// meta document must be complete and valid.
fn check_meta_dir(meta_dir: &Path) -> (usize, usize) {
    let Ok(entries) = std::fs::read_dir(meta_dir) else {
        return (0, 0);
    };
    let (mut metas, mut temps) = (0, 0);
    for entry in entries {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if is_meta_file_name(&name) {
            let meta = meta::read_path(&meta_dir.join(&name))
                .unwrap_or_else(|e| panic!("torn or invalid meta file {name}: {e}"))
                .unwrap();
            assert_eq!(meta.session_id, RATE_LIMITER_ID);
            assert!(meta.summary.starts_with("## Goal"), "complete document");
            metas += 1;
        } else if name.ends_with(".tmp") {
            assert!(name.starts_with('.'), "{name}");
            temps += 1;
        } else {
            assert_eq!(
                name,
                meta::file::LOCK_DIR,
                "unexpected file {name}: lock files stay in their directory"
            );
        }
    }
    (metas, temps)
}

#[test]
fn concurrent_processes_leave_one_valid_meta_file() {
    let s = scratch();
    let meta_dir = s.agent_dir.join("sessions-meta");
    for _round in 0..3 {
        let children: Vec<Child> = (0..8).map(|_| spawn_index(&s)).collect();
        for mut child in children {
            assert!(child.wait().unwrap().success());
        }
        assert_eq!(
            check_meta_dir(&meta_dir),
            (1, 0),
            "one valid meta file and no temp files"
        );
    }
}

#[test]
fn writers_wait_for_the_lock_file() {
    let s = scratch();
    let meta_dir = s.agent_dir.join("sessions-meta");
    let lock = MetaLock::acquire(&meta_dir, RATE_LIMITER_ID).unwrap();
    let mut children: Vec<Child> = (0..3).map(|_| spawn_index(&s)).collect();
    std::thread::sleep(Duration::from_millis(1500));
    for child in &mut children {
        assert!(
            child.try_wait().unwrap().is_none(),
            "a writer finished while another process held the lock"
        );
    }
    assert_eq!(check_meta_dir(&meta_dir), (0, 0));
    drop(lock);
    for mut child in children {
        assert!(child.wait().unwrap().success());
    }
    assert_eq!(check_meta_dir(&meta_dir), (1, 0));
}

/// xorshift64*: a deterministic spread of kill points without a rand dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
}

#[test]
fn sigkill_at_random_points_never_leaves_a_torn_meta_file() {
    let s = scratch();
    let meta_dir = s.agent_dir.join("sessions-meta");
    // How long one run takes here, so kill points cover the whole run.
    let mut runs = Vec::new();
    for _ in 0..3 {
        let start = Instant::now();
        assert!(spawn_index(&s).wait().unwrap().success());
        runs.push(start.elapsed());
    }
    runs.sort();
    let window_us = (runs[1].as_micros() as u64 * 11 / 10).max(1000);
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut killed, mut finished, mut with_meta, mut temp_seen) = (0, 0, 0, 0);
    for i in 0..200 {
        if i % 3 == 0 {
            // Also cover the first write, not only replacements.
            let _ = std::fs::remove_file(meta_dir.join(format!("{RATE_LIMITER_ID}.meta.json")));
        }
        let mut child = spawn_index(&s);
        std::thread::sleep(Duration::from_micros(rng.next() % window_us));
        let _ = child.kill(); // SIGKILL on Unix
        let status = child.wait().unwrap();
        if status.success() {
            finished += 1;
        } else {
            killed += 1;
        }
        let (metas, temps) = check_meta_dir(&meta_dir);
        assert!(metas <= 1);
        assert!(
            temps <= 1,
            "stale temp files are removed by the next writer"
        );
        with_meta += metas;
        temp_seen += usize::from(temps > 0);
    }
    println!(
        "kill loop: window {window_us} us, {killed} killed, {finished} finished, {with_meta} with a complete meta file, \
         {temp_seen} with a leftover temp file"
    );
    assert!(
        killed > 20,
        "most iterations must be killed mid-run (killed {killed})"
    );
    assert!(with_meta > 0);
}

/// A model-written meta of the rate-limiter session, as another process's
/// model run leaves it.
fn model_meta(session_file: &Path) -> meta::SessionMeta {
    meta::SessionMeta {
        schema_version: meta::SCHEMA_VERSION,
        session_id: RATE_LIMITER_ID.into(),
        session_file: session_file.display().to_string(),
        parent_session_file: None,
        name: "Paid for".into(),
        description: "d".into(),
        summary: "## Goal\npaid".into(),
        tags: vec![],
        cwd: "/home/user/demo".into(),
        created_at: "2026-01-01T00:00:00.000Z".into(),
        updated_at: "2026-01-01T00:00:00.000Z".into(),
        model: "mock/paid".into(),
        model_choice: None,
        last_indexed_leaf_id: Some("older-leaf".into()),
        usage: None,
        files: None,
        decisions: vec![],
        open_tasks: vec![],
        extra: Default::default(),
    }
}

/// Start `writer`, let it block on the meta's lock (held here) after it read
/// no meta, write a model's meta as another process would, then release the
/// lock: the offline writer must leave that meta alone. Returns its stdout.
fn offline_writer_waits_while_a_model_meta_lands(s: &Scratch, writer: &mut Command) -> String {
    let meta_dir = s.agent_dir.join("sessions-meta");
    let lock = MetaLock::acquire(&meta_dir, RATE_LIMITER_ID).unwrap();
    let child = writer
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn the writer");
    std::thread::sleep(Duration::from_millis(1500));
    let json = serde_json::to_vec_pretty(&model_meta(&s.session_file)).unwrap();
    std::fs::write(meta_dir.join(format!("{RATE_LIMITER_ID}.meta.json")), json).unwrap();
    drop(lock);
    let output = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stdout}\n{stderr}");
    let kept = meta::read(&meta_dir, RATE_LIMITER_ID).unwrap().unwrap();
    assert_eq!(
        kept.model, "mock/paid",
        "the offline writer replaced the model's meta: {stdout}\n{stderr}"
    );
    stdout
}

/// The rule holds at the write: an offline `index` that read "no meta" and
/// then waited for the lock while a model's meta landed leaves that meta alone.
#[test]
fn an_offline_cli_index_that_waited_for_the_lock_keeps_the_model_meta_that_landed_meanwhile() {
    let s = scratch();
    let mut writer = Command::new(BIN);
    writer
        .args(["index", "--offline", "-v", "--agent-dir"])
        .arg(&s.agent_dir)
        .arg(&s.session_file);
    let stdout = offline_writer_waits_while_a_model_meta_lands(&s, &mut writer);
    assert!(stdout.contains("written by mock/paid; kept"), "{stdout}");
}

/// The same in the plugin, through the real cdylib in `pi-ext-host`:
/// `agent_end`, `/index-session` and `/index-all`, with only the offline model.
#[test]
fn offline_plugin_writers_that_waited_for_the_lock_keep_the_model_meta_that_landed_meanwhile() {
    let runs: [&[&str]; 3] = [
        &["event", "agent_end", "--wait"],
        &["command", "index-session", "--wait"],
        &["command", "index-all", "--wait"],
    ];
    for run in runs {
        let s = scratch();
        let config = s.dir.path().join("config.json");
        std::fs::write(
            &config,
            r#"{"modelKeys": ["local/extractive"], "minNewUserMessages": 1}"#,
        )
        .unwrap();
        let mut writer = crate::support::plugin::host_command(&s.agent_dir, &config);
        writer.args(run).arg("--session").arg(&s.session_file);
        offline_writer_waits_while_a_model_meta_lands(&s, &mut writer);
    }
}

/// Issue 24's race: `index --all` with a model and `index --all --offline`
/// started 50 ms apart, 6 times over 20 sessions. The mock answers at once,
/// so the two runs go through the sessions at about the same pace and meet
/// on many of them (with replies delayed by up to 60 ms the offline run soon
/// overtook the model's and met it on a few sessions only: without the
/// store's check this test then passed in 3 runs of 9).
#[test]
fn model_and_offline_index_all_side_by_side_replace_no_model_meta() {
    use crate::support::mock_provider::{MockProvider, Reply, Wire};
    const TRIALS: usize = 6;
    const SESSIONS: usize = 20;
    let (mut replaced, mut model_written) = (0, 0);
    for _ in 0..TRIALS {
        let s = scratch();
        s.copies("0b000000", SESSIONS);
        std::fs::remove_file(&s.session_file).unwrap();
        let mock = MockProvider::start(Wire::OpenAi);
        for i in 0..SESSIONS {
            mock.push(Reply::answer_json(&answer(&format!("Paid summary {i}"))));
        }
        let config = s.dir.path().join("config.json");
        let mut provider = mock.provider_config();
        provider["apiKeyEnv"] = "MOCK_KEY".into();
        let doc = serde_json::json!({
            "modelKeys": ["mock/paid"], "providers": {"mock": provider},
            "useHostModels": false, "offlineFallback": false,
        });
        std::fs::write(&config, doc.to_string()).unwrap();
        let run = |offline: bool| {
            let mut command = Command::new(BIN);
            command
                .args(["index", "--all", "--json", "--agent-dir"])
                .arg(&s.agent_dir);
            command
                .arg("--config")
                .arg(&config)
                .env("MOCK_KEY", "sk-mock");
            // Without a terminal to ask on, spending needs --yes.
            command.arg(if offline { "--offline" } else { "--yes" });
            command
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .spawn()
                .unwrap()
        };
        let model = run(false);
        std::thread::sleep(Duration::from_millis(50));
        let offline = run(true);
        let model = model.wait_with_output().unwrap();
        assert!(model.status.success());
        assert!(offline.wait_with_output().unwrap().status.success());
        // The sessions the model run wrote a meta for (the others the offline run indexed first).
        let report: serde_json::Value = serde_json::from_slice(&model.stdout).unwrap();
        let paid: Vec<&str> = report["indexed"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i["sessionId"].as_str().unwrap())
            .collect();
        let meta_dir = s.agent_dir.join("sessions-meta");
        for id in paid {
            let written = meta::read(&meta_dir, id)
                .unwrap()
                .expect("a meta per session");
            replaced += usize::from(written.model != "mock/paid");
            model_written += 1;
        }
    }
    println!(
        "model metas replaced by offline ones: {replaced} of {model_written} written by the model \
         ({} sessions)",
        TRIALS * SESSIONS
    );
    assert!(model_written > 0);
    assert_eq!(replaced, 0, "of {model_written}");
}
