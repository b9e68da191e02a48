//! Forwards the plugin's `tracing` events to the host's log (or, in the CLI,
//! which has no host, its warnings to stderr).
//!
//! The plugin library carries its own copy of tracing's globals, so a
//! subscriber installed by the host never sees them. This layer is installed
//! as the plugin's global default once, and sends each event through
//! [`crate::plugin::host::HostApi::log`] of the most recently created plugin instance.

use std::fmt::Write as _;
use std::sync::{Mutex, OnceLock};

use pi_ext_abi::LogLevel;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::Layer;

use crate::plugin::host::Host;

/// Where events go.
#[derive(Clone)]
enum Sink {
    Host(Host),
    /// Warnings and errors on stderr, one line each after this prefix.
    Stderr(String),
}

static SINK: Mutex<Option<Sink>> = Mutex::new(None);

/// Route this library's tracing events to `host` (idempotent).
pub fn forward_to(host: Host) {
    install(Sink::Host(host));
}

/// Print this library's warnings and errors on stderr, one line each after
/// `prefix` (the CLI).
pub fn to_stderr(prefix: &str) {
    install(Sink::Stderr(prefix.to_string()));
}

fn install(sink: Sink) {
    if let Ok(mut slot) = SINK.lock() {
        *slot = Some(sink);
    }
    static INSTALLED: OnceLock<()> = OnceLock::new();
    INSTALLED.get_or_init(|| {
        let subscriber = tracing_subscriber::registry().with(HostLayer);
        // Fails only if this library already has a global subscriber; then ours is not needed.
        let _ = tracing::subscriber::set_global_default(subscriber);
        // This library has its own copy of std, so its panics (caught at the FFI boundary)
        // would print std's multi-line report on the host's stderr; send them to the host log.
        std::panic::set_hook(Box::new(
            |info| tracing::error!(target: "session_index::panic", "{info}"),
        ));
    });
}

struct HostLayer;

impl<S: Subscriber> Layer<S> for HostLayer {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let level = match *event.metadata().level() {
            Level::TRACE => return,
            Level::DEBUG => LogLevel::Debug,
            Level::INFO => LogLevel::Info,
            Level::WARN => LogLevel::Warn,
            Level::ERROR => LogLevel::Error,
        };
        let mut visitor = MessageVisitor::default();
        event.record(&mut visitor);
        let message = visitor.message + &visitor.fields;
        match SINK.lock().ok().and_then(|slot| slot.clone()) {
            Some(Sink::Host(host)) => host.log(level, event.metadata().target(), &message),
            Some(Sink::Stderr(prefix)) if matches!(level, LogLevel::Warn | LogLevel::Error) => {
                eprintln!("{prefix}: {message}")
            }
            _ => {}
        }
    }
}

#[derive(Default)]
struct MessageVisitor {
    message: String,
    fields: String,
}

impl Visit for MessageVisitor {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            let _ = write!(self.message, "{value:?}");
        } else {
            let _ = write!(self.fields, " {}={value:?}", field.name());
        }
    }

    fn record_str(&mut self, field: &Field, value: &str) {
        if field.name() == "message" {
            self.message.push_str(value);
        } else {
            let _ = write!(self.fields, " {}={value}", field.name());
        }
    }
}
