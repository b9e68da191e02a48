//! Spreading short jobs over the CPUs: the catalog's scans and fuzzy
//! lookups, and the two halves of a large session file, run on scoped
//! threads started for the job (no pool outlives it).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The CPUs this process may use (at least 1). Cached: the std call reads
/// cgroup files, too slow to repeat per lookup.
pub(crate) fn cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// Map `f` over `items` on up to `max_threads` threads, each taking the next
/// item as it goes (items may differ much in cost, and a thread that is
/// descheduled holds up the job by one item at most). Results come back in
/// item order; an item whose `f` panicked yields `None`.
pub(crate) fn map_each<I: Sync, O: Send>(
    items: &[I],
    max_threads: usize,
    f: impl Fn(&I) -> O + Sync,
) -> Vec<Option<O>> {
    let threads = cpus().min(max_threads).min(items.len());
    if threads < 2 {
        return items.iter().map(|i| Some(f(i))).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut mine = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i) else { break };
            if let Ok(o) = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(item))) {
                mine.push((i, o));
            }
        }
        mine
    };
    let results: Vec<Vec<(usize, O)>> = std::thread::scope(|s| {
        // No thread to be had: the others (and this one) take its items.
        let work = &work;
        let helpers: Vec<_> =
            (1..threads).filter_map(|_| std::thread::Builder::new().spawn_scoped(s, work).ok()).collect();
        let mut all = vec![work()];
        all.extend(helpers.into_iter().filter_map(|h| h.join().ok()));
        all
    });
    let mut out: Vec<Option<O>> = std::iter::repeat_with(|| None).take(items.len()).collect();
    for (i, o) in results.into_iter().flatten() {
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(o);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_keep_item_order_and_a_panic_loses_only_its_item() {
        let items: Vec<usize> = (0..200).collect();
        let out = map_each(&items, 4, |&i| {
            if i == 7 {
                panic!("item 7 fails");
            }
            i * 2
        });
        assert_eq!(out.len(), 200);
        assert_eq!(out[7], None);
        assert!(out.iter().enumerate().all(|(i, o)| i == 7 || *o == Some(i * 2)));
        assert!(map_each(&[] as &[usize], 4, |&i| i).is_empty());
    }
}
