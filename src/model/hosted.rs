//! Completions served by the host (e.g. pi's own model registry and keys).

use pi_ext_abi::protocol::{ChatMessage, CompletionRequest};

use super::{Answer, JsonTask, ModelEnv, ModelError};
use crate::redact::redact;
use crate::text::one_line;

pub(super) fn call(
    env: &ModelEnv,
    key: &str,
    system: &str,
    turns: &[ChatMessage],
    task: &JsonTask,
) -> Result<Answer, ModelError> {
    let request = CompletionRequest {
        model: Some(key.to_string()),
        candidates: env
            .config
            .model_keys
            .iter()
            .filter(|k| !k.starts_with("local/"))
            .cloned()
            .collect(),
        fallback: Some(env.config.model_fallback),
        system: system.to_string(),
        messages: turns.to_vec(),
        max_tokens: task.max_output_tokens,
        json_schema: Some(task.schema.clone()),
        timeout_ms: env.config.timeout_ms,
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
