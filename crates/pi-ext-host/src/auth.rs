//! API-key lookup the way pi resolves it (pi's docs/providers.md): an
//! `api_key` entry in `<agent dir>/auth.json` first, then the provider's
//! environment variable. Keys are returned to the plugin only; callers record
//! where a key came from, never the key.

use std::path::Path;

use serde_json::Value;

/// Where a key was found, for the `apiKey` effect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeySource {
    AuthFile,
    /// The environment variable's name.
    Env(String),
}

impl KeySource {
    pub fn describe(&self) -> String {
        match self {
            KeySource::AuthFile => "auth.json".to_string(),
            KeySource::Env(name) => format!("env:{name}"),
        }
    }
}

/// The environment variables pi reads for a provider, in order.
pub fn env_vars(provider: &str) -> Vec<String> {
    let fixed: &[&str] = match provider {
        "anthropic" => &["ANTHROPIC_OAUTH_TOKEN", "ANTHROPIC_API_KEY"],
        "openai" => &["OPENAI_API_KEY"],
        "google" | "gemini" => &["GEMINI_API_KEY", "GOOGLE_API_KEY"],
        "openrouter" => &["OPENROUTER_API_KEY"],
        "azure-openai-responses" => &["AZURE_OPENAI_API_KEY"],
        "vercel-ai-gateway" => &["AI_GATEWAY_API_KEY"],
        "huggingface" => &["HF_TOKEN"],
        _ => &[],
    };
    if !fixed.is_empty() {
        return fixed.iter().map(|s| s.to_string()).collect();
    }
    let generic: String = provider
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    vec![format!("{generic}_API_KEY")]
}

/// Look up the key for `provider`. A problem with auth.json (unreadable,
/// malformed, unsupported entry) is returned as a note for the log, never
/// with the key in it.
pub fn lookup(provider: &str, agent_dir: &Path) -> (Option<(String, KeySource)>, Option<String>) {
    let (from_file, note) = from_auth_file(provider, agent_dir);
    if let Some(key) = from_file {
        return (Some((key, KeySource::AuthFile)), note);
    }
    for var in env_vars(provider) {
        if let Some(key) = std::env::var(&var).ok().filter(|k| !k.trim().is_empty()) {
            return (Some((key, KeySource::Env(var))), note);
        }
    }
    (None, note)
}

fn from_auth_file(provider: &str, agent_dir: &Path) -> (Option<String>, Option<String>) {
    let path = agent_dir.join("auth.json");
    let text = match regular_files::read_regular(&path) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (None, None),
        Err(e) => return (None, Some(format!("{}: {e}", path.display()))),
    };
    let doc: Value = match serde_json::from_str(&text) {
        Ok(doc) => doc,
        // serde_json's message names line and column only, never the text.
        Err(e) => return (None, Some(format!("{}: invalid JSON: {e}", path.display()))),
    };
    let Some(entry) = doc.get(provider) else {
        return (None, None);
    };
    match entry.get("type").and_then(Value::as_str) {
        Some("api_key") => {}
        Some("oauth") => {
            let note = format!(
                "{}: '{provider}' uses OAuth, which this host does not refresh",
                path.display()
            );
            return (None, Some(note));
        }
        _ => {
            return (
                None,
                Some(format!(
                    "{}: '{provider}' entry has no known type",
                    path.display()
                )),
            )
        }
    }
    let Some(key) = entry
        .get("key")
        .and_then(Value::as_str)
        .filter(|k| !k.trim().is_empty())
    else {
        return (
            None,
            Some(format!("{}: '{provider}' entry has no key", path.display())),
        );
    };
    if key.starts_with('!') {
        let note = format!(
            "{}: '{provider}' key is a shell command, which this host does not run",
            path.display()
        );
        return (None, Some(note));
    }
    // As in pi: a value naming a set environment variable resolves to that variable.
    match std::env::var(key).ok().filter(|v| !v.is_empty()) {
        Some(value) => (Some(value), None),
        None => (Some(key.to_string()), None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn env_var_names_follow_pi() {
        assert_eq!(env_vars("openai"), vec!["OPENAI_API_KEY"]);
        assert_eq!(env_vars("google"), vec!["GEMINI_API_KEY", "GOOGLE_API_KEY"]);
        assert_eq!(env_vars("my-provider"), vec!["MY_PROVIDER_API_KEY"]);
    }

    #[test]
    fn auth_file_entries_are_read_and_unsupported_ones_explained() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("auth.json"),
            r#"{"zz-test-literal": {"type": "api_key", "key": "sk-literal"},
                "zz-test-cmd": {"type": "api_key", "key": "!echo hi"},
                "zz-test-oauth": {"type": "oauth", "access": "a", "refresh": "r", "expires": 0}}"#,
        )
        .unwrap();
        let (found, note) = lookup("zz-test-literal", dir.path());
        assert_eq!(found, Some(("sk-literal".to_string(), KeySource::AuthFile)));
        assert_eq!(note, None);
        let (found, note) = lookup("zz-test-cmd", dir.path());
        assert_eq!(found, None);
        assert!(note.unwrap().contains("shell command"));
        let (found, note) = lookup("zz-test-oauth", dir.path());
        assert_eq!(found, None);
        assert!(note.unwrap().contains("OAuth"));
        assert_eq!(lookup("zz-test-absent", dir.path()), (None, None));
    }

    #[test]
    fn auth_file_wins_over_the_environment_as_in_pi() {
        // Variable names unique to this test: no other test reads them.
        std::env::set_var("ZZ_TEST_ENV_ONLY_API_KEY", "from-env");
        std::env::set_var("ZZ_TEST_BOTH_API_KEY", "from-env");
        std::env::set_var("ZZ_TEST_INDIRECT_VALUE", "from-named-var");
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("auth.json"),
            r#"{"zz-test-both": {"type": "api_key", "key": "from-file"},
                "zz-test-indirect": {"type": "api_key", "key": "ZZ_TEST_INDIRECT_VALUE"}}"#,
        )
        .unwrap();
        let env_source = KeySource::Env("ZZ_TEST_ENV_ONLY_API_KEY".into());
        assert_eq!(
            lookup("zz-test-env-only", dir.path()).0,
            Some(("from-env".to_string(), env_source))
        );
        assert_eq!(
            lookup("zz-test-both", dir.path()).0,
            Some(("from-file".to_string(), KeySource::AuthFile))
        );
        assert_eq!(
            lookup("zz-test-indirect", dir.path()).0,
            Some(("from-named-var".to_string(), KeySource::AuthFile))
        );
    }

    #[test]
    fn malformed_auth_file_is_a_note_without_its_content() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("auth.json"),
            "{\"p\": {\"key\": \"sk-secret\"",
        )
        .unwrap();
        let (found, note) = lookup("zz-test-p", dir.path());
        assert_eq!(found, None);
        let note = note.unwrap();
        assert!(
            note.contains("invalid JSON") && !note.contains("sk-secret"),
            "{note}"
        );
    }
}
