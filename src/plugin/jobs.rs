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
    /// Run `work` on `runtime`'s blocking pool under `key`, coalescing with a
    /// running job of the same key. Panics inside `work` are caught and logged.
    pub fn submit<F>(
        &self,
        runtime: &crate::plugin::runtime::Runtime,
        key: &str,
        work: F,
    ) -> Submitted
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
        let key = key.to_string();
        runtime.spawn_blocking(move || jobs.run_loop(&key, work));
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
        let rt = crate::plugin::runtime::Runtime::new().unwrap();
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
        assert_eq!(jobs.submit(&rt, "s1", work.clone()), Submitted::Started);
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(jobs.submit(&rt, "s1", work.clone()), Submitted::Coalesced);
        assert_eq!(jobs.submit(&rt, "s1", work.clone()), Submitted::Coalesced);
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
        let rt = crate::plugin::runtime::Runtime::new().unwrap();
        let jobs = Jobs::default();
        jobs.submit(&rt, "boom", || panic!("job failure"));
        assert!(jobs.flush(Duration::from_secs(5)).idle);
        assert!(jobs.shutdown(Duration::from_secs(1)).idle);
        assert_eq!(jobs.submit(&rt, "later", || {}), Submitted::Rejected);
    }
}
