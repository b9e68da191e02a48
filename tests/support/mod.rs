//! Helpers shared by the test modules: real session fixtures, synthetic
//! agent directories, the real plugin library loaded through the host, a
//! mock model provider over loopback, and the QA fixture.

pub mod corpus;
pub mod mock_provider;
pub mod model;
pub mod plugin;
pub mod qa;
pub mod rng;
pub mod search;
pub mod shared_dir;
pub mod summarize;
pub mod synth;

use std::process::{Command, Output};

use serde_json::Value;

/// Append `lines` to the session `file`, one JSON object per line, as pi
/// appends entries while a session runs.
pub fn append_lines(file: &std::path::Path, lines: &[Value]) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new()
        .append(true)
        .open(file)
        .expect("open the session to append");
    for line in lines {
        writeln!(f, "{line}").expect("append a line");
    }
}

/// Set in a child process that runs one test of this binary alone.
const ALONE_ENV: &str = "SESSION_INDEX_TEST_ALONE";

/// The name libtest gives the test `function` of the module `module_path`
/// (`module_path!()`): the module path without the crate's name.
pub fn test_name(module_path: &str, function: &str) -> String {
    match module_path.split_once("::") {
        Some((_crate, module)) => format!("{module}::{function}"),
        None => function.to_string(),
    }
}

/// The command that runs exactly the test `name` of this binary, on one
/// thread, in a child process.
pub fn this_test_binary(name: &str) -> Command {
    let mut command = Command::new(std::env::current_exe().expect("test binary path"));
    command.args(["--exact", name, "--test-threads", "1"]);
    command
}

/// True in the child process [`run_alone`] starts.
pub fn running_alone() -> bool {
    std::env::var_os(ALONE_ENV).is_some()
}

/// Runs the test `name` of this binary alone in a child process and fails
/// when it fails there. For tests that change process-wide state (an
/// environment variable the plugin reads), which must not leak into the
/// tests running beside them in this process.
pub fn run_alone(name: &str) {
    let output = this_test_binary(name)
        .arg("--nocapture")
        .env(ALONE_ENV, "1")
        .output()
        .expect("run the test binary again");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("1 passed"),
        "{name} failed when run alone ({})\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}",
        output.status
    );
}

/// The JSON document a command printed; fails with its stderr when the
/// command failed.
pub fn json_output(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document on stdout")
}

/// The `id` of every session of a `list --json` document.
pub fn ids(list: &Value) -> Vec<&str> {
    list.as_array()
        .expect("a JSON array")
        .iter()
        .filter_map(|s| s["id"].as_str())
        .collect()
}
