//! One provider request over the shared HTTP client: timeout, size-limited
//! read, and the single 429/503/529 retry that honours `Retry-After`.
//!
//! The client is ureq: blocking HTTP/1.1 over rustls. The calls already ran on
//! background job threads (never on a host thread that pi waits on), so an async
//! runtime in the host's process bought nothing but its threads and the build
//! time of tokio, hyper and reqwest.

use std::io::Read;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde_json::Value;
use ureq::http::header::{HeaderValue, CONTENT_TYPE, RETRY_AFTER};

use super::ModelError;
use crate::redact::redact;
use crate::text::one_line;

/// Wait used for a 429/503 without a usable `Retry-After`.
const DEFAULT_RETRY_WAIT: Duration = Duration::from_secs(1);
/// Error bodies are read only this far: they carry one message, and a huge
/// error page is not worth buffering.
const MAX_ERROR_BODY: usize = 64 * 1024;
/// Connecting (DNS, TCP, TLS) to a provider.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// A pooled connection older than this is not reused.
const POOL_IDLE: Duration = Duration::from_secs(60);

/// The HTTP client every provider call of a process goes through (cheap to
/// clone; connections are pooled). It never follows a redirect: provider keys
/// travel in `Authorization`, `x-api-key` and `x-goog-api-key`, and none of
/// them may reach another host. Any status is an answer, read by [`execute`].
pub fn client() -> ureq::Agent {
    ureq::Agent::config_builder()
        .timeout_connect(Some(CONNECT_TIMEOUT))
        .max_idle_age(POOL_IDLE)
        .max_redirects(0)
        .max_redirects_will_error(false)
        .http_status_as_error(false)
        .build()
        .into()
}

/// A provider request, built by the wire modules.
#[derive(Debug)]
pub(super) struct WireRequest {
    pub url: String,
    /// `(name, value, sensitive)`: sensitive values (API keys) are marked so
    /// the HTTP client never prints them.
    pub headers: Vec<(&'static str, String, bool)>,
    pub body: Value,
    /// Anthropic JSON-only prompting: the answer continues a prefilled `{`.
    pub prefilled: bool,
}

struct Reply {
    status: u16,
    retry_after: Option<Duration>,
    body: Vec<u8>,
}

/// Send `request`, returning the body of a 2xx answer. Each attempt has the
/// whole `timeout`, from connecting to the last byte of the body.
pub(super) fn execute(
    client: &ureq::Agent,
    request: &WireRequest,
    timeout: Duration,
    max_bytes: usize,
) -> Result<Vec<u8>, ModelError> {
    let body = serde_json::to_vec(&request.body)
        .map_err(|e| ModelError::Transport(format!("cannot encode the request: {e}")))?;
    let mut retried = false;
    loop {
        let reply = send_once(client, request, &body, timeout, max_bytes)?;
        if (200..300).contains(&reply.status) {
            return Ok(reply.body);
        }
        // 529 is Anthropic's "overloaded", its 503.
        if matches!(reply.status, 429 | 503 | 529) && !retried {
            let wait = reply.retry_after.unwrap_or(DEFAULT_RETRY_WAIT);
            // A wait longer than the whole request budget would only delay a failure.
            if wait <= timeout {
                tracing::debug!(
                    status = reply.status,
                    wait_ms = wait.as_millis() as u64,
                    "rate limited, retrying once"
                );
                std::thread::sleep(wait);
                retried = true;
                continue;
            }
        }
        return Err(ModelError::Http {
            status: reply.status,
            message: error_message(&reply.body),
        });
    }
}

fn send_once(
    client: &ureq::Agent,
    request: &WireRequest,
    body: &[u8],
    timeout: Duration,
    max_bytes: usize,
) -> Result<Reply, ModelError> {
    let timeout_ms = timeout.as_millis().min(u64::MAX as u128) as u64;
    let transport = |error: ureq::Error| match error {
        ureq::Error::Timeout(_) => ModelError::Timeout(timeout_ms),
        other => transport_error(other),
    };
    let mut builder = client
        .post(&request.url)
        .config()
        .timeout_global(Some(timeout))
        .build()
        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    for (name, value, sensitive) in &request.headers {
        let mut header = HeaderValue::from_str(value)
            .map_err(|_| ModelError::Transport(format!("the {name} header value is not valid")))?;
        header.set_sensitive(*sensitive);
        builder = builder.header(*name, header);
    }
    let mut response = builder.send(body).map_err(transport)?;
    let status = response.status().as_u16();
    let retry_after = response
        .headers()
        .get(RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| parse_retry_after(v, SystemTime::now()));
    let success = (200..300).contains(&status);
    if success
        && response
            .body()
            .content_length()
            .is_some_and(|len| len > max_bytes as u64)
    {
        return Err(ModelError::ResponseTooLarge(max_bytes));
    }
    let limit = if success {
        max_bytes
    } else {
        max_bytes.min(MAX_ERROR_BODY)
    };
    // One byte past the limit tells a body that is too large from one that fits.
    let mut body = Vec::new();
    response
        .body_mut()
        .as_reader()
        .take(limit as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| transport(ureq::Error::from(e)))?;
    if body.len() > limit {
        if success {
            // Dropping the response closes the connection: the rest is never read.
            return Err(ModelError::ResponseTooLarge(max_bytes));
        }
        body.truncate(limit);
    }
    Ok(Reply {
        status,
        retry_after,
        body,
    })
}

/// A one-line, redacted description of a transport error, with its causes.
fn transport_error(error: ureq::Error) -> ModelError {
    let mut text = error.to_string();
    let mut source = std::error::Error::source(&error);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    ModelError::Transport(one_line(&redact(&text), 300))
}

/// The provider's error message: `error.message` in all three wire formats,
/// else the start of the body. Redacted: some APIs echo part of the key.
pub(super) fn error_message(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(body);
    let message = serde_json::from_str::<Value>(&text)
        .ok()
        .and_then(|v| {
            let error = v.get("error").unwrap_or(&v);
            error
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_string)
                .or_else(|| error.as_str().map(str::to_string))
        })
        .unwrap_or_else(|| text.into_owned());
    let message = one_line(&redact(&message), 300);
    if message.is_empty() {
        "(no message)".into()
    } else {
        message
    }
}

/// `Retry-After` as delay-seconds or an HTTP date (IMF-fixdate).
pub(super) fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = parse_http_date(value)?;
    let now = now.duration_since(UNIX_EPOCH).ok()?.as_secs();
    Some(Duration::from_secs(at.saturating_sub(now)))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT` → seconds since the epoch.
fn parse_http_date(value: &str) -> Option<u64> {
    let (_weekday, rest) = value.split_once(", ")?;
    let mut parts = rest.split(' ');
    let day: u64 = parts.next()?.parse().ok()?;
    let month = parts.next()?;
    let year: i64 = parts.next()?.parse().ok()?;
    let time = parts.next()?;
    if parts.next()? != "GMT" || parts.next().is_some() {
        return None;
    }
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let month = MONTHS.iter().position(|m| *m == month)? + 1;
    let mut hms = time.split(':').map(|p| p.parse::<u64>().ok());
    let (h, m, s) = (hms.next()??, hms.next()??, hms.next()??);
    if !(1..=31).contains(&day)
        || !(1970..=9999).contains(&year)
        || h > 23
        || m > 59
        || s > 60
        || hms.next().is_some()
    {
        return None;
    }
    let iso = format!("{year:04}-{month:02}-{day:02}T{h:02}:{m:02}:{s:02}Z");
    u64::try_from(crate::session::iso_to_ms(&iso) / 1000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_seconds_and_dates() {
        let now = UNIX_EPOCH + Duration::from_secs(784_111_770); // Sun, 06 Nov 1994 08:49:30 GMT
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:37 GMT", now),
            Some(Duration::from_secs(7))
        );
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:49:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon", now), None);
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 25:49:37 GMT", now),
            None
        );
        assert_eq!(parse_http_date("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(
            parse_http_date("Tue, 29 Feb 2028 12:00:00 GMT"),
            Some(1_835_438_400)
        );
    }

    #[test]
    fn error_messages_from_each_wire_format() {
        assert_eq!(
            error_message(br#"{"error":{"message":"Rate limit reached","type":"x"}}"#),
            "Rate limit reached"
        );
        assert_eq!(
            error_message(
                br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            error_message(br#"{"error":{"code":500,"message":"Internal","status":"INTERNAL"}}"#),
            "Internal"
        );
        assert_eq!(
            error_message(b"<html>\n bad gateway </html>"),
            "<html> bad gateway </html>"
        );
        let echoed =
            error_message(br#"{"error":{"message":"Incorrect API key provided: sk-proj-abcdefghijklmnopqrstuv"}}"#);
        assert!(!echoed.contains("abcdefghijklmnop"), "{echoed}");
    }
}
