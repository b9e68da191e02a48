//! Redaction of secret-looking strings from text that leaves the process.
//!
//! Session transcripts routinely contain pasted keys, `.env` files, curl
//! commands with bearer tokens and connection strings. None of that may reach
//! a model provider, a log line or an error message, so every text sent to a
//! model goes through [`redact`] (the model layer calls it itself).
//!
//! The patterns favour recall over precision: replacing a harmless token with
//! `[REDACTED]` costs a little summary quality, leaking a key costs much more.

use std::borrow::Cow;
use std::sync::LazyLock;

use regex::{Captures, Regex};

/// What every secret is replaced with.
pub const REDACTED: &str = "[REDACTED]";

struct Rule {
    re: Regex,
    /// Replacement template (`$name` groups keep the non-secret context).
    with: &'static str,
}

fn rule(pattern: &str, with: &'static str) -> Rule {
    // The patterns are constants covered by the unit tests below, so a failure
    // here is a programming error caught by `cargo test`, never input-driven.
    #[allow(clippy::expect_used)]
    let re = Regex::new(pattern).expect("redaction pattern compiles");
    Rule { re, with }
}

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(|| {
    vec![
        // PEM private keys: the whole block; an unterminated block up to the end of its base64 body.
        rule(
            r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY-----(?:(?s:.*?)-----END[A-Z0-9 ]*PRIVATE KEY-----|[A-Za-z0-9+/=\s\\]*)",
            REDACTED,
        ),
        // Passwords in URLs: keep scheme, user and host.
        rule(r"(?i)\b(?P<pre>[a-z][a-z0-9+.\-]*://[^\s:/@\[\]]+:)[^\s@/]+@", "${pre}[REDACTED]@"),
        // Bearer / Basic / token authorization values.
        rule(r"(?i)\b(?P<pre>bearer\s+)[A-Za-z0-9._~+/\-]{8,}=*", "${pre}[REDACTED]"),
        rule(r"(?i)\b(?P<pre>authorization\s*[:=]\s*[a-z]+\s+)[^\s'\x22]{8,}", "${pre}[REDACTED]"),
        // Provider and platform keys with recognisable prefixes (sk-, sk-ant-, sk-or-, sk-proj- ...).
        rule(r"\bsk-[A-Za-z0-9_\-]{16,}", REDACTED),
        rule(r"\bAIza[0-9A-Za-z_\-]{30,}", REDACTED),
        rule(r"\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{20,})", REDACTED),
        rule(r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", REDACTED),
        rule(r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b", REDACTED),
        rule(r"\bglpat-[A-Za-z0-9_\-]{20,}", REDACTED),
        rule(
            r"\b(?:[sr]k_(?:live|test)_[A-Za-z0-9]{16,}|hf_[A-Za-z0-9]{30,}|npm_[A-Za-z0-9]{36,}|ya29\.[A-Za-z0-9_\-]{20,})",
            REDACTED,
        ),
        // JWT-like: three base64url parts, the first two starting as JSON objects.
        rule(r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*", REDACTED),
        // `password=...`, `API_KEY: ...`, `"secret": "..."`: the identifier must END in the keyword,
        // so `max_tokens=1500` or `tokenizer = x` are left alone; `==` comparisons are not assignments.
        rule(
            r#"(?i)\b(?P<pre>[A-Za-z0-9_.\-]*(?:password|passwd|pwd|secret|token|api[_\-]?key|access[_\-]?key|private[_\-]?key|credential)["']?\s*[:=]\s*["']?)(?P<value>[^\s"'&,;}=\\][^\s"'&,;}\\]*)"#,
            "${pre}[REDACTED]",
        ),
    ]
});

/// Assigned values that are references or settings, not secrets:
/// `${{ secrets.X }}`, `$VAR`, `<your key>`, `id-token: write`, `***`.
fn is_placeholder(value: &str) -> bool {
    const WORDS: &[&str] =
        &["write", "read", "none", "true", "false", "null", "undefined", "required", "optional", "string"];
    value.starts_with(['$', '<', '{', '%'])
        || WORDS.iter().any(|w| value.eq_ignore_ascii_case(w))
        || value.chars().all(|c| matches!(c, '.' | '*' | 'x' | 'X'))
}

/// `text` with every secret-looking string replaced by `[REDACTED]`.
/// Borrows when nothing matched.
pub fn redact(text: &str) -> Cow<'_, str> {
    let mut out: Cow<'_, str> = Cow::Borrowed(text);
    for rule in RULES.iter() {
        let replace = |caps: &Captures<'_>| {
            let mut dst = String::new();
            match caps.name("value") {
                Some(value) if is_placeholder(value.as_str()) => dst.push_str(&caps[0]),
                _ => caps.expand(rule.with, &mut dst),
            }
            dst
        };
        let replaced = match rule.re.replace_all(&out, replace) {
            Cow::Owned(s) => Some(s),
            Cow::Borrowed(_) => None,
        };
        if let Some(s) = replaced {
            out = Cow::Owned(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_redacted(input: &str, secret: &str) {
        let out = redact(input);
        assert!(!out.contains(secret), "{secret:?} survived in {out:?}");
        assert!(out.contains(REDACTED), "{out:?}");
    }

    #[test]
    fn provider_keys() {
        assert_redacted("key sk-proj-Ab3dEfGh1jKlMnOpQrStUvWx done", "Ab3dEfGh1jKlMnOpQrStUvWx");
        assert_redacted("export KEY=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz012345", "AbCdEfGhIjKlMnOpQrStUv");
        assert_redacted("sk-or-v1-0123456789abcdef0123456789abcdef", "0123456789abcdef0123");
        assert_redacted("google AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW here", "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOp");
        assert_redacted("ghp_0123456789abcdefghijABCDEFGHIJ012345", "ghp_0123456789abcdef");
        assert_redacted("github_pat_11ABCDEFG0123456789_abcdefghijklmnop", "github_pat_11ABCDEFG");
        assert_redacted("slack xoxb-123456789012-abcdefghijkl", "xoxb-123456789012");
        assert_redacted("xoxp-1234567890-abcdef", "xoxp-1234567890");
        assert_redacted("aws AKIAIOSFODNN7EXAMPLE id", "AKIAIOSFODNN7EXAMPLE");
        assert_redacted("gitlab glpat-abcdefghij0123456789", "glpat-abcdefghij0123456789");
        assert_redacted("stripe sk_live_51H8abcdefghijklmnop", "51H8abcdefghijklmnop");
        assert_redacted("hf_abcdefghijklmnopqrstuvwxyzABCDEF", "hf_abcdefghijklmnopqrstuvwxyz");
        assert_redacted("npm_abcdefghijklmnopqrstuvwxyz0123456789", "npm_abcdefghijklmnopqrstuvwxyz");
        assert_redacted("ya29.a0AfH6SMBabcdefghijklmnopqrstu", "a0AfH6SMBabcdefghijklmnop");
    }

    #[test]
    fn jwt_and_bearer() {
        let jwt = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U";
        assert_redacted(&format!("token was {jwt}."), "dozjgNryP4J3jVmNHl0w5N");
        let out = redact("curl -H 'Authorization: Bearer abc.def-ghi_jkl012345' https://x");
        assert!(out.contains("Bearer [REDACTED]"), "{out}");
        assert!(!out.contains("abc.def-ghi"), "{out}");
        assert_redacted("Authorization: Basic dXNlcjpodW50ZXIy", "dXNlcjpodW50ZXIy");
    }

    #[test]
    fn pem_blocks() {
        let pem = "before\n-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7\nQWERTY==\n-----END RSA PRIVATE KEY-----\nafter";
        let out = redact(pem);
        assert_eq!(out, "before\n[REDACTED]\nafter");
        let open = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAA\nAAAB\n";
        assert_redacted(open, "b3BlbnNzaC1rZXktdjEAAAA");
        // Public keys and certificates are not secrets.
        let public = "-----BEGIN PUBLIC KEY-----\nMFkwEwYH\n-----END PUBLIC KEY-----";
        assert_eq!(redact(public), public);
    }

    #[test]
    fn url_passwords_keep_user_and_host() {
        let out = redact("DATABASE_URL postgres://admin:hunter2@db.internal:5432/app");
        assert_eq!(out, "DATABASE_URL postgres://admin:[REDACTED]@db.internal:5432/app");
        assert_eq!(redact("see https://example.com:8080/path"), "see https://example.com:8080/path");
    }

    #[test]
    fn assignments() {
        assert_eq!(redact("password=hunter2 next"), "password=[REDACTED] next");
        assert_eq!(redact(r#"{"client_secret": "s3cr3t!"}"#), r#"{"client_secret": "[REDACTED]"}"#);
        assert_eq!(redact("GITHUB_TOKEN: abc123"), "GITHUB_TOKEN: [REDACTED]");
        assert_eq!(redact("aws_secret_access_key = wJalrXUtnFEMI"), "aws_secret_access_key = [REDACTED]");
        assert_eq!(redact("export OPENAI_API_KEY='xyz789'"), "export OPENAI_API_KEY='[REDACTED]'");
        assert_eq!(redact("db?user=a&password=p4ss&x=1"), "db?user=a&password=[REDACTED]&x=1");
    }

    #[test]
    fn references_and_settings_are_not_secrets() {
        for text in [
            "GITHUB_TOKEN: ${{ secrets.GITHUB_TOKEN }}",
            "permissions:\n  id-token: write",
            "password=<your password>",
            "api_key = $OPENAI_API_KEY",
            "token: ***",
        ] {
            assert_eq!(redact(text), text);
        }
        // Escaped newlines end the value (text that went through JSON).
        assert_eq!(redact(r"GEMINI_API_KEY=abc123\nNEXT=1"), r"GEMINI_API_KEY=[REDACTED]\nNEXT=1");
    }

    #[test]
    fn ordinary_text_is_borrowed_and_unchanged() {
        for text in [
            "max_tokens=1500 and max_output_tokens: 300",
            "if password == input { ok }",
            "the tokenizer = Tokenizer::new()",
            "task-force meeting; ask-me-anything",
            "Use sk- prefixed keys from the dashboard",
            "commit 3f2a9c1 fixed ticket ABC-123",
        ] {
            let out = redact(text);
            assert!(matches!(out, Cow::Borrowed(_)), "{text:?} became {out:?}");
        }
    }

    #[test]
    fn redaction_is_idempotent() {
        let once = redact("password=hunter2 sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx").into_owned();
        assert_eq!(redact(&once), once);
    }
}
