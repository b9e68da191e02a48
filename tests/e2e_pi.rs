//! End-to-end test with the real pi from npm: runs `tests/e2e/run.mjs`, which
//! installs pi 0.73.1 (once, cached under target/), starts a mock
//! OpenAI-compatible server and drives pi in RPC mode with the bridge
//! (bridge/) loading this workspace's `pi-ext-host` and plugin
//! library; then `install.test.mjs` installs this checkout with `pi install`
//! into a temporary HOME, whose first pi start builds `target/release` in the
//! background (once: later runs reuse it), and `npm-install.test.mjs`
//! installs the packed npm packages from a registry on loopback. Needs
//! node >= 20 and npm.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Generous: a first run builds the release profile (install.test.mjs) and, without packs, the
/// dist profile (npm-install.test.mjs) on a possibly busy machine.
const DEADLINE: Duration = Duration::from_secs(3600);

/// `target/<profile>`: this test binary lives in its `deps/` directory.
fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("test binary path");
    exe.parent()
        .and_then(Path::parent)
        .expect("target/<profile>/deps/<test>")
        .to_path_buf()
}

/// `name` in `target/<profile>` (or its `deps/`, where cargo may leave the cdylib).
fn artifact(dir: &Path, name: &str) -> PathBuf {
    let candidates = [dir.join(name), dir.join("deps").join(name)];
    candidates.iter().find(|p| p.is_file()).cloned().unwrap_or_else(|| {
        panic!(
            "{name} is not in {}: build the workspace first (`cargo test --workspace` builds it, or `cargo build --workspace`)",
            dir.display()
        )
    })
}

#[test]
fn session_index_inside_the_real_pi() {
    let node = Command::new("node").arg("--version").output();
    let version = match node {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_string(),
        _ => panic!(
            "node is not installed or not on PATH: the end-to-end test runs the real pi (Node.js >= 20 with npm)"
        ),
    };
    let dir = profile_dir();
    let host = artifact(
        &dir,
        &format!("pi-ext-host{}", std::env::consts::EXE_SUFFIX),
    );
    let lib = artifact(
        &dir,
        &format!(
            "{}session_index{}",
            std::env::consts::DLL_PREFIX,
            std::env::consts::DLL_SUFFIX
        ),
    );
    let repo = Path::new(env!("CARGO_MANIFEST_DIR"));

    let mut child = Command::new("node")
        .arg(repo.join("tests/e2e/run.mjs"))
        .current_dir(repo)
        .env("PI_E2E_HOST", &host)
        .env("PI_E2E_LIB", &lib)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start node tests/e2e/run.mjs");

    // Drain both pipes on threads so a chatty run cannot fill a pipe and stall.
    let mut stdout = child.stdout.take().expect("piped stdout");
    let mut stderr = child.stderr.take().expect("piped stderr");
    let out = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let err = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stderr.read_to_string(&mut s);
        s
    });

    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for node") {
            break Some(status);
        }
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let report = format!("node {version}\n--- stdout ---\n{stdout}\n--- stderr ---\n{stderr}");
    match status {
        Some(status) if status.success() => println!("{report}"),
        Some(status) => panic!("end-to-end test failed ({status})\n{report}"),
        None => panic!(
            "end-to-end test did not finish within {} s\n{report}",
            DEADLINE.as_secs()
        ),
    }
}
