//! Helpers for tests that drive the `pi-ext-host` binary.

#![allow(dead_code)] // each test binary uses a different subset

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pi-ext-host")
}

pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("workspace root")
}

/// `<target>/<profile>`: where cargo put this test's binary.
pub fn profile_dir() -> PathBuf {
    Path::new(bin())
        .parent()
        .expect("binary directory")
        .to_path_buf()
}

/// The workspace target dir (honours CARGO_TARGET_DIR, since it is derived from the binary's path).
pub fn target_dir() -> PathBuf {
    profile_dir()
        .parent()
        .expect("target directory")
        .to_path_buf()
}

/// The real session-index cdylib built by this workspace.
pub fn plugin_library() -> PathBuf {
    let file = pi_ext_host::loader::library_file_name("session_index");
    let candidates = [
        profile_dir().join(&file),
        profile_dir().join("deps").join(&file),
    ];
    candidates.iter().find(|p| p.is_file()).cloned().unwrap_or_else(|| {
        panic!(
            "the session-index plugin library is not built ({file} not in {}); run cargo test --workspace",
            profile_dir().display()
        )
    })
}

#[path = "../../../../tests/support/shared_dir.rs"]
mod shared_location;

/// A copy of a real pi session file in `dir` (so tests can check it is never written).
pub fn session_copy(dir: &Path) -> PathBuf {
    let source = shared_location::first_real_session();
    let target = dir.join(source.file_name().expect("file name"));
    std::fs::copy(&source, &target).expect("copy session");
    target
}

pub struct Run {
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> Value {
        assert_eq!(
            self.code,
            Some(0),
            "expected success; stderr: {}",
            self.stderr
        );
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}): {}", self.stdout))
    }

    /// Asserts a failure reported as exactly one `pi-ext-host:` line and returns it.
    pub fn failure(&self) -> String {
        assert_ne!(
            self.code,
            Some(0),
            "expected failure; stdout: {}",
            self.stdout
        );
        assert!(
            self.code.is_some(),
            "killed by a signal (abort?); stderr: {}",
            self.stderr
        );
        assert!(
            self.stdout.is_empty(),
            "nothing on stdout on failure: {}",
            self.stdout
        );
        let lines: Vec<&str> = self.stderr.lines().collect();
        assert_eq!(
            lines.len(),
            1,
            "exactly one stderr line expected: {:?}",
            self.stderr
        );
        let line = lines[0];
        assert!(line.starts_with("pi-ext-host: "), "{line}");
        line.to_string()
    }
}

/// Run the binary; a run that hangs past 60 s is killed and fails the test.
pub fn run_with(args: &[&str], env: &[(&str, &str)]) -> Run {
    let mut command = Command::new(bin());
    command
        .args(args)
        .env_remove("PI_EXT_LIB")
        .env_remove("SESSION_INDEX_PANIC_ON")
        .env("PI_EXT_LOG", "off");
    for (k, v) in env {
        command.env(k, v);
    }
    let mut child = command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run pi-ext-host");
    let start = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("pi-ext-host {args:?} did not finish within 60 s");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let Output {
        status,
        stdout,
        stderr,
    } = child.wait_with_output().expect("output");
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    }
}

pub fn run(args: &[&str]) -> Run {
    run_with(args, &[])
}
