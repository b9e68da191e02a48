//! Money spent on models: a small ledger beside the meta files
//! (`sessions-meta/spending.json`) shared by every process on the agent
//! directory (each pi, the CLI), and the optional daily cap
//! (`spending.dailyCapUsd`).
//!
//! The cap holds across processes because checking it and spending are one
//! step: before each model call, [`Budget::reserve`] holds the call's
//! maximum cost in the ledger under its lock, refused when what was spent
//! today plus what calls in flight hold plus this call's maximum would pass
//! the cap; after the call, [`Hold::settle`] replaces the hold by the real
//! cost (the unused part goes back). A process killed mid-call cannot
//! settle: its hold expires ([`Reservation::expires_ms`]).
//!
//! Every change is a read-modify-write under an exclusive lock on a hidden
//! lock file, and the new document replaces the old by rename (a reader never
//! sees a torn file). A ledger that does not read as one (garbage, wrong
//! types, a negative or non-finite amount) is never taken for zero: it is
//! moved aside to `spending.json.corrupt-<time>`, a warning says so once,
//! and the new ledger records that today's spending is unknown
//! ([`Ledger::unknown`]), which counts as the cap being reached until the
//! user deletes `spending.json`. Days are UTC dates; only the last
//! [`KEEP_DAYS`] are kept.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

pub const LEDGER_FILE: &str = "spending.json";
const LOCK_FILE: &str = ".spending.json.lock";
const KEEP_DAYS: usize = 62;

/// What the money was spent on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
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

    fn is_valid(&self) -> bool {
        valid_amount(self.indexing) && valid_amount(self.queries)
    }
}

/// A call in flight: its maximum cost, held against the cap until it settles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Reservation {
    pub id: String,
    pub kind: Kind,
    pub usd: f64,
    /// The UTC day it counts against.
    pub day: String,
    /// Unix ms after which the hold is a dead process's and is dropped.
    pub expires_ms: u64,
}

/// Why today's spending is not known.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct UnknownSpend {
    /// When the damaged ledger was found (ISO time).
    pub since: String,
    /// Where it was moved (`spending.json.corrupt-<time>`).
    pub kept_as: String,
    pub reason: String,
}

/// The ledger document.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, rename_all = "camelCase")]
pub struct Ledger {
    /// All time, including days no longer listed.
    pub total: Spent,
    /// `YYYY-MM-DD` (UTC) → spent that day.
    pub days: BTreeMap<String, Spent>,
    /// Calls in flight.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub reserved: Vec<Reservation>,
    /// Set when a damaged ledger was moved aside: what was spent before is
    /// unknown, so any cap counts as reached until the user deletes the file.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unknown: Option<UnknownSpend>,
}

impl Ledger {
    pub fn today(&self) -> Spent {
        self.days.get(&today()).copied().unwrap_or_default()
    }

    /// USD held today by calls in flight.
    pub fn reserved_today(&self) -> f64 {
        let day = today();
        self.reserved
            .iter()
            .filter(|r| r.day == day)
            .map(|r| r.usd)
            .sum()
    }

    /// Why no more may be spent today under `cap`, if so: the cap reached by
    /// what was spent and what calls in flight hold, or unknown spending.
    pub fn over_cap(&self, cap: f64, meta_dir: &Path) -> Option<String> {
        if let Some(unknown) = &self.unknown {
            return Some(unknown_message(unknown, meta_dir));
        }
        let (spent, held) = (self.today().total(), self.reserved_today());
        (spent + held >= cap).then(|| {
            let held = match held {
                0.0 => String::new(),
                held => format!(", ${held:.4} held by calls in flight"),
            };
            format!("today's spending cap is reached (${spent:.4}{held} of ${cap:.2})")
        })
    }

    fn add(&mut self, kind: Kind, usd: f64) {
        self.total.add(kind, usd);
        self.days.entry(today()).or_default().add(kind, usd);
        while self.days.len() > KEEP_DAYS {
            self.days.pop_first();
        }
    }

    /// Why the document cannot be trusted as a ledger, if it cannot.
    fn problem(&self) -> Option<String> {
        let bad_day = self.days.iter().find(|(_, spent)| !spent.is_valid());
        let bad_hold = self.reserved.iter().find(|r| !valid_amount(r.usd));
        if !self.total.is_valid() {
            Some(format!("total is {:?}", self.total))
        } else if let Some((day, spent)) = bad_day {
            Some(format!("{day} is {spent:?}"))
        } else {
            bad_hold.map(|hold| format!("reservation {} is {}", hold.id, hold.usd))
        }
    }
}

fn valid_amount(usd: f64) -> bool {
    usd.is_finite() && usd >= 0.0
}

/// The message that says spending is unknown and how to say otherwise.
fn unknown_message(unknown: &UnknownSpend, meta_dir: &Path) -> String {
    format!(
        "today's spending is unknown: the spending ledger was damaged ({}) and is kept as {}, so \
         the daily cap counts as reached; delete {} to count from zero again",
        unknown.reason,
        meta_dir.join(&unknown.kept_as).display(),
        ledger_path(meta_dir).display()
    )
}

fn today() -> String {
    crate::time::iso_now().chars().take(10).collect()
}

pub fn ledger_path(meta_dir: &Path) -> PathBuf {
    meta_dir.join(LEDGER_FILE)
}

/// The ledger as it is now (a missing one is empty; a damaged one is moved
/// aside and read as unknown spending). Nothing is created when there is no
/// meta directory yet. `Err`: it could not be read at all (permissions, I/O);
/// never taken for zero spending.
pub fn read(meta_dir: &Path) -> std::io::Result<Ledger> {
    if !meta_dir.is_dir() {
        return Ok(Ledger::default());
    }
    change(meta_dir, |_| Ok(())).map(|(ledger, _)| ledger)
}

/// When the daily cap is set and reached, the message that says so. A
/// ledger that cannot be read counts as the cap reached: what was spent
/// today is not known.
pub fn over_cap(cap: Option<f64>, meta_dir: &Path) -> Option<String> {
    cap_reached(&read(meta_dir), cap, meta_dir)
}

/// [`over_cap`] of a ledger [`read`] already.
pub fn cap_reached(
    ledger: &std::io::Result<Ledger>,
    cap: Option<f64>,
    meta_dir: &Path,
) -> Option<String> {
    let cap = cap?;
    match ledger {
        Ok(ledger) => ledger.over_cap(cap, meta_dir),
        Err(e) => Some(format!(
            "today's spending is unknown: the spending ledger in {} cannot be read ({e}), so \
             the daily cap counts as reached",
            meta_dir.display()
        )),
    }
}

/// Add `usd` spent on `kind` to today's line and the total.
pub fn add(meta_dir: &Path, kind: Kind, usd: f64) -> std::io::Result<Ledger> {
    change(meta_dir, |ledger| {
        ledger.add(kind, usd);
        Ok(())
    })
    .map(|(ledger, _)| ledger)
}

/// What a model call may spend and where its cost goes: the ledger of one
/// agent directory, the daily cap (`None`: none, or the user chose to spend
/// past it) and this process's own count.
#[derive(Clone, Copy)]
pub struct Budget<'a> {
    pub meta_dir: &'a Path,
    pub kind: Kind,
    pub cap: Option<f64>,
    /// What this process spent (`/session-index`'s "this session").
    pub session: Option<&'a Mutex<Spent>>,
}

/// The most a call may cost, as far as the plugin can tell before making it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MaxCost {
    /// Every model that may answer is priced: at most this many USD.
    Known(f64),
    /// The host may answer with a model the plugin cannot price (its
    /// fallback, or a key with no price). The hold is then all the room left
    /// under the cap today, and the host is told it may spend no more
    /// ([`Hold::limit`]), so the cap holds whatever it picks; calls in
    /// parallel are refused until this one settles.
    Unknown,
}

/// The maximum cost of a call, held in the ledger until [`Hold::settle`].
/// Dropped unsettled (the call failed), it gives the hold back.
pub struct Hold<'a> {
    budget: Budget<'a>,
    reservation: Option<String>,
    /// USD held; `None` without a cap.
    held: Option<f64>,
}

impl<'a> Budget<'a> {
    /// Hold the call's maximum cost against the cap for a call that lives at
    /// most `lifetime`; `Err`: the cap would be passed (the message says why).
    pub fn reserve(&self, max: MaxCost, lifetime: std::time::Duration) -> Result<Hold<'a>, String> {
        let Some(cap) = self.cap else {
            return Ok(Hold {
                budget: *self,
                reservation: None,
                held: None,
            });
        };
        let meta_dir = self.meta_dir;
        let reserved = change(meta_dir, |ledger| {
            if let Some(unknown) = &ledger.unknown {
                return Err(unknown_message(unknown, meta_dir));
            }
            let (spent, held) = (ledger.today().total(), ledger.reserved_today());
            let usd = match max {
                MaxCost::Known(usd) if valid_amount(usd) => usd,
                MaxCost::Known(_) => 0.0,
                MaxCost::Unknown => cap - spent - held,
            };
            let refused = match max {
                MaxCost::Known(_) => spent + held + usd > cap,
                MaxCost::Unknown => usd <= 0.0,
            };
            if refused {
                return Err(cap_message(spent, held, max, cap));
            }
            let id = reservation_id();
            ledger.reserved.push(Reservation {
                id: id.clone(),
                kind: self.kind,
                usd,
                day: today(),
                expires_ms: crate::time::now_ms()
                    .saturating_add(lifetime.as_millis().min(u128::from(u64::MAX)) as u64),
            });
            Ok((id, usd))
        });
        match reserved {
            Ok((_, Ok((id, usd)))) => Ok(Hold {
                budget: *self,
                reservation: Some(id),
                held: Some(usd),
            }),
            Ok((_, Err(refused))) => Err(refused),
            // A ledger that cannot be written cannot hold the cap.
            Err(e) => Err(format!(
                "the spending ledger in {} cannot be updated ({e}), so the daily cap cannot be kept",
                meta_dir.display()
            )),
        }
    }
}

impl Hold<'_> {
    /// The most the call may spend (what is held), when a cap is set: what a
    /// host that picks the model is told ([`MaxCost::Unknown`]).
    pub fn limit(&self) -> Option<f64> {
        self.held
    }

    /// The call cost `usd`: its hold becomes that spending. `None`: its cost
    /// is not known (a model nobody could price), so the whole hold counts
    /// as spent.
    pub fn settle(mut self, usd: Option<f64>) {
        let usd = usd.unwrap_or(self.held.unwrap_or(0.0));
        self.finish(usd);
    }

    fn finish(&mut self, usd: f64) {
        let usd = if valid_amount(usd) { usd } else { 0.0 };
        let reservation = self.reservation.take();
        if usd == 0.0 && reservation.is_none() {
            return;
        }
        let Budget {
            meta_dir,
            kind,
            session,
            ..
        } = self.budget;
        if let Some(Ok(mut spent)) = session.map(Mutex::lock) {
            spent.add(kind, usd);
        }
        let changed = change(meta_dir, |ledger| {
            ledger
                .reserved
                .retain(|r| Some(&r.id) != reservation.as_ref());
            if usd > 0.0 {
                ledger.add(kind, usd);
            }
            Ok(())
        });
        if let Err(e) = changed {
            tracing::warn!(
                "could not update the spending ledger in {}: {e}",
                meta_dir.display()
            );
        }
    }
}

impl Drop for Hold<'_> {
    fn drop(&mut self) {
        if self.reservation.is_some() {
            self.finish(0.0);
        }
    }
}

fn cap_message(spent: f64, held: f64, max: MaxCost, cap: f64) -> String {
    let held = match held {
        0.0 => String::new(),
        held => format!(" and ${held:.4} held by calls in flight"),
    };
    let this_call = match max {
        MaxCost::Known(usd) => format!("this call may cost up to ${usd:.4}"),
        MaxCost::Unknown => "this call's model cannot be priced, so it needs room".into(),
    };
    format!("today's spending cap would be passed (${spent:.4} spent{held}, {this_call}; cap ${cap:.2})")
}

/// Unique across processes and within one.
fn reservation_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let n = NEXT.fetch_add(1, Ordering::Relaxed);
    format!("{}-{n}-{}", std::process::id(), crate::time::now_ms())
}

/// What [`change`] gives back: the ledger as it is now, and what `f` said.
type Changed<T> = std::io::Result<(Ledger, Result<T, String>)>;

/// Read-modify-write of the ledger under its lock: `f` changes it, or
/// refuses (`Err`: nothing of its change is written). Expired holds are
/// dropped; a damaged ledger is moved aside first.
fn change<T>(meta_dir: &Path, f: impl FnOnce(&mut Ledger) -> Result<T, String>) -> Changed<T> {
    std::fs::create_dir_all(meta_dir)?;
    // Never through a symlink planted in its place (see `regular_files::Dir`).
    let lock = regular_files::Dir::open(meta_dir)?.lock_file(LOCK_FILE)?;
    fs4::FileExt::lock(&lock)?;
    let result = change_locked(meta_dir, f);
    let _ = fs4::FileExt::unlock(&lock);
    result
}

fn change_locked<T>(
    meta_dir: &Path,
    f: impl FnOnce(&mut Ledger) -> Result<T, String>,
) -> Changed<T> {
    let (mut ledger, mut dirty) = load(meta_dir)?;
    let now = crate::time::now_ms();
    let before = ledger.reserved.len();
    ledger.reserved.retain(|r| r.expires_ms > now);
    dirty |= ledger.reserved.len() != before;
    let unchanged = ledger.clone();
    let value = f(&mut ledger);
    if value.is_err() {
        ledger = unchanged.clone();
    }
    if dirty || ledger != unchanged {
        write(meta_dir, &ledger)?;
    }
    Ok((ledger, value))
}

/// The ledger on disk and whether it must be written (a damaged one was
/// moved aside and replaced by an unknown-spending one).
fn load(meta_dir: &Path) -> std::io::Result<(Ledger, bool)> {
    let path = ledger_path(meta_dir);
    // Opened without blocking: a FIFO, a directory or a device in the
    // ledger's place is damage like garbage is, never waited on.
    let problem = match regular_files::read_regular(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok((Ledger::default(), false))
        }
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => e.to_string(),
        Err(e) => return Err(e),
        Ok(bytes) => match serde_json::from_slice::<Ledger>(&bytes) {
            Ok(ledger) => match ledger.problem() {
                None => return Ok((ledger, false)),
                Some(problem) => problem,
            },
            Err(e) => e.to_string(),
        },
    };
    let since = crate::time::iso_now();
    let kept_as = format!("{LEDGER_FILE}.corrupt-{}", since.replace([':', '.'], "-"));
    std::fs::rename(&path, meta_dir.join(&kept_as))?;
    let unknown = UnknownSpend {
        since,
        kept_as,
        reason: crate::text::one_line(&problem, 120),
    };
    tracing::warn!("{}", unknown_message(&unknown, meta_dir));
    let ledger = Ledger {
        unknown: Some(unknown),
        ..Ledger::default()
    };
    Ok((ledger, true))
}

/// Replace the ledger atomically (temp file, fsync, rename).
fn write(meta_dir: &Path, ledger: &Ledger) -> std::io::Result<()> {
    use crate::store::meta::file;
    // A temp file a crashed writer left under this name goes first (the lock is ours).
    let temp = meta_dir.join(format!(".{LEDGER_FILE}.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&temp);
    file::remove_stale_temps(meta_dir, None);
    let json = serde_json::to_vec_pretty(ledger).map_err(std::io::Error::other)?;
    file::replace(&temp, &ledger_path(meta_dir), &json)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const MINUTE: Duration = Duration::from_secs(60);

    fn budget(dir: &Path, cap: Option<f64>) -> Budget<'_> {
        Budget {
            meta_dir: dir,
            kind: Kind::Queries,
            cap,
            session: None,
        }
    }

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
        assert_eq!(read(dir.path()).unwrap(), ledger);
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

    #[test]
    fn a_hold_counts_against_the_cap_until_it_settles_at_the_real_cost() {
        let dir = tempfile::tempdir().unwrap();
        add(dir.path(), Kind::Queries, 0.45).unwrap();
        let capped = budget(dir.path(), Some(0.5));
        let first = capped.reserve(MaxCost::Known(0.04), MINUTE).unwrap();
        assert!((read(dir.path()).unwrap().reserved_today() - 0.04).abs() < 1e-12);
        let refused = capped.reserve(MaxCost::Known(0.04), MINUTE).err().unwrap();
        assert!(refused.contains("would be passed"), "{refused}");
        first.settle(Some(0.01));
        let ledger = read(dir.path()).unwrap();
        assert!(ledger.reserved.is_empty());
        assert!((ledger.today().total() - 0.46).abs() < 1e-12);
        // The unused part came back.
        capped
            .reserve(MaxCost::Known(0.04), MINUTE)
            .unwrap()
            .settle(Some(0.0));
        // A failed call (dropped unsettled) gives its hold back.
        drop(capped.reserve(MaxCost::Known(0.04), MINUTE).unwrap());
        assert!(read(dir.path()).unwrap().reserved.is_empty());
        assert!(budget(dir.path(), None)
            .reserve(MaxCost::Known(100.0), MINUTE)
            .is_ok());
    }

    /// A host that may answer with a model nobody here can price is held to
    /// the room left under the cap: told it may spend no more, and parallel
    /// calls refused until it settles; an unknown real cost counts as all of it.
    #[test]
    fn an_unpriced_call_holds_the_room_left_and_counts_whole_when_its_cost_is_unknown() {
        let dir = tempfile::tempdir().unwrap();
        add(dir.path(), Kind::Queries, 0.45).unwrap();
        let capped = budget(dir.path(), Some(0.5));
        let first = capped.reserve(MaxCost::Unknown, MINUTE).unwrap();
        assert!((first.limit().unwrap() - 0.05).abs() < 1e-12);
        let refused = capped.reserve(MaxCost::Unknown, MINUTE).err().unwrap();
        assert!(refused.contains("cannot be priced"), "{refused}");
        assert!(capped.reserve(MaxCost::Known(0.001), MINUTE).is_err());
        first.settle(None);
        let ledger = read(dir.path()).unwrap();
        assert!(ledger.reserved.is_empty());
        assert!((ledger.today().total() - 0.5).abs() < 1e-12);
        assert!(
            capped.reserve(MaxCost::Unknown, MINUTE).is_err(),
            "no room left"
        );
        let free = budget(dir.path(), None)
            .reserve(MaxCost::Unknown, MINUTE)
            .unwrap();
        assert_eq!(free.limit(), None, "no cap, no limit");
    }

    #[test]
    fn a_dead_process_hold_expires() {
        let dir = tempfile::tempdir().unwrap();
        let capped = budget(dir.path(), Some(0.1));
        let dead = capped.reserve(MaxCost::Known(0.1), Duration::ZERO).unwrap();
        std::mem::forget(dead);
        std::thread::sleep(Duration::from_millis(5));
        assert!(
            capped.reserve(MaxCost::Known(0.1), MINUTE).is_ok(),
            "the expired hold is gone"
        );
    }

    /// Issue 24: never a blocking open. A FIFO in the ledger's place is
    /// refused at once (a plain read waits for a writer forever) and counts
    /// as a damaged ledger: moved aside, the cap reached.
    #[cfg(unix)]
    #[test]
    fn a_fifo_in_the_ledgers_place_is_damage_never_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = std::ffi::CString::new(
            ledger_path(dir.path())
                .into_os_string()
                .into_encoded_bytes(),
        )
        .unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o600) }, 0);
        let meta_dir = dir.path().to_path_buf();
        let (send, receive) = std::sync::mpsc::channel();
        std::thread::spawn(move || send.send(over_cap(Some(100.0), &meta_dir)));
        let message = receive
            .recv_timeout(Duration::from_secs(10))
            .expect("the ledger read returned (a FIFO is never waited on)")
            .expect("an unreadable ledger counts as the cap reached");
        assert!(message.contains("unknown"), "{message}");
        let kept = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("spending.json.corrupt-"))
            .count();
        assert_eq!(kept, 1, "moved aside");
        assert!(
            ledger_path(dir.path()).is_file(),
            "a regular ledger in its place"
        );
    }

    /// A ledger that cannot be read at all (here: its lock cannot be taken,
    /// a directory stands in the lock file's place) is not zero spending.
    #[test]
    fn a_ledger_that_cannot_be_read_counts_as_the_cap_reached() {
        let dir = tempfile::tempdir().unwrap();
        add(dir.path(), Kind::Queries, 0.1).unwrap();
        std::fs::remove_file(dir.path().join(LOCK_FILE)).unwrap();
        std::fs::create_dir(dir.path().join(LOCK_FILE)).unwrap();
        assert!(read(dir.path()).is_err());
        let message = over_cap(Some(100.0), dir.path()).expect("not read as zero");
        assert!(message.contains("cannot be read"), "{message}");
        assert_eq!(over_cap(None, dir.path()), None, "no cap, nothing to hold");
        assert!(budget(dir.path(), Some(100.0))
            .reserve(MaxCost::Known(0.0), MINUTE)
            .is_err());
    }

    #[test]
    fn a_damaged_ledger_is_kept_aside_and_counts_as_the_cap_reached() {
        for damaged in [
            "garbage{",
            r#"{"total": "lots"}"#,
            r#"{"total": {"indexing": -5}}"#,
            r#"{"days": {"2026-01-01": {"queries": 1e999}}}"#,
            "",
        ] {
            let dir = tempfile::tempdir().unwrap();
            std::fs::write(ledger_path(dir.path()), damaged).unwrap();
            let message = over_cap(Some(100.0), dir.path())
                .unwrap_or_else(|| panic!("{damaged:?} counted as zero"));
            assert!(message.contains("unknown"), "{message}");
            assert!(message.contains("delete"), "says how: {message}");
            let kept: Vec<String> = std::fs::read_dir(dir.path())
                .unwrap()
                .map(|e| e.unwrap().file_name().into_string().unwrap())
                .filter(|n| n.starts_with("spending.json.corrupt-"))
                .collect();
            assert_eq!(kept.len(), 1, "{damaged:?}");
            assert_eq!(
                std::fs::read_to_string(dir.path().join(&kept[0])).unwrap(),
                damaged
            );
            let refused = budget(dir.path(), Some(100.0)).reserve(MaxCost::Known(0.0), MINUTE);
            assert!(refused.is_err(), "{damaged:?}");
            // Spending past an unknown ledger still counts, and no cap means no refusal.
            budget(dir.path(), None)
                .reserve(MaxCost::Known(1.0), MINUTE)
                .unwrap()
                .settle(Some(0.5));
            let ledger = read(dir.path()).unwrap();
            assert!(ledger.unknown.is_some());
            assert_eq!(ledger.today().queries, 0.5);
            // The user deletes the file: counting starts from zero.
            std::fs::remove_file(ledger_path(dir.path())).unwrap();
            assert_eq!(over_cap(Some(100.0), dir.path()), None);
        }
    }
}
