//! How long an update's write transactions held the store's write lock: the
//! store ends each with a trace event ([`HOLD_TARGET`], `held_us`), which a
//! subscriber installed here collects (the build child's only subscriber).

use std::sync::{Arc, Mutex};

use session_index::store::HOLD_TARGET;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

/// The holds collected so far, in µs.
pub type Holds = Arc<Mutex<Vec<u64>>>;

/// Start collecting the holds of this process's write transactions.
pub fn collect() -> Holds {
    let holds = Holds::default();
    let subscriber = tracing_subscriber::registry().with(Collector(holds.clone()));
    tracing::subscriber::set_global_default(subscriber).expect("the only subscriber");
    holds
}

/// p50, p99 and max in ms, and how many.
pub fn percentiles(holds: &Holds) -> [f64; 4] {
    let mut us = holds.lock().expect("holds").clone();
    us.sort_unstable();
    let Some(&max) = us.last() else {
        return [f64::NAN, f64::NAN, f64::NAN, 0.0];
    };
    let at = |q: usize| us[(us.len() * q / 100).min(us.len() - 1)] as f64 / 1000.0;
    [at(50), at(99), max as f64 / 1000.0, us.len() as f64]
}

struct Collector(Holds);

impl<S: tracing::Subscriber> Layer<S> for Collector {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() == HOLD_TARGET {
            let mut held = Held(None);
            event.record(&mut held);
            if let Some(us) = held.0 {
                self.0.lock().expect("holds").push(us);
            }
        }
    }
}

struct Held(Option<u64>);

impl Visit for Held {
    fn record_u64(&mut self, field: &Field, value: u64) {
        if field.name() == "held_us" {
            self.0 = Some(value);
        }
    }

    fn record_debug(&mut self, _: &Field, _: &dyn std::fmt::Debug) {}
}
