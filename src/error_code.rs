//! The one list of error codes the plugin reports: a tool result's
//! `details.code`, an unresolved `@@` reference's `code`, telemetry. One
//! enum, one spelling on the wire (`SESSION_NOT_FOUND`), so a code means the
//! same thing wherever it appears.

/// Why a request about a session failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ErrorCode {
    InvalidArgs,
    CallLimitExceeded,
    /// More `@@` references in one prompt than configured.
    TooManyReferences,
    SessionNotFound,
    SessionAmbiguous,
    SessionFileMissing,
    /// The reference names a file outside the sessions directory.
    SessionOutside,
    SessionParseFailed,
    /// The session's project or file matches `privacy.exclude`.
    SessionExcluded,
    SessionEmpty,
    QueryModelUnavailable,
    QueryTransportFailed,
    QueryInvalidOutput,
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match serde_json::to_value(self) {
            Ok(serde_json::Value::String(code)) => f.write_str(&code),
            _ => Err(std::fmt::Error),
        }
    }
}
