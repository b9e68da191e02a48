//! The `pi-ext-host` binary against the real session-index cdylib.

mod common;

use std::path::Path;

use common::{plugin_library, run, run_with, session_copy, workspace_root};
use serde_json::Value;

fn s(path: &Path) -> String {
    path.display().to_string()
}

/// Global options pointing at this workspace's plugin and its real library, plus a temp agent dir.
struct Setup {
    dir: tempfile::TempDir,
    session: String,
    base: Vec<String>,
}

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let agent = dir.path().join("agent");
    // Session files are read only inside the agent directory's sessions/.
    let project = agent.join("sessions").join("--work-p--");
    std::fs::create_dir_all(&project).unwrap();
    let session = s(&session_copy(&project));
    let base = vec![
        "--plugin".into(),
        s(&workspace_root()),
        "--lib".into(),
        s(&plugin_library()),
        "--agent-dir".into(),
        s(&agent),
    ];
    Setup { dir, session, base }
}

impl Setup {
    fn args<'a>(&'a self, rest: &[&'a str]) -> Vec<&'a str> {
        self.base
            .iter()
            .map(String::as_str)
            .chain(rest.iter().copied())
            .collect()
    }
}

#[test]
fn info_lists_the_manifest_and_registrations() {
    let t = setup();
    let doc = run(&t.args(&["info"])).json();
    assert_eq!(doc["pluginId"], "session-index@0.1.0");
    assert_eq!(doc["manifest"]["name"], "session-index");
    assert_eq!(doc["abi"]["host"], pi_ext_abi::ABI_VERSION);
    assert_eq!(doc["abi"]["declared"], "1.1");
    let events: Vec<&str> = doc["registrations"]["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        events.contains(&"agent_end") && events.contains(&"before_agent_start"),
        "{events:?}"
    );
    assert!(doc["registrations"]["commands"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["name"] == "index-session"));
    let tool = doc["registrations"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == "query_session")
        .unwrap();
    assert_eq!(tool["parameters"]["type"], "object");
    assert!(tool["parameters"]["properties"].is_object());
    assert_eq!(doc["effects"], Value::Array(vec![]));
    assert_eq!(doc["warnings"], Value::Array(vec![]));
}

#[cfg(unix)]
#[test]
fn info_finds_the_library_next_to_plugin_toml_without_lib() {
    let dir = tempfile::tempdir().unwrap();
    for file in ["plugin.toml", "session-index.config.json"] {
        std::fs::copy(workspace_root().join(file), dir.path().join(file)).unwrap();
    }
    let lib = dir
        .path()
        .join(pi_ext_host::loader::library_file_name("session_index"));
    std::os::unix::fs::symlink(plugin_library(), &lib).unwrap();
    let doc = run(&["--plugin", &s(&dir.path().join("plugin.toml")), "info"]).json();
    assert_eq!(doc["library"], s(&lib));
    assert_eq!(doc["pluginId"], "session-index@0.1.0");
}

#[test]
fn events_print_the_result_and_effects_and_never_touch_the_session() {
    let t = setup();
    let before = std::fs::read(&t.session).unwrap();
    let doc = run(&t.args(&["event", "agent_end", "--session", &t.session, "--wait"])).json();
    assert_eq!(doc["event"], "agent_end");
    assert_eq!(doc["result"], Value::Null);
    assert_eq!(doc["flush"]["idle"], true);
    assert!(doc["effects"].is_array());
    let doc = run(&t.args(&[
        "event",
        "input",
        "--session",
        &t.session,
        "--payload",
        r#"{"text":"hi","source":"interactive"}"#,
    ]))
    .json();
    assert_eq!(doc["result"]["action"], "continue");
    assert_eq!(std::fs::read(&t.session).unwrap(), before);
}

#[test]
fn an_invalid_config_shows_up_as_a_notify_effect() {
    let t = setup();
    let config = t.dir.path().join("bad.config.json");
    std::fs::write(&config, r#"{"timeoutMs": "soon"}"#).unwrap();
    let doc = run(&t.args(&[
        "--config",
        &s(&config),
        "event",
        "session_start",
        "--session",
        &t.session,
    ]))
    .json();
    let effects = doc["effects"].as_array().unwrap();
    let notify: Vec<&Value> = effects.iter().filter(|e| e["type"] == "notify").collect();
    assert_eq!(notify.len(), 1, "{effects:?}");
    assert_eq!(notify[0]["level"], "warning");
    // A bad key takes its default; the rest of the config applies.
    let text = notify[0]["text"].as_str().unwrap();
    assert!(
        text.contains("timeoutMs: expected an integer, got \"soon\"; its default applies")
            && text.contains("The rest of the config applies"),
        "{text}"
    );
}

/// Every config fault leaves the host running: a one-line warning naming the
/// file, the plugin loaded with its config features off and saying why (all
/// problems at once), and never a hang (each run has a deadline).
#[test]
fn config_faults_are_warnings_never_exits_or_hangs() {
    let t = setup();
    let dir = t.dir.path();
    let write = |name: &str, bytes: &[u8]| {
        let path = dir.join(name);
        std::fs::write(&path, bytes).unwrap();
        path
    };
    let mut faults = vec![
        (dir.join("missing.json"), "not found"),
        (dir.to_path_buf(), "is a directory, not a regular file"),
        (
            write("latin1.json", b"{\"commandName\": \"caf\xe9\"}"),
            "is not UTF-8",
        ),
        (
            write("array.json", b"[]"),
            "holds an array, not a JSON object",
        ),
        (
            write("null.json", b"null\n"),
            "holds null, not a JSON object",
        ),
        (write("empty.json", b""), "is empty"),
        (write("broken.json", b"{\"a\":"), "is not JSON"),
    ];
    #[cfg(unix)]
    {
        let fifo = dir.join("fifo.json");
        let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        faults.push((fifo, "is a FIFO, not a regular file"));
    }
    for (config, problem) in &faults {
        let r = run(&t.args(&[
            "--config",
            &s(config),
            "event",
            "session_start",
            "--session",
            &t.session,
        ]));
        let doc = r.json();
        let warning = format!("{}: config file (--config) {problem}", s(config));
        assert!(
            r.stderr.contains(&warning),
            "{warning}\nstderr: {}",
            r.stderr
        );
        assert_eq!(
            r.stderr.lines().filter(|l| l.contains("warning")).count(),
            1,
            "named once: {}",
            r.stderr
        );
        let notify: Vec<&Value> = doc["effects"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["type"] == "notify")
            .collect();
        let text = notify
            .first()
            .and_then(|n| n["text"].as_str())
            .unwrap_or_default();
        assert!(
            text.contains("config is invalid") && text.contains(&warning),
            "{problem}: {notify:?}"
        );
    }
    let many = write(
        "many.json",
        br#"{"bogus":1,"other":2,"timeoutMs":"soon","query":{"enabled":"no"}}"#,
    );
    let r = run(&t.args(&[
        "--config",
        &s(&many),
        "event",
        "session_start",
        "--session",
        &t.session,
    ]));
    for key in ["bogus", "other", "timeoutMs", "query.enabled"] {
        let named = format!("pi-ext-host: warning: {}: {key}: ", s(&many));
        assert!(
            r.stderr.lines().any(|l| l.starts_with(&named)),
            "{named}\nstderr: {}",
            r.stderr
        );
    }
    let doc = r.json();
    let effects = doc["effects"].as_array().unwrap();
    let text = effects
        .iter()
        .find(|e| e["type"] == "notify")
        .and_then(|n| n["text"].as_str())
        .unwrap_or_default();
    // The plugin names every problem by its key path; none of them guards
    // privacy or money, so each bad key takes its default and the rest applies.
    for want in [
        "bogus: unknown key, ignored",
        "other: unknown key, ignored",
        "timeoutMs: expected an integer, got \"soon\"; its default applies",
        "query.enabled: expected a boolean, got \"no\"; its default applies",
        "The rest of the config applies.",
    ] {
        assert!(text.contains(want), "{want}: {text}");
    }
    // A bad key that guards privacy: the plugin is up with indexing off, and
    // the command says why instead of indexing.
    let guarded = write("guarded.json", br#"{"privacy":{"exclude":[""]}}"#);
    let doc = run(&t.args(&[
        "--config",
        &s(&guarded),
        "command",
        "index-session",
        "--session",
        &t.session,
    ]))
    .json();
    assert_eq!(doc["result"]["ok"], false, "{doc}");
    assert!(
        doc["result"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("config is invalid"),
        "{doc}"
    );
}

#[test]
fn prompt_runs_input_then_before_agent_start() {
    let t = setup();
    let doc = run(&t.args(&[
        "prompt",
        "--session",
        &t.session,
        "--system-prompt",
        "SYS",
        "what did we do?",
    ]))
    .json();
    assert_eq!(doc["prompt"], "what did we do?");
    assert_eq!(doc["input"]["action"], "continue");
    assert_eq!(doc["handled"], false);
    assert!(doc.get("message").is_some());
    // Without an injected system prompt, pi keeps its own.
    let expected = doc["beforeAgentStart"]["systemPrompt"]
        .as_str()
        .unwrap_or("SYS");
    assert_eq!(doc["systemPrompt"], expected);
}

#[test]
fn tools_and_commands_print_their_results() {
    let t = setup();
    let doc = run(&t.args(&[
        "tool",
        "query_session",
        "--session",
        &t.session,
        r#"{"session":"abcdef12","question":"q"}"#,
    ]))
    .json();
    assert_eq!(doc["tool"], "query_session");
    assert!(doc["result"]["content"].is_array(), "{doc}");
    let doc = run(&t.args(&[
        "command",
        "index-session",
        "now",
        "please",
        "--session",
        &t.session,
    ]))
    .json();
    assert_eq!(doc["command"], "index-session");
    assert_eq!(doc["args"], "now please");
    assert!(doc["result"]["ok"].is_boolean(), "{doc}");
}

#[test]
fn missing_and_malformed_manifests_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    let line = run(&["--plugin", &s(dir.path()), "info"]).failure();
    assert!(
        line.contains("plugin.toml") && line.contains("not found"),
        "{line}"
    );
    let line = run(&["--plugin", &s(&dir.path().join("no-such-dir")), "info"]).failure();
    assert!(
        line.contains("no-such-dir/plugin.toml: plugin manifest not found"),
        "{line}"
    );

    let toml = dir.path().join("plugin.toml");
    std::fs::write(&toml, "[plugin]\nname = \"x\"\nversion = 0.1.0\n").unwrap();
    let line = run(&["--plugin", &s(&toml), "info"]).failure();
    assert!(line.contains(&format!("{}:3:", s(&toml))), "{line}");

    std::fs::write(
        &toml,
        "[plugin]\nname = \"x\"\nversion = \"1\"\nlibrary = \"x\"\n",
    )
    .unwrap();
    let line = run(&["--plugin", &s(dir.path()), "info"]).failure();
    assert!(line.ends_with("missing key plugin.abi"), "{line}");
}

#[test]
fn a_manifest_declaring_another_abi_major_is_refused_before_loading() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(workspace_root().join("plugin.toml"))
        .unwrap()
        .replace("abi = \"1.1\"", "abi = \"2.0\"");
    std::fs::write(dir.path().join("plugin.toml"), text).unwrap();
    // The library does not exist: the refusal must come first.
    let line = run(&[
        "--plugin",
        &s(dir.path()),
        "--lib",
        "/nonexistent/lib.so",
        "info",
    ])
    .failure();
    assert!(line.contains("ABI version mismatch"), "{line}");
    assert!(
        line.contains(&format!("pi-ext-abi {}", pi_ext_abi::ABI_VERSION))
            && line.contains("pi-ext-abi 2.0"),
        "{line}"
    );
}

#[test]
fn missing_and_foreign_libraries_are_one_line_errors() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("plugin.toml"),
        "[plugin]\nname = \"x\"\nversion = \"1\"\nabi = \"1.0\"\nlibrary = \"nothere\"\n",
    )
    .unwrap();
    let line = run(&["--plugin", &s(dir.path()), "info"]).failure();
    assert!(
        line.contains("plugin library not found; tried:") && line.contains("target/debug/"),
        "{line}"
    );

    let junk = dir.path().join("junk.so");
    std::fs::write(&junk, "this is not a library").unwrap();
    let line = run(&["--plugin", &s(dir.path()), "--lib", &s(&junk), "info"]).failure();
    assert!(line.contains("not a pi-ext-abi plugin library"), "{line}");

    // A real shared library without a root module: one of the workspace's proc-macro dylibs.
    let deps = common::profile_dir().join("deps");
    let proc_macro = std::fs::read_dir(&deps)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            name.starts_with("libserde_derive-") && name.ends_with(std::env::consts::DLL_SUFFIX)
        })
        .unwrap_or_else(|| panic!("no serde_derive dylib in {}", deps.display()));
    let line = run(&["--plugin", &s(dir.path()), "--lib", &s(&proc_macro), "info"]).failure();
    assert!(
        line.contains("not a pi-ext-abi plugin library")
            && line.contains("no abi_stable root module"),
        "{line}"
    );
}

#[test]
fn unknown_names_bad_arguments_and_missing_sessions_are_one_line_errors() {
    let t = setup();
    let line = run(&t.args(&["event", "turn_start", "--session", &t.session])).failure();
    assert!(line.contains("unknown event 'turn_start'"), "{line}");
    let line = run(&t.args(&["tool", "nope", "--session", &t.session, "{}"])).failure();
    assert!(line.contains("unknown tool 'nope'"), "{line}");
    let line = run(&t.args(&["command", "nope", "--session", &t.session])).failure();
    assert!(line.contains("unknown command 'nope'"), "{line}");
    let line = run(&t.args(&[
        "tool",
        "query_session",
        "--session",
        &t.session,
        "{not json",
    ]))
    .failure();
    assert!(line.contains("invalid JSON arguments"), "{line}");
    let line = run(&t.args(&["tool", "query_session", "--session", &t.session, "[1,2]"])).failure();
    assert!(line.contains("must be a JSON object"), "{line}");
    let line = run(&t.args(&[
        "event",
        "agent_end",
        "--session",
        &t.session,
        "--payload",
        "nope",
    ]))
    .failure();
    assert!(line.contains("--payload: invalid JSON"), "{line}");
    let missing = t.dir.path().join("missing.jsonl");
    let line = run(&t.args(&["event", "agent_end", "--session", &s(&missing)])).failure();
    assert!(line.contains("missing.jsonl: not found"), "{line}");
    let line = run(&t.args(&["event", "agent_end"])).failure();
    assert!(line.contains("--session"), "{line}");
}

#[test]
fn a_panicking_handler_is_a_one_line_error_and_the_next_run_works() {
    let t = setup();
    for (rig, args) in [
        (
            "event:agent_end",
            vec!["event", "agent_end", "--session", &t.session],
        ),
        (
            "tool:query_session",
            vec![
                "tool",
                "query_session",
                "--session",
                &t.session,
                r#"{"session":"abcdef12","question":"q"}"#,
            ],
        ),
        (
            "command:index-session",
            vec!["command", "index-session", "--session", &t.session],
        ),
    ] {
        let line = run_with(&t.args(&args), &[("SESSION_INDEX_PANIC_ON", rig)]).failure();
        assert!(
            line.contains("panicked") && line.contains(&format!("deliberate panic in {rig}")),
            "{line}"
        );
        // With plugin logging on, the panic arrives as one forwarded log line, not std's report.
        let noisy = run_with(
            &t.args(&args),
            &[
                ("SESSION_INDEX_PANIC_ON", rig),
                ("PI_EXT_LOG", "warn"),
                ("RUST_BACKTRACE", "1"),
            ],
        );
        assert_eq!(noisy.code, Some(1));
        let lines: Vec<&str> = noisy.stderr.lines().collect();
        assert_eq!(lines.len(), 2, "{}", noisy.stderr);
        assert!(
            lines[0].starts_with("[plugin error] ") && lines[1] == line,
            "{}",
            noisy.stderr
        );
        run(&t.args(&args)).json();
    }
}

#[test]
fn usage_errors_are_one_line_too() {
    assert!(run(&["frobnicate"]).failure().contains("frobnicate"));
    assert!(run(&[]).failure().contains("missing subcommand"));
}
