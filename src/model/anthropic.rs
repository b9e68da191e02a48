//! Anthropic messages. Models with structured outputs get
//! `output_config.format: {type: "json_schema"}`; older ones are prompted for
//! JSON only and their answer is prefilled with `{`.

use serde::Deserialize;
use serde_json::{json, Value};

use super::http::WireRequest;
use super::{schema, Answer, ChatMessage, Endpoint, JsonTask};

/// The API version header every request carries.
pub(super) const API_VERSION: &str = "2023-06-01";

pub(super) fn build(
    endpoint: &Endpoint,
    system: &str,
    turns: &[ChatMessage],
    task: &JsonTask,
) -> WireRequest {
    let native = has_structured_outputs(&endpoint.model);
    let mut messages: Vec<Value> = turns.iter().map(|turn| json!(turn)).collect();
    let mut body = json!({
        "model": endpoint.model,
        "max_tokens": task.max_output_tokens,
        "messages": [],
    });
    if native {
        body["system"] = json!(system);
        body["output_config"] = json!({"format": {"type": "json_schema", "schema": schema::for_anthropic(&task.schema)}});
    } else {
        let schema_text = serde_json::to_string(&task.schema).unwrap_or_default();
        body["system"] = json!(format!(
            "{system}\n\nRespond with only one JSON object that matches this JSON schema, with no other text:\n{schema_text}"
        ));
        messages.push(json!({"role": "assistant", "content": "{"}));
    }
    body["messages"] = Value::Array(messages);
    let mut headers = vec![("anthropic-version", API_VERSION.to_string(), false)];
    if let Some(key) = &endpoint.api_key {
        headers.push(("x-api-key", key.0.clone(), true));
    }
    WireRequest {
        url: format!("{}/messages", endpoint.base_url),
        headers,
        body,
        prefilled: !native,
    }
}

/// Structured outputs exist from the 4.5 generation on (Haiku 4.5, Sonnet 4.5,
/// Opus 4.5 and later). Names look like `claude-haiku-4-5-20251001` or, for
/// older models, `claude-3-5-haiku-latest`; unknown names are assumed new.
pub(super) fn has_structured_outputs(model: &str) -> bool {
    let numbers: Vec<u32> = model
        .split(['-', '.', '@'])
        .filter(|part| !part.is_empty() && part.len() <= 2)
        .filter_map(|part| part.parse().ok())
        .take(2)
        .collect();
    match numbers.as_slice() {
        [] => true,
        [major] => *major >= 5,
        [major, minor, ..] => (*major, *minor) >= (4, 5),
    }
}

#[derive(Deserialize)]
struct Response {
    content: Vec<Block>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: ResponseUsage,
}

#[derive(Deserialize)]
struct Block {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
}

#[derive(Deserialize, Default)]
struct ResponseUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
}

pub(super) fn parse(body: &[u8], prefilled: bool) -> Result<Answer, String> {
    let response: Response = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let usage = &response.usage;
    let input = usage.input_tokens
        + usage.cache_creation_input_tokens.unwrap_or(0)
        + usage.cache_read_input_tokens.unwrap_or(0);
    let mut answer = Answer {
        input_tokens: input,
        output_tokens: usage.output_tokens,
        ..Answer::default()
    };
    let text: String = response
        .content
        .iter()
        .filter(|b| b.kind == "text")
        .filter_map(|b| b.text.as_deref())
        .collect();
    answer.truncated = response.stop_reason.as_deref() == Some("max_tokens");
    if response.stop_reason.as_deref() == Some("refusal") {
        answer.problem = Some("the model refused to answer".into());
    } else if text.trim().is_empty() && !prefilled {
        answer.problem = Some("the answer was empty".into());
    } else {
        answer.text = Some(if prefilled { format!("{{{text}") } else { text });
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn structured_output_generations() {
        for model in [
            "claude-haiku-4-5",
            "claude-haiku-4-5-20251001",
            "claude-sonnet-4-6",
            "claude-opus-5",
            "claude-next",
        ] {
            assert!(has_structured_outputs(model), "{model}");
        }
        for model in [
            "claude-3-5-haiku-latest",
            "claude-3-haiku-20240307",
            "claude-sonnet-4-20250514",
            "claude-opus-4-1",
        ] {
            assert!(!has_structured_outputs(model), "{model}");
        }
    }

    #[test]
    fn parses_text_usage_and_prefill() {
        let body = br#"{"content":[{"type":"text","text":"\"a\":1}"}],"stop_reason":"end_turn","usage":{"input_tokens":10,"output_tokens":4,"cache_read_input_tokens":5}}"#;
        let answer = parse(body, true).unwrap();
        assert_eq!(answer.text.as_deref(), Some("{\"a\":1}"));
        assert_eq!((answer.input_tokens, answer.output_tokens), (15, 4));
        let refused = parse(br#"{"content":[],"stop_reason":"refusal"}"#, false).unwrap();
        assert!(refused.problem.is_some());
        assert!(parse(b"{}", false).is_err());
    }
}
