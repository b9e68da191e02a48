//! The plugin's own async runtime and HTTP client.
//!
//! A plugin cannot borrow the host's tokio runtime (it is a separate copy of
//! tokio inside another library), so it owns one small multi-thread runtime
//! and one reqwest client with connection pooling, shared by every feature.

use std::future::Future;
use std::time::Duration;

/// Runtime + HTTP client, created once per plugin instance.
pub struct Runtime {
    rt: Option<tokio::runtime::Runtime>,
    handle: tokio::runtime::Handle,
    http: reqwest::Client,
}

impl Runtime {
    pub fn new() -> Result<Self, String> {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .max_blocking_threads(8)
            .thread_name("session-index")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the plugin's tokio runtime: {e}"))?;
        let http = reqwest::Client::builder()
            .use_rustls_tls()
            .connect_timeout(Duration::from_secs(10))
            .pool_idle_timeout(Duration::from_secs(60))
            // reqwest strips only `Authorization` on cross-host redirects; provider
            // keys also travel in `x-api-key` / `x-goog-api-key`, so never follow one.
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("cannot build the HTTP client: {e}"))?;
        let handle = rt.handle().clone();
        Ok(Runtime {
            rt: Some(rt),
            handle,
            http,
        })
    }

    pub fn handle(&self) -> &tokio::runtime::Handle {
        &self.handle
    }

    /// The shared HTTP client (cheap to clone).
    pub fn http(&self) -> &reqwest::Client {
        &self.http
    }

    /// Run a future to completion from a non-async thread (a host thread or a
    /// background job thread). Never call this from inside an async task.
    pub fn block_on<F: Future>(&self, future: F) -> F::Output {
        self.handle.block_on(future)
    }

    /// Run blocking work on the runtime's blocking pool.
    pub fn spawn_blocking<F, R>(&self, f: F) -> tokio::task::JoinHandle<R>
    where
        F: FnOnce() -> R + Send + 'static,
        R: Send + 'static,
    {
        self.handle.spawn_blocking(f)
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // Dropping a runtime from inside one of its own threads panics; shutting
        // it down in the background never does and never blocks the host.
        if let Some(rt) = self.rt.take() {
            rt.shutdown_background();
        }
    }
}
