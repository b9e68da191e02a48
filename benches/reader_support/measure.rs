//! One measurement = one child process, so each peak RSS belongs to exactly
//! one open + branch + build context + serialize.
//!
//! Both sides report their own elapsed time around the reading work (process
//! start-up and module loading excluded) and their own peak RSS (`VmHWM` for
//! ours, `process.resourceUsage().maxRSS` for node, both the kernel's
//! high-water mark of the whole process). The parent also polls the child's
//! `VmHWM` while it runs, which is the only figure left when node dies.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

/// What one child reported (or how it failed).
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Sample {
    pub ok: bool,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub secs: f64,
    #[serde(default)]
    pub open_secs: f64,
    /// CPU time of the same work (robust to other load on the machine).
    #[serde(default)]
    pub cpu_secs: f64,
    /// Peak RSS reported by the process itself, in KiB.
    #[serde(default)]
    pub peak_rss_kb: u64,
    /// Peak RSS before reading started (runtime, binary, modules), in KiB.
    #[serde(default)]
    pub baseline_rss_kb: u64,
    #[serde(default)]
    pub branch_len: u64,
    #[serde(default)]
    pub messages: u64,
    #[serde(default)]
    pub serialized_bytes: u64,
    /// Highest `VmHWM` the parent saw while polling, in KiB.
    #[serde(default)]
    pub polled_peak_rss_kb: u64,
    #[serde(default)]
    pub wall_secs: f64,
}

/// `VmHWM` (peak resident set) of a process, in KiB.
pub fn vm_hwm_kb(pid: Option<u32>) -> Option<u64> {
    let path = match pid {
        Some(p) => format!("/proc/{p}/status"),
        None => "/proc/self/status".to_string(),
    };
    let status = std::fs::read_to_string(path).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// CPU time (user + system) consumed so far by the whole process, all
/// threads included: the same measure as node's `process.cpuUsage()` on
/// the pi side.
fn process_cpu_secs() -> f64 {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: getrusage writes one `rusage` into the pointer it is given.
    let ok = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) } == 0;
    if !ok {
        return 0.0;
    }
    // SAFETY: initialized by the successful call (and zeroed before it).
    let usage = unsafe { usage.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    secs(usage.ru_utime) + secs(usage.ru_stime)
}

/// The child side for our reader: read `file` and print one JSON [`Sample`].
pub fn run_ours_child(file: &Path, dump: Option<&Path>) -> i32 {
    let baseline = vm_hwm_kb(None).unwrap_or(0);
    let cpu0 = process_cpu_secs();
    let t0 = Instant::now();
    let session = match session_index::session::open(file) {
        Ok(s) => s,
        Err(e) => {
            let sample = Sample {
                error: Some(e.to_string()),
                ..Sample::default()
            };
            println!("{}", serde_json::to_string(&sample).unwrap_or_default());
            return 1;
        }
    };
    let open_secs = t0.elapsed().as_secs_f64();
    let branch = session.branch(None);
    let mut messages = 0;
    let text = session_index::session::views::serialize_context_refs(
        session.context_refs(&branch).inspect(|_| messages += 1),
    );
    let secs = t0.elapsed().as_secs_f64();
    let cpu_secs = process_cpu_secs() - cpu0;
    let sample = Sample {
        ok: true,
        secs,
        open_secs,
        cpu_secs,
        peak_rss_kb: vm_hwm_kb(None).unwrap_or(0),
        baseline_rss_kb: baseline,
        branch_len: branch.len() as u64,
        messages,
        serialized_bytes: text.len() as u64,
        ..Sample::default()
    };
    if let Some(dump) = dump {
        if let Err(e) = std::fs::write(dump, &text) {
            eprintln!("cannot write {}: {e}", dump.display());
        }
    }
    println!("{}", serde_json::to_string(&sample).unwrap_or_default());
    0
}

/// Run `cmd`, polling its peak RSS, killing it after `timeout`; parse its
/// last stdout line as a [`Sample`].
pub fn run_child(mut cmd: Command, timeout: Duration) -> Sample {
    let start = Instant::now();
    let mut child = match cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) => {
            return Sample {
                error: Some(format!("cannot start: {e}")),
                ..Sample::default()
            }
        }
    };
    let pid = child.id();
    let pipe_reader = |pipe: Option<Box<dyn Read + Send>>| {
        thread::spawn(move || {
            let mut buf = String::new();
            if let Some(mut p) = pipe {
                let _ = p.read_to_string(&mut buf);
            }
            buf
        })
    };
    let out = pipe_reader(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let err = pipe_reader(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let mut polled = 0;
    let mut timed_out = false;
    let status = loop {
        if let Some(hwm) = vm_hwm_kb(Some(pid)) {
            polled = polled.max(hwm);
        }
        match child.try_wait() {
            Ok(Some(status)) => break Some(status),
            Ok(None) if start.elapsed() > timeout => {
                timed_out = true;
                let _ = child.kill();
                break child.wait().ok();
            }
            Ok(None) => thread::sleep(Duration::from_millis(20)),
            Err(_) => break None,
        }
    };
    let wall_secs = start.elapsed().as_secs_f64();
    let stdout = out.join().unwrap_or_default();
    let stderr = err.join().unwrap_or_default();
    let parsed = stdout
        .lines()
        .rev()
        .find_map(|l| serde_json::from_str::<Sample>(l).ok());
    let mut sample = match parsed {
        Some(s) => s,
        None => Sample {
            error: Some(classify_failure(&stderr, status, timed_out, timeout)),
            ..Sample::default()
        },
    };
    if timed_out {
        sample.ok = false;
        sample.error = Some(format!("timeout after {}s", timeout.as_secs()));
    }
    sample.polled_peak_rss_kb = polled;
    sample.wall_secs = wall_secs;
    sample
}

/// A one-line reason for a child that printed no result.
fn classify_failure(
    stderr: &str,
    status: Option<std::process::ExitStatus>,
    timed_out: bool,
    timeout: Duration,
) -> String {
    if timed_out {
        return format!("timeout after {}s", timeout.as_secs());
    }
    if stderr.contains("heap out of memory") || stderr.contains("Allocation failed") {
        return "OOM (JavaScript heap out of memory)".to_string();
    }
    if stderr.contains("ERR_STRING_TOO_LONG") || stderr.contains("Cannot create a string longer") {
        return "ERR_STRING_TOO_LONG (file larger than V8's maximum string length)".to_string();
    }
    let last = stderr
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let status = status
        .map(|s| s.to_string())
        .unwrap_or_else(|| "unknown status".to_string());
    format!("{status}: {}", last.chars().take(200).collect::<String>())
}
