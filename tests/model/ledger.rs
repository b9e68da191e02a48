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
    let ledger = spend::read(&meta_dir);
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
