//! Model providers (OpenAI-compatible, Anthropic, Gemini, host-served) behind
//! one blocking call that returns validated JSON.
//!
//! Every feature asks for structured output the same way: build a
//! [`JsonTask`], [`select_model`], then [`SelectedModel::complete_json`]. The
//! layer owns the policies so callers cannot get them wrong:
//! - text is redacted ([`crate::redact`]) before it leaves the process;
//! - each provider's native JSON mode is used, no tools are ever sent;
//! - malformed or garde-invalid answers are retried with the error fed back,
//!   at most [`MAX_ATTEMPTS`] answers in total;
//! - transport errors are not retried, except one retry on 429/503 (and
//!   Anthropic's 529) when the `Retry-After` fits within the timeout;
//! - response bodies are size-limited while streaming;
//! - usage is summed over attempts and priced in USD;
//! - each answer requested is paid for through a [`spend::Budget`]: its
//!   maximum cost is held against the daily cap before the request and
//!   settled at its real cost after, so no caller can spend unrecorded or
//!   past the cap.

mod anthropic;
mod gemini;
mod hosted;
pub mod http;
mod openai;
mod prices;
mod schema;
mod select;
pub mod spend;

use std::fmt;
use std::time::Duration;

use pi_ext_abi::protocol::{ChatMessage, ModelFallback, Usage, OVER_CAP, UNAVAILABLE};
use serde::de::DeserializeOwned;

use crate::config::Config;
use crate::config::{Price, ProviderKind};
use crate::plugin::host::HostApi;
use crate::redact::redact;
use crate::store::meta::ModelChoice;
use crate::text::one_line;
use spend::MaxCost;

pub use prices::{cost_usd, price_for};
pub use select::{select_model, select_model_with_env, LOCAL_PROVIDER};

/// What the model layer works with, and nothing more: the config (model
/// keys, providers, prices, limits, the daily cap), the host when there is
/// one (the keys it holds, the completions it serves; the CLI has none), the
/// HTTP client the calls to providers go through ([`http::client`]) and this
/// process's count of what it spent.
#[derive(Clone, Copy)]
pub struct ModelEnv<'a> {
    pub config: &'a Config,
    pub host: Option<&'a dyn HostApi>,
    pub http: &'a ureq::Agent,
    pub spent: Option<&'a std::sync::Mutex<spend::Spent>>,
}

impl<'a> ModelEnv<'a> {
    /// What calls for `kind` may spend, recorded in the ledger of
    /// `meta_dir`: up to the daily cap, or past it when the user said so.
    pub fn budget(
        &self,
        meta_dir: &'a std::path::Path,
        kind: spend::Kind,
        past_cap: bool,
    ) -> spend::Budget<'a> {
        spend::Budget {
            meta_dir,
            kind,
            cap: self.config.spending.daily_cap_usd.filter(|_| !past_cap),
            session: self.spent,
        }
    }
}

/// Answers requested at most per [`SelectedModel::complete_json`] call (1 + 2 retries).
pub const MAX_ATTEMPTS: u32 = 3;

/// Room in a call's worst case for the words a request puts around a task's
/// schema in the prompt (anthropic.rs without structured outputs, the host's
/// bridge: both under 100 bytes).
const SCHEMA_WORDS_BYTES: usize = 128;

/// A request for one JSON object matching `schema`.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonTask {
    pub system: String,
    pub user: String,
    /// Short identifier of the schema (`[A-Za-z0-9_-]`), e.g. `session_index`.
    pub schema_name: String,
    /// JSON schema of the answer object. Providers get a copy trimmed to the
    /// keywords they accept; garde validation on our side stays authoritative.
    pub schema: serde_json::Value,
    pub max_output_tokens: u32,
}

/// A validated answer and what it cost.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelOutcome<T> {
    pub value: T,
    /// The model that answered, as `provider/model`.
    pub model: String,
    /// Summed over all attempts, with `cost_usd` (0 when the price is unknown).
    pub usage: Usage,
    /// Answers requested (1..=[`MAX_ATTEMPTS`]); a 429/503/529 retry is not an answer.
    pub attempts: u32,
    /// Why this model (the host may say; else it was configured).
    pub choice: ModelChoice,
}

/// Why no validated answer came back. `Display` is one line and never
/// contains an API key.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ModelError {
    #[error("no model available: {0}")]
    Unavailable(String),
    #[error("model request failed: {0}")]
    Transport(String),
    /// The host could not complete; `model` is the one it tried, when it says.
    #[error("model request failed: {message}")]
    Host {
        model: Option<String>,
        message: String,
    },
    #[error("model provider returned HTTP {status}: {message}")]
    Http { status: u16, message: String },
    #[error("model request timed out after {0} ms")]
    Timeout(u64),
    #[error("model output invalid after {attempts} attempts: {last_error}")]
    InvalidOutput { attempts: u32, last_error: String },
    #[error("model response larger than {0} bytes")]
    ResponseTooLarge(usize),
    /// The daily spending cap does not allow the call (the message says why).
    #[error("{0}")]
    OverCap(String),
}

/// The model chosen by [`select_model`] and how to reach it.
#[derive(Debug, Clone)]
pub struct SelectedModel {
    key: String,
    route: Route,
}

#[derive(Debug, Clone)]
enum Route {
    /// The host runs the completion (e.g. through pi's model registry).
    Host,
    /// Our own HTTP call to a provider.
    Provider(Endpoint),
}

#[derive(Debug, Clone)]
struct Endpoint {
    provider: String,
    model: String,
    kind: ProviderKind,
    base_url: String,
    api_key: Option<ApiKey>,
}

/// An API key; its `Debug` never shows it, so no log or error can carry it.
#[derive(Clone)]
struct ApiKey(String);

impl fmt::Debug for ApiKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ApiKey([REDACTED])")
    }
}

/// One turn of the conversation sent to a provider (`user` or `assistant`).
fn turn(role: &str, content: String) -> ChatMessage {
    ChatMessage {
        role: role.into(),
        content,
    }
}

/// One answer from a provider, before validation.
#[derive(Debug, Default)]
struct Answer {
    /// `None` when the provider answered without usable text (refusal,
    /// safety block, empty candidate); `problem` then says why.
    text: Option<String>,
    problem: Option<String>,
    input_tokens: u64,
    output_tokens: u64,
    /// Cost reported by the host, if any.
    cost_usd: Option<f64>,
    /// `provider/model` that answered, when the transport says so.
    model: Option<String>,
    /// The answer stopped at the output token limit.
    truncated: bool,
    /// Why the host chose the model, when it says.
    choice: Option<String>,
}

impl SelectedModel {
    /// `provider/model`, e.g. `openai/gpt-4.1-mini`.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// True when the host, not our own HTTP client, runs the completion.
    pub fn is_host_served(&self) -> bool {
        matches!(self.route, Route::Host)
    }

    /// Ask for one JSON object, validate it, retry invalid answers with the
    /// error fed back; `ctx` is the garde context of `T` (the names already taken
    /// for an index, `&()` mostly). Blocking: call from a job thread or a tool call, never
    /// from async code.
    ///
    /// Every answer requested is paid through `budget`: refused with
    /// [`ModelError::OverCap`] when its maximum cost would pass the daily cap.
    pub fn complete_json<T>(
        &self,
        env: &ModelEnv,
        budget: &spend::Budget,
        task: &JsonTask,
        ctx: &T::Context,
    ) -> Result<ModelOutcome<T>, ModelError>
    where
        T: DeserializeOwned + garde::Validate,
    {
        let system = redact(&task.system).into_owned();
        let mut turns = vec![turn("user", redact(&task.user).into_owned())];
        let mut input_tokens = 0u64;
        let mut output_tokens = 0u64;
        let mut cost = 0.0f64;
        let mut model = self.key.clone();
        let mut choice = ModelChoice::Configured;
        let mut last_error = String::new();
        for attempt in 1..=MAX_ATTEMPTS {
            let hold = budget
                .reserve(
                    self.max_cost(env, &system, &turns, task),
                    call_lifetime(env),
                )
                .map_err(ModelError::OverCap)?;
            let answer = self.call(env, &system, &turns, task, hold.limit())?;
            if let Some(answered_by) = answer.model.filter(|m| m.contains('/')) {
                model = answered_by;
            }
            choice = answer.choice.map_or(choice, ModelChoice::from);
            input_tokens += answer.input_tokens;
            output_tokens += answer.output_tokens;
            // A host may price the call itself; otherwise our price table does;
            // a cost nobody knows settles at the whole hold.
            let paid = answer.cost_usd.or_else(|| {
                price_for(env.config, &model).map(|_| {
                    cost_usd(
                        env.config,
                        &model,
                        answer.input_tokens,
                        answer.output_tokens,
                    )
                })
            });
            hold.settle(paid);
            cost += paid.unwrap_or(0.0);
            let text = answer.text.unwrap_or_default();
            match parse_and_validate::<T>(&text, answer.problem.as_deref(), answer.truncated, ctx) {
                Ok(value) => {
                    let usage = Usage {
                        input_tokens,
                        output_tokens,
                        cost_usd: Some(cost),
                    };
                    return Ok(ModelOutcome {
                        value,
                        model,
                        usage,
                        attempts: attempt,
                        choice,
                    });
                }
                Err(error) => {
                    tracing::debug!(model = %model, attempt, "invalid model output: {error}");
                    last_error = error;
                    turns.push(turn("assistant", bounded_echo(&text)));
                    turns.push(turn("user", feedback(&last_error)));
                }
            }
        }
        Err(ModelError::InvalidOutput {
            attempts: MAX_ATTEMPTS,
            last_error: one_line(&last_error, 300),
        })
    }

    /// The most one answer can cost: every byte of the request a token (no
    /// tokenizer makes more tokens than bytes) and the whole output budget,
    /// at the price of the most expensive model that may answer. Our own
    /// HTTP client answers with the selected model only (an unknown price
    /// there is 0: nothing is recorded either). A host may answer with any
    /// of `modelKeys` and, if `modelFallback` allows, a model of its own
    /// choice: unless every one of them is priced here, the cost is
    /// [`MaxCost::Unknown`] and the host is held to the room left.
    fn max_cost(
        &self,
        env: &ModelEnv,
        system: &str,
        turns: &[ChatMessage],
        task: &JsonTask,
    ) -> MaxCost {
        // The schema may be sent twice: as the output format and, with the
        // words around it, in the system prompt.
        let schema = 2 * task.schema.to_string().len() + SCHEMA_WORDS_BYTES;
        let input = system.len() + schema + turns.iter().map(|t| t.content.len()).sum::<usize>();
        let worst_case = |price: Price| {
            (input as f64 * price.input_per_mtok
                + f64::from(task.max_output_tokens) * price.output_per_mtok)
                / 1_000_000.0
        };
        match &self.route {
            Route::Provider(_) => {
                MaxCost::Known(price_for(env.config, &self.key).map_or(0.0, worst_case))
            }
            Route::Host => {
                if env.config.model_fallback != ModelFallback::Offline {
                    return MaxCost::Unknown;
                }
                let mut most = 0.0f64;
                for key in hosted::answerable_keys(env.config, &self.key) {
                    match price_for(env.config, key) {
                        Some(price) => most = most.max(worst_case(price)),
                        None => return MaxCost::Unknown,
                    }
                }
                MaxCost::Known(most)
            }
        }
    }

    fn call(
        &self,
        env: &ModelEnv,
        system: &str,
        turns: &[ChatMessage],
        task: &JsonTask,
        limit_usd: Option<f64>,
    ) -> Result<Answer, ModelError> {
        match &self.route {
            Route::Host => hosted::call(env, &self.key, system, turns, task, limit_usd),
            Route::Provider(endpoint) => {
                type Parse = fn(&[u8], bool) -> Result<Answer, String>;
                let (request, parse): (_, Parse) = match endpoint.kind {
                    ProviderKind::Openai => {
                        (openai::build(endpoint, system, turns, task), |b, _| {
                            openai::parse(b)
                        })
                    }
                    ProviderKind::Anthropic => (
                        anthropic::build(endpoint, system, turns, task),
                        anthropic::parse,
                    ),
                    ProviderKind::Google => {
                        (gemini::build(endpoint, system, turns, task), |b, _| {
                            gemini::parse(b)
                        })
                    }
                };
                let (timeout, max_bytes) = (
                    Duration::from_millis(env.config.timeout_ms),
                    env.config.max_response_bytes,
                );
                let body = http::execute(env.http, &request, timeout, max_bytes)?;
                parse(&body, request.prefilled).map_err(|e| {
                    ModelError::Transport(format!(
                        "unexpected response from {}: {e}",
                        endpoint.provider
                    ))
                })
            }
        }
    }
}

impl ModelError {
    /// A host's completion error. The host protocol carries it as text: the pi
    /// bridge starts it with the model it tried, after the host's
    /// `complete: `, which is read here, where the text arrives, once. A host
    /// that may use none of the models says [`UNAVAILABLE`]: no model is
    /// available, as when none is configured.
    pub fn from_host(message: String) -> ModelError {
        if let Some((_, why)) = message.split_once(UNAVAILABLE) {
            return ModelError::Unavailable(why.to_string());
        }
        if let Some((_, why)) = message.split_once(OVER_CAP) {
            return ModelError::OverCap(why.to_string());
        }
        let model = tried_model(&message).map(str::to_string);
        ModelError::Host { model, message }
    }

    /// The model a failed request tried, when it is not the one selected
    /// (the host may pick another).
    pub fn model_tried(&self) -> Option<&str> {
        match self {
            ModelError::Host { model, .. } => model.as_deref(),
            _ => None,
        }
    }
}

/// How long a held call may take before its hold is a dead process's: the
/// request timeout, twice (one 429/503 retry may wait within it), and a minute.
fn call_lifetime(env: &ModelEnv) -> Duration {
    Duration::from_millis(env.config.timeout_ms.saturating_mul(2)) + Duration::from_secs(60)
}

/// The `provider/id` a host's error message starts with, if any.
fn tried_model(message: &str) -> Option<&str> {
    let rest = message
        .split_once("complete: ")
        .map_or(message, |(_, rest)| rest);
    let (head, _) = rest.split_once(": ")?;
    (head.contains('/') && !head.contains(char::is_whitespace)).then_some(head)
}

/// Parse the answer as `T` (tolerating a Markdown code fence) and validate it.
fn parse_and_validate<T>(
    text: &str,
    problem: Option<&str>,
    truncated: bool,
    ctx: &T::Context,
) -> Result<T, String>
where
    T: DeserializeOwned + garde::Validate,
{
    if let Some(problem) = problem {
        return Err(problem.to_string());
    }
    let json = json_object_text(text);
    if json.is_empty() {
        return Err("the answer was empty".into());
    }
    let value: T = serde_json::from_str(json).map_err(|e| {
        if truncated {
            format!(
                "the answer was cut off at the output token limit ({e}); write a shorter answer"
            )
        } else {
            format!("the answer is not valid JSON for the schema: {e}")
        }
    })?;
    value.validate_with(ctx).map_err(|report| {
        let problems: Vec<String> = report
            .iter()
            .map(|(path, error)| format!("{path}: {error}"))
            .collect();
        format!("the answer failed validation: {}", problems.join("; "))
    })?;
    Ok(value)
}

/// The JSON object in an answer. Models without a native JSON mode (some
/// local OpenAI-compatible servers) wrap it in a code fence or a sentence.
fn json_object_text(text: &str) -> &str {
    let mut trimmed = text.trim();
    if let Some(rest) = trimmed.strip_prefix("```") {
        let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphanumeric());
        trimmed = rest.strip_suffix("```").unwrap_or(rest).trim();
    }
    if !trimmed.starts_with('{') {
        if let (Some(start), Some(end)) = (trimmed.find('{'), trimmed.rfind('}')) {
            if start < end {
                return &trimmed[start..=end];
            }
        }
    }
    trimmed
}

/// The message that asks the model to fix its previous answer.
fn feedback(error: &str) -> String {
    format!(
        "Your previous answer was rejected: {}. Reply again with only one JSON object that matches the schema \
         and fixes this problem, without any other text.",
        one_line(error, 1000)
    )
}

/// A previous (bad) answer echoed back to the model: redacted and bounded,
/// so a runaway answer cannot multiply the next request's size.
fn bounded_echo(text: &str) -> String {
    const MAX: usize = 16_000;
    let text = if text.trim().is_empty() {
        "(empty)"
    } else {
        text
    };
    let end = crate::text::floor_char_boundary(text, MAX);
    redact(&text[..end]).into_owned()
}

#[cfg(test)]
mod tests {
    #[test]
    fn the_model_a_failed_host_call_tried_is_read_from_its_error() {
        let tried = |message: &str| {
            ModelError::from_host(message.into())
                .model_tried()
                .map(str::to_string)
        };
        assert_eq!(
            tried("complete: mock/mock-cheap: HTTP 500: down").as_deref(),
            Some("mock/mock-cheap")
        );
        let error = ModelError::from_host("complete: mock/mock-cheap: 500 status code".into());
        assert_eq!(error.model_tried(), Some("mock/mock-cheap"));
        assert_eq!(
            error.to_string(),
            "model request failed: complete: mock/mock-cheap: 500 status code"
        );
        assert_eq!(
            tried("openai/gpt-4o: no credentials: none").as_deref(),
            Some("openai/gpt-4o")
        );
        assert_eq!(
            tried("complete: the bridge did not answer within 5 ms"),
            None
        );
        assert_eq!(tried("no model available in pi for x/y"), None);
        assert_eq!(
            ModelError::from_host("complete: unavailable: none is logged in".into()),
            ModelError::Unavailable("none is logged in".into())
        );
        assert_eq!(
            ModelError::from_host("complete: over cap: a/b may cost up to $1".into()),
            ModelError::OverCap("a/b may cost up to $1".into())
        );
        assert_eq!(
            ModelError::Transport("x/y: down".into()).model_tried(),
            None
        );
    }

    use super::*;

    #[derive(Debug, serde::Deserialize, garde::Validate)]
    struct Named {
        #[garde(length(min = 1, max = 5))]
        name: String,
    }

    #[test]
    fn fenced_and_plain_json_parse() {
        let v: Named =
            parse_and_validate("```json\n{\"name\":\"ab\"}\n```", None, false, &()).unwrap();
        assert_eq!(v.name, "ab");
        let v: Named = parse_and_validate(" {\"name\":\"ab\"} ", None, false, &()).unwrap();
        assert_eq!(v.name, "ab");
        let v: Named =
            parse_and_validate("Here it is: {\"name\":\"ab\"}. Done", None, false, &()).unwrap();
        assert_eq!(v.name, "ab");
    }

    #[test]
    fn errors_name_the_problem() {
        let e = parse_and_validate::<Named>("{\"name\":\"toolongname\"}", None, false, &())
            .unwrap_err();
        assert!(e.contains("name: "), "{e}");
        let e = parse_and_validate::<Named>("{\"name\":", None, false, &()).unwrap_err();
        assert!(e.contains("not valid JSON"), "{e}");
        let e = parse_and_validate::<Named>("", Some("refused: policy"), false, &()).unwrap_err();
        assert_eq!(e, "refused: policy");
    }

    #[test]
    fn api_keys_do_not_show_in_debug() {
        let endpoint = Endpoint {
            provider: "openai".into(),
            model: "m".into(),
            kind: ProviderKind::Openai,
            base_url: "http://x".into(),
            api_key: Some(ApiKey("sk-secret-value-123456789".into())),
        };
        let selected = SelectedModel {
            key: "openai/m".into(),
            route: Route::Provider(endpoint),
        };
        assert!(!format!("{selected:?}").contains("secret-value"));
    }
}
