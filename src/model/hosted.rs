//! Completions served by the host (e.g. pi's own model registry and keys).

use pi_ext_abi::protocol::{ChatMessage, CompletionRequest};

use super::{Answer, JsonTask, ModelEnv, ModelError};
use crate::config::Config;
use crate::redact::redact;
use crate::text::one_line;

/// Every model the host may answer with before its fallback: the selected
/// `key` and the configured `modelKeys` (not the plugin's own `local/` ones),
/// each once.
pub(super) fn answerable_keys<'a>(
    config: &'a Config,
    key: &'a str,
) -> impl Iterator<Item = &'a str> + 'a {
    std::iter::once(key).chain(candidates(config).filter(move |k| *k != key))
}

fn candidates(config: &Config) -> impl Iterator<Item = &str> + '_ {
    config
        .model_keys
        .iter()
        .map(String::as_str)
        .filter(|k| !k.starts_with("local/"))
}

/// `limit_usd`: the most the call may cost (see
/// [`CompletionRequest::max_cost_usd`]), when a daily cap is set.
pub(super) fn call(
    env: &ModelEnv,
    key: &str,
    system: &str,
    turns: &[ChatMessage],
    task: &JsonTask,
    limit_usd: Option<f64>,
) -> Result<Answer, ModelError> {
    let request = CompletionRequest {
        model: Some(key.to_string()),
        candidates: candidates(env.config).map(str::to_string).collect(),
        fallback: Some(env.config.model_fallback),
        system: system.to_string(),
        messages: turns.to_vec(),
        max_tokens: task.max_output_tokens,
        json_schema: Some(task.schema.clone()),
        timeout_ms: env.config.timeout_ms,
        max_cost_usd: limit_usd,
    };
    let host = env
        .host
        .ok_or_else(|| ModelError::Unavailable("no host to serve the completion".into()))?;
    let response = host
        .complete(&request)
        .map_err(|e| ModelError::from_host(one_line(&redact(&e), 300)))?;
    if response.text.len() > env.config.max_response_bytes {
        return Err(ModelError::ResponseTooLarge(env.config.max_response_bytes));
    }
    let model = Some(response.model).filter(|m| !m.is_empty());
    Ok(Answer {
        text: Some(response.text),
        input_tokens: response.usage.input_tokens,
        output_tokens: response.usage.output_tokens,
        cost_usd: response.usage.cost_usd,
        model,
        choice: response.choice,
        ..Answer::default()
    })
}
