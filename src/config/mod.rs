//! `session-index.config.json`: strict (unknown keys are errors) and validated
//! with garde. A broken config never stops the plugin from loading: the
//! problems are reported once and the features that need a config do nothing.

mod privacy;

use std::collections::BTreeMap;

use garde::Validate;
pub use pi_ext_abi::protocol::ModelFallback;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub use privacy::PrivacyConfig;

/// The whole config file. Every field has a default, so `{}` is valid.
#[derive(Debug, Clone, Serialize, Deserialize, Validate, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct Config {
    /// Name of the manual indexing command (`/index-session`).
    #[garde(length(min = 1, max = 64), pattern(r"^[a-z0-9][a-z0-9-]*$"))]
    pub command_name: String,
    /// Status-line key used for all of this plugin's status updates.
    #[garde(length(min = 1, max = 64))]
    pub status_key: String,
    /// User messages after `lastIndexedLeafId` needed before `agent_end` re-indexes.
    #[garde(range(min = 1, max = 10_000))]
    pub min_new_user_messages: u32,
    /// How long a final status ("indexed ($0.0012)") stays before it is cleared.
    #[garde(range(min = 0, max = 3_600_000))]
    pub notification_auto_clear_ms: u64,
    /// Models to try, in order, as `provider/model`. The first available wins.
    #[garde(
        length(max = 32),
        inner(length(min = 3, max = 200), pattern(r"^[A-Za-z0-9._-]+/.+$"))
    )]
    pub model_keys: Vec<String>,
    /// Use the offline `local/extractive` model when no configured model is available.
    #[garde(skip)]
    pub offline_fallback: bool,
    /// Let the host serve model calls (e.g. pi's model registry) before our own providers.
    #[garde(skip)]
    pub use_host_models: bool,
    /// In pi, when no `modelKeys` entry has credentials: `offline` (the
    /// offline model, with a one-time notice), `cheapest` (pi's cheapest
    /// logged-in model) or `session` (that, else the session's own model).
    #[garde(skip)]
    pub model_fallback: ModelFallback,
    /// Per-request timeout for model calls.
    #[garde(range(min = 100, max = 600_000))]
    pub timeout_ms: u64,
    /// Largest model response body accepted, in bytes.
    #[garde(range(min = 1024, max = 16_777_216))]
    pub max_response_bytes: usize,
    /// Provider endpoints; built-in `openai`, `anthropic`, `google` may be overridden
    /// and any other name defines an OpenAI-compatible (or other `kind`) endpoint.
    #[garde(dive)]
    pub providers: BTreeMap<String, ProviderConfig>,
    /// USD prices per million tokens, keyed `provider/model`.
    #[garde(dive)]
    pub prices: BTreeMap<String, Price>,
    #[garde(dive)]
    pub indexing: IndexingConfig,
    #[garde(dive)]
    pub references: ReferencesConfig,
    #[garde(dive)]
    pub query: QueryConfig,
    /// Names of the commands in pi besides `commandName` (issue 15).
    #[garde(dive)]
    pub commands: CommandsConfig,
    /// Optional daily spending cap for background indexing and queries.
    #[garde(dive)]
    pub spending: SpendingConfig,
    #[garde(dive)]
    pub search: SearchConfig,
    #[garde(dive)]
    pub privacy: PrivacyConfig,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            command_name: "index-session".into(),
            status_key: "session-index".into(),
            min_new_user_messages: 5,
            notification_auto_clear_ms: 8000,
            model_keys: vec![
                "anthropic/claude-haiku-4-5".into(),
                "openai/gpt-4.1-mini".into(),
                "google/gemini-2.5-flash".into(),
            ],
            offline_fallback: true,
            use_host_models: true,
            model_fallback: ModelFallback::Offline,
            timeout_ms: 60_000,
            max_response_bytes: 1_048_576,
            providers: BTreeMap::new(),
            prices: BTreeMap::new(),
            indexing: IndexingConfig::default(),
            references: ReferencesConfig::default(),
            query: QueryConfig::default(),
            commands: CommandsConfig::default(),
            spending: SpendingConfig::default(),
            search: SearchConfig::default(),
            privacy: PrivacyConfig::default(),
        }
    }
}

/// Wire format a provider endpoint speaks.
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// OpenAI chat completions (also OpenRouter, Ollama, vLLM, LM Studio).
    Openai,
    /// Anthropic messages.
    Anthropic,
    /// Google Gemini generateContent.
    Google,
}

#[derive(Debug, Clone, Serialize, Deserialize, Validate, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ProviderConfig {
    /// Defaults to the provider name's kind for built-ins, else `openai`.
    #[serde(default)]
    #[garde(skip)]
    pub kind: Option<ProviderKind>,
    /// Base URL, e.g. `http://localhost:11434/v1` for Ollama.
    #[serde(default)]
    #[garde(inner(length(min = 8, max = 2048), pattern(r"^https?://")))]
    pub base_url: Option<String>,
    /// Environment variable holding the API key (never the key itself).
    #[serde(default)]
    #[garde(inner(length(min = 1, max = 128)))]
    pub api_key_env: Option<String>,
    /// Endpoints such as local Ollama need no key.
    #[serde(default)]
    #[garde(skip)]
    pub no_api_key: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize, Validate, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Price {
    #[garde(range(min = 0.0, max = 10_000.0))]
    pub input_per_mtok: f64,
    #[garde(range(min = 0.0, max = 10_000.0))]
    pub output_per_mtok: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize, Validate, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct IndexingConfig {
    /// Index on `agent_end` at all.
    #[garde(skip)]
    pub auto: bool,
    /// Bytes of the newest conversation sent on a first (full) index.
    #[garde(range(min = 1024, max = 2_000_000))]
    pub max_input_bytes: usize,
    /// Bytes of new messages sent on an incremental re-index.
    #[garde(range(min = 1024, max = 2_000_000))]
    pub incremental_max_bytes: usize,
    #[garde(range(min = 64, max = 32_000))]
    pub max_output_tokens: u32,
}

impl Default for IndexingConfig {
    fn default() -> Self {
        IndexingConfig {
            auto: true,
            max_input_bytes: 51_200,
            incremental_max_bytes: 24_000,
            max_output_tokens: 1500,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Validate, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct ReferencesConfig {
    #[garde(skip)]
    pub enabled: bool,
    #[garde(range(min = 1, max = 20))]
    pub max_refs_per_prompt: usize,
    #[garde(range(min = 512, max = 1_000_000))]
    pub max_injected_bytes: usize,
    /// Show the injected message in pi's TUI.
    #[garde(skip)]
    pub display: bool,
    /// Largest `~N` ancestor depth honoured.
    #[garde(range(min = 0, max = 10))]
    pub max_depth: u32,
    /// Minimum fuzzy score (0–1) for a fuzzy match to resolve.
    #[garde(range(min = 0.0, max = 1.0))]
    pub fuzzy_threshold: f64,
}

impl Default for ReferencesConfig {
    fn default() -> Self {
        ReferencesConfig {
            enabled: true,
            max_refs_per_prompt: 3,
            max_injected_bytes: 12_000,
            display: false,
            max_depth: 3,
            fuzzy_threshold: 0.6,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Validate, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct QueryConfig {
    #[garde(skip)]
    pub enabled: bool,
    /// Token budget of the assembled context (chars/4, as pi estimates).
    #[garde(range(min = 500, max = 200_000))]
    pub max_context_tokens: usize,
    /// `query_session` calls allowed per agent run.
    #[garde(range(min = 1, max = 100))]
    pub max_calls_per_turn: u32,
    #[garde(range(min = 64, max = 32_000))]
    pub max_output_tokens: u32,
}

impl Default for QueryConfig {
    fn default() -> Self {
        QueryConfig {
            enabled: true,
            max_context_tokens: 8000,
            max_calls_per_turn: 1,
            max_output_tokens: 1200,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, Validate, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct CommandsConfig {
    /// The overview (`/session-index`).
    #[garde(length(min = 1, max = 64), pattern(r"^[a-z0-9][a-z0-9-]*$"))]
    pub overview: String,
    /// Start a new session from a referenced one (`/continue <ref>`).
    #[serde(rename = "continue")]
    #[garde(length(min = 1, max = 64), pattern(r"^[a-z0-9][a-z0-9-]*$"))]
    pub continue_from: String,
    /// Index every session lacking an up-to-date meta, in the background (`/index-all`).
    #[garde(length(min = 1, max = 64), pattern(r"^[a-z0-9][a-z0-9-]*$"))]
    pub index_all: String,
}

impl Default for CommandsConfig {
    fn default() -> Self {
        CommandsConfig {
            overview: "session-index".into(),
            continue_from: "continue".into(),
            index_all: "index-all".into(),
        }
    }
}

#[derive(Debug, Clone, Default, Serialize, Deserialize, Validate, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SpendingConfig {
    /// USD per day (UTC) for automatic indexing and queries; past it, automatic
    /// indexing pauses and commands ask first. `null`: no cap.
    #[garde(inner(range(min = 0.0, max = 10_000.0)))]
    pub daily_cap_usd: Option<f64>,
}

/// The search index (`<agent dir>/sessions-index/`), its tool and command.
#[derive(Debug, Clone, Serialize, Deserialize, Validate, PartialEq)]
#[serde(rename_all = "camelCase", deny_unknown_fields, default)]
pub struct SearchConfig {
    /// Offer `search_sessions`, the command and the `@@` search rule. The index
    /// is kept either way: it is the catalog's store.
    #[garde(skip)]
    pub enabled: bool,
    /// Name of the in-pi search command (`/sessions`).
    #[garde(length(min = 1, max = 64), pattern(r"^[a-z0-9][a-z0-9-]*$"))]
    pub command_name: String,
    /// `search_sessions` calls allowed per agent run.
    #[garde(range(min = 1, max = 100))]
    pub max_calls_per_turn: u32,
    /// Sessions a search returns unless asked for fewer.
    #[garde(range(min = 1, max = 50))]
    pub max_results: usize,
    /// Rank by meaning as well as by words when the sentence model is
    /// installed (`session-index model install`), and offer the sessions
    /// nearest in meaning for a `@@` reference that names nothing; `false`:
    /// by words only.
    #[garde(skip)]
    pub semantic: bool,
}

impl Default for SearchConfig {
    fn default() -> Self {
        SearchConfig {
            enabled: true,
            command_name: "sessions".into(),
            max_calls_per_turn: 3,
            max_results: 8,
            semantic: true,
        }
    }
}

/// A config as loaded: what applies, and what was wrong with the file.
#[derive(Debug, Clone, PartialEq)]
pub struct Loaded {
    /// The file's keys, with each bad key at its default; all defaults when
    /// not [`Loaded::usable`].
    pub config: Config,
    /// One line per problem, `path: what is wrong`, saying what applies instead.
    pub problems: Vec<String>,
    /// False when the file as a whole is unusable, or a key that guards
    /// privacy or money is bad: then the features that read sessions or
    /// spend stay off rather than run without the user's limits.
    pub usable: bool,
}

/// Top-level keys whose default is no safe stand-in for a bad value: without
/// them sessions meant to stay private would be read, or money spent on
/// models or past a cap the user did not choose.
const GUARDED: &[&str] = &[
    "privacy",
    "spending",
    "modelKeys",
    "modelFallback",
    "providers",
    "prices",
];

/// Load a config file's text, as the host reads one (`plugin.config`,
/// `--config`, the CLI's `session-index.config.json`): it must hold a JSON
/// object. `null` or a string there is the file's problem, named as such;
/// only the document a host hands over ([`load`]) uses them to say "no file"
/// or "the file was unusable".
pub fn load_file(text: &str) -> Loaded {
    let kind = match serde_json::from_str::<Value>(text) {
        Ok(Value::Object(_)) | Err(_) => return load(text),
        Ok(Value::Null) => "null",
        Ok(Value::String(_)) => "a string",
        Ok(Value::Array(_)) => "an array",
        Ok(Value::Bool(_)) => "a boolean",
        Ok(Value::Number(_)) => "a number",
    };
    Loaded {
        config: Config::default(),
        problems: vec![format!("the config holds {kind}, not a JSON object")],
        usable: false,
    }
}

/// Load a config document as the host hands it over: `null` (no config
/// file: the defaults), a JSON string (the host could not use the file: the
/// string says why), or the file's object. Every problem is reported at once
/// with its full key path (`search.maxResults: expected an integer, got
/// "ten"`); a bad key takes its default and the rest of the file applies,
/// unless the key is [`GUARDED`].
pub fn load(json: &str) -> Loaded {
    let unusable = |problem: String| Loaded {
        config: Config::default(),
        problems: vec![problem],
        usable: false,
    };
    let value: Value = match serde_json::from_str(json) {
        Ok(value) => value,
        Err(_) if json.trim().is_empty() => {
            return unusable("the config is empty, not a JSON object".into())
        }
        Err(e) => return unusable(format!("the config is not JSON: {e}")),
    };
    let mut fields = match value {
        Value::Null => {
            return Loaded {
                config: Config::default(),
                problems: Vec::new(),
                usable: true,
            }
        }
        Value::String(problem) => return unusable(problem),
        Value::Object(fields) => fields,
        _ => return unusable("the config is not a JSON object".into()),
    };
    let mut bad: Problems = Vec::new();
    field_problems::<Config>(&fields, "", &mut bad);
    // Each round drops the keys found bad; validation may then find others.
    let config = loop {
        for (path, _) in &bad {
            remove_key(&mut fields, path);
        }
        let config: Config = match serde_json::from_value(Value::Object(fields.clone())) {
            Ok(config) => config,
            Err(e) => {
                let mut problems: Vec<String> =
                    bad.iter().map(|(p, m)| format!("{p}: {m}")).collect();
                problems.push(plain(&e.to_string()));
                return Loaded {
                    problems,
                    ..unusable(String::new())
                };
            }
        };
        let invalid: Problems = match config.validate() {
            Ok(()) => break config,
            Err(report) => report
                .iter()
                .map(|(path, error)| (file_spelling(&path.to_string()), error.to_string()))
                .filter(|(path, _)| !bad.iter().any(|(b, _)| b == path))
                .collect(),
        };
        if invalid.is_empty() {
            return unusable("the config does not validate".into());
        }
        bad.extend(invalid);
    };
    // In key order, whichever check found them.
    bad.sort();
    let usable = !bad
        .iter()
        .any(|(path, _)| GUARDED.contains(&root_key(path)));
    let problems = bad
        .iter()
        .map(|(path, problem)| match usable {
            true if problem == "unknown key" => format!("{path}: {problem}, ignored"),
            true => format!("{path}: {problem}; its default applies"),
            false => format!("{path}: {problem}"),
        })
        .collect();
    Loaded {
        config: if usable { config } else { Config::default() },
        problems,
        usable,
    }
}

/// Parse and validate strictly: the config, or every problem as `path: message`.
pub fn parse(json: &str) -> Result<Config, Vec<String>> {
    let loaded = load(json);
    match loaded.problems.is_empty() {
        true => Ok(loaded.config),
        false => Err(loaded.problems),
    }
}

/// `search.maxResults` → `search`; `modelKeys[1]` → `modelKeys`.
fn root_key(path: &str) -> &str {
    let end = path.find(['.', '[']).unwrap_or(path.len());
    &path[..end]
}

/// Remove the key a problem's `path` names (`search.maxResults`,
/// `privacy.exclude[0]` removes `privacy.exclude`), so its default applies.
fn remove_key(fields: &mut Map<String, Value>, path: &str) {
    let path = path.split('[').next().unwrap_or(path);
    if let Some((section, rest)) = path.split_once('.') {
        if let Some(inner) = fields.get_mut(section).and_then(Value::as_object_mut) {
            // `providers.my.llm.baseUrl`: the entry `my.llm` goes (names may hold dots).
            let entry = inner
                .keys()
                .filter(|k| rest == k.as_str() || rest.starts_with(&format!("{k}.")))
                .max_by_key(|k| k.len())
                .cloned();
            inner.remove(entry.as_deref().unwrap_or(rest));
            return;
        }
    }
    fields.remove(root_key(path));
}

/// serde's wording as a person reads it: `invalid type: string "ten",
/// expected usize` → `expected an integer, got "ten"`.
fn plain(message: &str) -> String {
    if message.starts_with("unknown field ") {
        return "unknown key".into();
    }
    let Some(rest) = message.strip_prefix("invalid type: ") else {
        return message.to_string();
    };
    let Some((got, expected)) = rest.rsplit_once(", expected ") else {
        return message.to_string();
    };
    let expected = match expected {
        "u8" | "u16" | "u32" | "u64" | "usize" | "i8" | "i16" | "i32" | "i64" | "isize" => {
            "an integer"
        }
        "f32" | "f64" => "a number",
        "a sequence" => "a list",
        e if e.starts_with("struct ") || e == "a map" => "an object",
        e => e,
    };
    let got = match got {
        "sequence" => "a list".to_string(),
        "map" => "an object".to_string(),
        g => match g.split_once(' ') {
            Some(("string", text)) => text.to_string(),
            Some((_, value)) if value.starts_with('`') => value.trim_matches('`').to_string(),
            _ => g.to_string(),
        },
    };
    format!("expected {expected}, got {got}")
}

/// Problems found, each as (key path, what is wrong).
type Problems = Vec<(String, String)>;

/// What checks a section or map's fields (`field_problems::<T>`, …).
type FieldCheck = fn(&Map<String, Value>, &str, &mut Problems);

/// serde stops at the first problem; trying each field on its own (every
/// section has defaults) finds all of them. Sections and map entries are
/// searched the same way one level down.
fn field_problems<T: serde::de::DeserializeOwned>(
    fields: &Map<String, Value>,
    at: &str,
    out: &mut Problems,
) {
    for (key, value) in fields {
        let path = format!("{at}{key}");
        let nested = |out: &mut Problems, check: FieldCheck| match value.as_object() {
            Some(inner) => check(inner, &format!("{path}."), out),
            None => out.push((path.clone(), "expected an object".into())),
        };
        match (at, key.as_str()) {
            ("", "indexing") => nested(out, field_problems::<IndexingConfig>),
            ("", "references") => nested(out, field_problems::<ReferencesConfig>),
            ("", "query") => nested(out, field_problems::<QueryConfig>),
            ("", "privacy") => nested(out, field_problems::<PrivacyConfig>),
            ("", "commands") => nested(out, field_problems::<CommandsConfig>),
            ("", "spending") => nested(out, field_problems::<SpendingConfig>),
            ("", "search") => nested(out, field_problems::<SearchConfig>),
            ("", "providers") => nested(out, provider_problems),
            ("", "prices") => nested(out, entry_problems::<Price>),
            _ => {
                let one = Value::Object(Map::from_iter([(key.clone(), value.clone())]));
                if let Err(e) = serde_json::from_value::<T>(one) {
                    out.push((path, plain(&e.to_string())));
                }
            }
        }
    }
}

/// Each provider's keys, named in full (`providers.groq.baseUrl`).
fn provider_problems(entries: &Map<String, Value>, at: &str, out: &mut Problems) {
    for (name, value) in entries {
        let path = format!("{at}{name}");
        match value.as_object() {
            Some(fields) => field_problems::<ProviderConfig>(fields, &format!("{path}."), out),
            None => out.push((path, "expected an object".into())),
        }
    }
}

/// Each entry of a map section must be a `T` (first problem per entry).
fn entry_problems<T: serde::de::DeserializeOwned>(
    entries: &Map<String, Value>,
    at: &str,
    out: &mut Problems,
) {
    for (key, value) in entries {
        if let Err(e) = serde_json::from_value::<T>(value.clone()) {
            out.push((format!("{at}{key}"), plain(&e.to_string())));
        }
    }
}

/// garde reports Rust field names (`query.max_context_tokens`); users edit the
/// camelCase file (`query.maxContextTokens`), so problems are named that way.
fn file_spelling(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let (mut in_brackets, mut upper_next) = (false, false);
    for c in path.chars() {
        in_brackets = c == '[' || (in_brackets && c != ']');
        if c == '_' && !in_brackets {
            upper_next = true;
        } else if std::mem::take(&mut upper_next) && !in_brackets {
            out.extend(c.to_uppercase());
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn only_an_empty_object_or_no_config_is_the_default() {
        assert_eq!(parse("{}").unwrap(), Config::default());
        assert_eq!(
            parse("null").unwrap(),
            Config::default(),
            "the host has no config file"
        );
        for (text, problem) in [
            ("", "empty"),
            ("  \n", "empty"),
            ("[]", "not a JSON object"),
            ("{", "not JSON"),
        ] {
            let errors = parse(text).unwrap_err();
            assert!(
                errors.len() == 1 && errors[0].contains(problem),
                "{text:?}: {errors:?}"
            );
        }
        let from_host = r#""/p/c.json: config file (plugin.config) is a FIFO, not a regular file""#;
        assert_eq!(
            parse(from_host).unwrap_err(),
            ["/p/c.json: config file (plugin.config) is a FIFO, not a regular file"]
        );
    }

    #[test]
    fn every_unknown_key_and_type_error_is_reported_at_once() {
        let text = r#"{"commandName":"x","bogus":1,"other":2,"timeoutMs":"slow","offlineFallback":3,
            "indexing":{"auto":"yes","nope":1},"query":[],"providers":{"p":{"baseUrl":5}}}"#;
        let errors = parse(text).unwrap_err();
        for want in [
            "bogus: unknown key",
            "other: unknown key",
            "timeoutMs: expected an integer, got \"slow\"",
            "offlineFallback: expected a boolean, got 3",
            "indexing.auto: expected a boolean, got \"yes\"",
            "indexing.nope: unknown key",
            "query: expected an object",
            "providers.p.baseUrl: expected a string, got 5",
        ] {
            assert!(
                errors.iter().any(|e| e.starts_with(want)),
                "{want}: {errors:?}"
            );
        }
        assert_eq!(errors.len(), 8, "{errors:?}");
    }

    #[test]
    fn privacy_globs_match_projects_and_files() {
        let config = parse(
            r#"{"privacy":{"exclude":["/work/secret","*-private","clients/**/acme","/x/**/*.jsonl","~/notes/"]}}"#,
        )
        .unwrap();
        let p = &config.privacy;
        let home = std::env::var("HOME").unwrap_or_default();
        let none = Path::new("/s/--a--/f.jsonl");
        for cwd in [
            "/work/secret",
            "/work/secret/sub",
            "/a/b-private",
            "/a/b-private/c",
            "/a/clients/acme",
            "/a/clients/x/y/acme/z",
        ] {
            assert!(p.excludes(cwd, none), "{cwd}");
        }
        assert!(p.excludes(&format!("{home}/notes/n"), none));
        for cwd in [
            "/work/secrets",
            "/work",
            "/a/private",
            "/a/b-private-not",
            "/a/clients/acme2",
            "",
            "/notes",
        ] {
            assert!(!p.excludes(cwd, none), "{cwd}");
        }
        assert!(p.excludes("/elsewhere", Path::new("/x/sessions/--a--/1.jsonl")));
        assert!(!p.excludes("/elsewhere", Path::new("/x/sessions/--a--/1.json")));
        assert!(!Config::default().privacy.excludes("/work/secret", none));
        let p = parse(r#"{"privacy":{"exclude":["a/**/b", "/r/?x"]}}"#)
            .unwrap()
            .privacy;
        assert!(
            p.excludes("/q/a/b", none)
                && p.excludes("/q/a/1/2/b/c", none)
                && p.excludes("/r/éx", none)
        );
        assert!(
            !p.excludes("/q/a/bb", none)
                && !p.excludes("/r/x", none)
                && !p.excludes("/r/a/x", none)
        );
        let bad = parse(r#"{"privacy":{"exclude":[""]}}"#).unwrap_err();
        assert!(
            bad.iter().any(|e| e.starts_with("privacy.exclude[0]: ")),
            "{bad:?}"
        );
    }

    #[test]
    fn a_bad_key_takes_its_default_and_the_rest_applies() {
        let loaded = load(
            r#"{"search":{"maxResults":"ten","commandName":"find"},"minNewUserMessages":0,
                "query":{"maxOutputTokens":700},"timeoutMs":5000}"#,
        );
        assert!(loaded.usable, "{loaded:?}");
        assert_eq!(
            loaded.problems,
            [
                "minNewUserMessages: lower than 1; its default applies",
                "search.maxResults: expected an integer, got \"ten\"; its default applies",
            ],
            "in key order"
        );
        let (config, defaults) = (&loaded.config, Config::default());
        assert_eq!(config.search.max_results, defaults.search.max_results);
        assert_eq!(config.min_new_user_messages, defaults.min_new_user_messages);
        assert_eq!(
            config.search.command_name, "find",
            "the rest of its section applies"
        );
        assert_eq!(
            (config.query.max_output_tokens, config.timeout_ms),
            (700, 5000)
        );
    }

    #[test]
    fn a_bad_key_guarding_privacy_or_money_keeps_the_features_off() {
        for text in [
            r#"{"privacy":{"exclude":[""]},"timeoutMs":5000}"#,
            r#"{"spending":{"dailyCapUsd":"1"},"timeoutMs":5000}"#,
            r#"{"modelKeys":["nope"],"timeoutMs":5000}"#,
        ] {
            let loaded = load(text);
            assert!(!loaded.usable, "{text}: {loaded:?}");
            assert_eq!(loaded.config, Config::default(), "{text}");
            assert!(
                loaded.problems.len() == 1 && !loaded.problems[0].contains("default applies"),
                "{text}: {:?}",
                loaded.problems
            );
        }
    }

    #[test]
    fn every_invalid_field_is_named() {
        let errors =
            parse(r#"{"minNewUserMessages":0,"query":{"maxContextTokens":1}}"#).unwrap_err();
        assert!(
            errors.iter().any(|e| e.starts_with("minNewUserMessages: ")),
            "{errors:?}"
        );
        assert!(
            errors
                .iter()
                .any(|e| e.starts_with("query.maxContextTokens: ")),
            "{errors:?}"
        );
    }
}
