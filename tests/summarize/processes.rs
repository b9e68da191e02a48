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
