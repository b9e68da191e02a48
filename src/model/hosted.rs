//! Completions served by the host (e.g. pi's own model registry and keys).

use pi_ext_abi::protocol::{ChatMessage, CompletionRequest};

use super::{Answer, JsonTask, ModelError};
use crate::plugin::state::App;
use crate::redact::redact;
use crate::text::one_line;

pub(super) fn call(
    app: &App,
    key: &str,
    system: &str,
    turns: &[ChatMessage],
    task: &JsonTask,
) -> Result<Answer, ModelError> {
    let request = CompletionRequest {
        model: Some(key.to_string()),
        candidates: app
            .config
            .model_keys
            .iter()
            .filter(|k| !k.starts_with("local/"))
            .cloned()
            .collect(),
        system: system.to_string(),
        messages: turns.to_vec(),
        max_tokens: task.max_output_tokens,
        json_schema: Some(task.schema.clone()),
        timeout_ms: app.config.timeout_ms,
    };
    let response = app
        .host
        .complete(&request)
        .map_err(|e| ModelError::Transport(one_line(&redact(&e), 300)))?;
    if response.text.len() > app.config.max_response_bytes {
        return Err(ModelError::ResponseTooLarge(app.config.max_response_bytes));
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
