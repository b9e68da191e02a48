//! Background jobs with per-key coalescing, flush and shutdown.
//!
//! Event handlers must return promptly (pi awaits them in a serial queue), so
//! slow work such as indexing runs here. At most one job per key (e.g. per
//! session id) runs at a time; a trigger that arrives while it runs is folded
//! into a single re-run instead of queueing duplicates.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use pi_ext_abi::protocol::FlushReport;

type Work = Arc<dyn Fn() + Send + Sync + 'static>;

/// The name of a job's thread (in `top -H`, debuggers and panic messages).
const JOB_THREAD: &str = "session-index-job";

#[derive(Default)]
struct State {
    /// key → whether another run was requested while the current one runs.
    running: HashMap<String, bool>,
    accepting_closed: bool,
}

/// Tracks background work so the host can wait for it.
#[derive(Clone, Default)]
pub struct Jobs {
    inner: Arc<(Mutex<State>, Condvar)>,
}

/// What [`Jobs::submit`] did with a trigger.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Submitted {
    Started,
    /// A job for this key was running; it will run once more afterwards.
    Coalesced,
    /// Shutting down; the work was dropped.
    Rejected,
}

impl Jobs {
    /// Run `work` on a thread of its own under `key`, coalescing with a
    /// running job of the same key. Panics inside `work` are caught and logged.
    pub fn submit<F>(&self, key: &str, work: F) -> Submitted
    where
        F: Fn() + Send + Sync + 'static,
    {
        let (lock, _) = &*self.inner;
        let Ok(mut state) = lock.lock() else {
            return Submitted::Rejected;
        };
        if state.accepting_closed {
            return Submitted::Rejected;
        }
        if let Some(rerun) = state.running.get_mut(key) {
            *rerun = true;
            return Submitted::Coalesced;
        }
        state.running.insert(key.to_string(), false);
        drop(state);
        let work: Work = Arc::new(work);
        let jobs = self.clone();
        let job_key = key.to_string();
        let started = std::thread::Builder::new()
            .name(JOB_THREAD.into())
            .spawn(move || jobs.run_loop(&job_key, work));
        if let Err(error) = started {
            tracing::error!(job = key, "cannot start a background job's thread: {error}");
            self.finished(key);
            return Submitted::Rejected;
        }
        Submitted::Started
    }

    fn run_loop(&self, key: &str, work: Work) {
        loop {
            if let Err(payload) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work()))
            {
                tracing::error!(
                    job = key,
                    "background job panicked: {}",
                    pi_ext_abi::panic_message(&payload)
                );
            }
            let (lock, cvar) = &*self.inner;
            let Ok(mut state) = lock.lock() else { return };
            let rerun = state.running.get(key).copied().unwrap_or(false);
            if rerun && !state.accepting_closed {
                state.running.insert(key.to_string(), false);
                continue;
            }
            state.running.remove(key);
            cvar.notify_all();
            return;
        }
    }

    /// `key` runs no more (its thread could not start).
    fn finished(&self, key: &str) {
        let (lock, cvar) = &*self.inner;
        if let Ok(mut state) = lock.lock() {
            state.running.remove(key);
            cvar.notify_all();
        }
    }

    /// Wait until no job runs or `timeout` elapses.
    pub fn flush(&self, timeout: Duration) -> FlushReport {
        let deadline = Instant::now() + timeout;
        let (lock, cvar) = &*self.inner;
        let Ok(mut state) = lock.lock() else {
            return FlushReport {
                pending: 0,
                idle: true,
            };
        };
        while !state.running.is_empty() {
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            state = match cvar.wait_timeout(state, deadline - now) {
                Ok((s, _)) => s,
                Err(_) => {
                    return FlushReport {
                        pending: 0,
                        idle: false,
                    }
                }
            };
        }
        let pending = state.running.len() as u32;
        FlushReport {
            pending,
            idle: pending == 0,
        }
    }

    /// Stop accepting work and drop queued re-runs, then flush.
    pub fn shutdown(&self, timeout: Duration) -> FlushReport {
        if let Ok(mut state) = self.inner.0.lock() {
            state.accepting_closed = true;
        }
        self.flush(timeout)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn triggers_while_running_coalesce_into_one_rerun() {
        let jobs = Jobs::default();
        let runs = Arc::new(AtomicUsize::new(0));
        let gate = Arc::new((Mutex::new(false), Condvar::new()));
        let (r, g) = (runs.clone(), gate.clone());
        let work = move || {
            r.fetch_add(1, Ordering::SeqCst);
            let (m, c) = &*g;
            let mut open = m.lock().unwrap();
            while !*open {
                open = c.wait(open).unwrap();
            }
        };
        assert_eq!(jobs.submit("s1", work.clone()), Submitted::Started);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(jobs.submit("s1", work.clone()), Submitted::Coalesced);
        assert_eq!(jobs.submit("s1", work.clone()), Submitted::Coalesced);
        assert!(!jobs.flush(Duration::from_millis(50)).idle);
        *gate.0.lock().unwrap() = true;
        gate.1.notify_all();
        assert!(jobs.flush(Duration::from_secs(5)).idle);
        assert_eq!(
            runs.load(Ordering::SeqCst),
            2,
            "three triggers run as one job plus one re-run"
        );
    }

    #[test]
    fn a_panicking_job_is_contained_and_shutdown_rejects_new_work() {
        let jobs = Jobs::default();
        jobs.submit("boom", || panic!("job failure"));
        assert!(jobs.flush(Duration::from_secs(5)).idle);
        assert!(jobs.shutdown(Duration::from_secs(1)).idle);
        assert_eq!(jobs.submit("later", || {}), Submitted::Rejected);
    }
}
