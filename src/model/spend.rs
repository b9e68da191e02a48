//! Money spent on models: a small ledger beside the meta files
//! (`sessions-meta/spending.json`) shared by every pi process, and the
//! optional daily cap (`spending.dailyCapUsd`).
//!
//! Several pi processes add to the ledger at once, so an update is a
//! read-modify-write under an exclusive lock on a hidden lock file, and the
//! new document replaces the old by rename (a reader never sees a torn file).
//! Days are UTC dates; only the last [`KEEP_DAYS`] are kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

pub const LEDGER_FILE: &str = "spending.json";
const LOCK_FILE: &str = ".spending.json.lock";
const KEEP_DAYS: usize = 62;

/// What the money was spent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Indexing,
    Queries,
}

/// USD spent, by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Spent {
    pub indexing: f64,
    pub queries: f64,
}

impl Spent {
    pub fn total(&self) -> f64 {
        self.indexing + self.queries
    }

    fn add(&mut self, kind: Kind, usd: f64) {
        match kind {
            Kind::Indexing => self.indexing += usd,
            Kind::Queries => self.queries += usd,
        }
    }
}

/// The ledger document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Ledger {
    /// All time, including days no longer listed.
    pub total: Spent,
    /// `YYYY-MM-DD` (UTC) → spent that day.
    pub days: BTreeMap<String, Spent>,
}

impl Ledger {
    pub fn today(&self) -> Spent {
        self.days.get(&today()).copied().unwrap_or_default()
    }
}

fn today() -> String {
    crate::time::iso_now().chars().take(10).collect()
}

pub fn ledger_path(meta_dir: &Path) -> PathBuf {
    meta_dir.join(LEDGER_FILE)
}

/// The ledger as it is now; a missing or unreadable one reads as empty.
pub fn read(meta_dir: &Path) -> Ledger {
    std::fs::read(ledger_path(meta_dir))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Add `usd` spent on `kind` to today's line and the total (and to this
/// process's own count, `spent`). Zero costs are not written.
pub fn record(spent: &std::sync::Mutex<Spent>, meta_dir: &Path, kind: Kind, usd: f64) {
    if !(usd.is_finite() && usd > 0.0) {
        return;
    }
    if let Ok(mut spent) = spent.lock() {
        spent.add(kind, usd);
    }
    if let Err(e) = add(meta_dir, kind, usd) {
        tracing::warn!(
            "could not update the spending ledger in {}: {e}",
            meta_dir.display()
        );
    }
}

/// The locked read-modify-write of one addition.
pub fn add(meta_dir: &Path, kind: Kind, usd: f64) -> std::io::Result<Ledger> {
    std::fs::create_dir_all(meta_dir)?;
    // Never through a symlink planted in its place (see `regular_files::Dir`).
    let lock = regular_files::Dir::open(meta_dir)?.lock_file(LOCK_FILE)?;
    fs4::FileExt::lock(&lock)?;
    let mut ledger = read(meta_dir);
    ledger.total.add(kind, usd);
    ledger.days.entry(today()).or_default().add(kind, usd);
    while ledger.days.len() > KEEP_DAYS {
        ledger.days.pop_first();
    }
    // A temp file a crashed writer left under this name goes first (the lock is ours).
    let temp = meta_dir.join(format!(".{LEDGER_FILE}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    let json = serde_json::to_vec_pretty(&ledger).map_err(std::io::Error::other);
    let written = json
        .and_then(|json| crate::store::meta::file::replace(&temp, &ledger_path(meta_dir), &json));
    let _ = fs4::FileExt::unlock(&lock);
    written.map(|()| ledger)
}

/// When the daily cap is set and reached, the message that says so (spent today, the cap).
pub fn over_cap(cap: Option<f64>, meta_dir: &Path) -> Option<String> {
    let cap = cap?;
    let today = read(meta_dir).today().total();
    (today >= cap).then(|| format!("today's spending cap is reached (${today:.4} of ${cap:.2})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn additions_accumulate_by_day_and_kind() {
        let dir = tempfile::tempdir().unwrap();
        add(dir.path(), Kind::Indexing, 0.25).unwrap();
        let ledger = add(dir.path(), Kind::Queries, 0.5).unwrap();
        assert_eq!(
            ledger.today(),
            Spent {
                indexing: 0.25,
                queries: 0.5
            }
        );
        assert_eq!(read(dir.path()), ledger);
        assert_eq!(ledger.total.total(), 0.75);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            names.len(),
            2,
            "the ledger and its hidden lock, no temp file: {names:?}"
        );
    }
}
