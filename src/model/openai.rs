//! OpenAI chat completions, also spoken by OpenRouter, Ollama, vLLM and LM
//! Studio. Structured output via `response_format: {type: "json_schema"}`.

use serde::Deserialize;
use serde_json::json;

use super::http::WireRequest;
use super::{schema, Answer, ChatMessage, Endpoint, JsonTask};

pub(super) fn build(
    endpoint: &Endpoint,
    system: &str,
    turns: &[ChatMessage],
    task: &JsonTask,
) -> WireRequest {
    let mut messages = vec![json!({"role": "system", "content": system})];
    messages.extend(turns.iter().map(|turn| json!(turn)));
    let (schema, strict) = schema::for_openai(&task.schema);
    let mut body = json!({
        "model": endpoint.model,
        "messages": messages,
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": schema_name(&task.schema_name), "schema": schema, "strict": strict},
        },
    });
    // OpenAI's own API replaced `max_tokens` (rejected by its reasoning models);
    // compatible servers still know only `max_tokens`.
    let limit_field = if endpoint.provider == "openai" {
        "max_completion_tokens"
    } else {
        "max_tokens"
    };
    body[limit_field] = json!(task.max_output_tokens);
    let mut headers = Vec::new();
    if let Some(key) = &endpoint.api_key {
        headers.push(("authorization", format!("Bearer {}", key.0), true));
    }
    WireRequest {
        url: format!("{}/chat/completions", endpoint.base_url),
        headers,
        body,
        prefilled: false,
    }
}

/// OpenAI requires `^[a-zA-Z0-9_-]{1,64}$`.
fn schema_name(name: &str) -> String {
    let name: String = name
        .chars()
        .filter(|c| c.is_ascii_alphanumeric() || *c == '_' || *c == '-')
        .take(64)
        .collect();
    if name.is_empty() {
        "answer".into()
    } else {
        name
    }
}

#[derive(Deserialize)]
struct Response {
    choices: Vec<Choice>,
    #[serde(default)]
    usage: Option<ResponseUsage>,
}

#[derive(Deserialize)]
struct Choice {
    message: Message,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Message {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    refusal: Option<String>,
}

#[derive(Deserialize)]
struct ResponseUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
}

pub(super) fn parse(body: &[u8]) -> Result<Answer, String> {
    let response: Response = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let usage = response.usage.unwrap_or(ResponseUsage {
        prompt_tokens: 0,
        completion_tokens: 0,
    });
    let mut answer = Answer {
        input_tokens: usage.prompt_tokens,
        output_tokens: usage.completion_tokens,
        ..Answer::default()
    };
    let Some(choice) = response.choices.into_iter().next() else {
        answer.problem = Some("the provider returned no choices".into());
        return Ok(answer);
    };
    answer.truncated = choice.finish_reason.as_deref() == Some("length");
    match (choice.message.content, choice.message.refusal) {
        (Some(text), _) if !text.trim().is_empty() => answer.text = Some(text),
        (_, Some(refusal)) => answer.problem = Some(format!("the model refused: {refusal}")),
        _ => answer.problem = Some("the answer was empty".into()),
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schema_names_are_sanitized() {
        assert_eq!(schema_name("session index!"), "sessionindex");
        assert_eq!(schema_name("***"), "answer");
    }

    #[test]
    fn parses_content_refusal_and_length() {
        let ok = parse(br#"{"choices":[{"message":{"role":"assistant","content":"{}"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":2}}"#).unwrap();
        assert_eq!(
            (ok.text.as_deref(), ok.input_tokens, ok.output_tokens),
            (Some("{}"), 3, 2)
        );
        let refused =
            parse(br#"{"choices":[{"message":{"content":null,"refusal":"no"}}]}"#).unwrap();
        assert_eq!(refused.problem.as_deref(), Some("the model refused: no"));
        let cut =
            parse(br#"{"choices":[{"message":{"content":"{\"a\":"},"finish_reason":"length"}]}"#)
                .unwrap();
        assert!(cut.truncated);
        assert!(parse(b"{}").is_err());
        let none = parse(br#"{"choices":[]}"#).unwrap();
        assert!(none.problem.is_some());
    }
}
