//! Google Gemini `generateContent` with `responseMimeType: application/json`
//! and `responseJsonSchema`; the key travels in `x-goog-api-key`, never in
//! the URL.

use serde::Deserialize;
use serde_json::{json, Value};

use super::http::WireRequest;
use super::{schema, Answer, ChatMessage, Endpoint, JsonTask};

pub(super) fn build(
    endpoint: &Endpoint,
    system: &str,
    turns: &[ChatMessage],
    task: &JsonTask,
) -> WireRequest {
    // Gemini calls the assistant `model`.
    let role = |turn: &ChatMessage| {
        if turn.role == "assistant" {
            "model"
        } else {
            "user"
        }
    };
    let contents: Vec<Value> = turns
        .iter()
        .map(|turn| json!({"role": role(turn), "parts": [{"text": turn.content}]}))
        .collect();
    let mut generation = json!({
        "responseMimeType": "application/json",
        "responseJsonSchema": schema::for_gemini(&task.schema),
        "maxOutputTokens": task.max_output_tokens,
    });
    // 2.5 Flash thinks by default and bills thoughts against maxOutputTokens,
    // which can leave nothing for the answer; extraction needs no thinking.
    if endpoint.model.contains("2.5-flash") {
        generation["thinkingConfig"] = json!({"thinkingBudget": 0});
    }
    let body = json!({
        "systemInstruction": {"parts": [{"text": system}]},
        "contents": contents,
        "generationConfig": generation,
    });
    let mut headers = Vec::new();
    if let Some(key) = &endpoint.api_key {
        headers.push(("x-goog-api-key", key.0.clone(), true));
    }
    let url = format!(
        "{}/models/{}:generateContent",
        endpoint.base_url,
        path_segment(&endpoint.model)
    );
    WireRequest {
        url,
        headers,
        body,
        prefilled: false,
    }
}

/// Percent-encode a model id for use as one path segment.
fn path_segment(model: &str) -> String {
    let mut out = String::new();
    for byte in model.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    #[serde(default)]
    candidates: Vec<Candidate>,
    usage_metadata: UsageMetadata,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: bool,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageMetadata {
    #[serde(default)]
    prompt_token_count: u64,
    #[serde(default)]
    candidates_token_count: u64,
    #[serde(default)]
    thoughts_token_count: u64,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

pub(super) fn parse(body: &[u8]) -> Result<Answer, String> {
    let response: Response = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let usage = &response.usage_metadata;
    let mut answer = Answer {
        input_tokens: usage.prompt_token_count,
        // Thinking tokens are billed as output.
        output_tokens: usage.candidates_token_count + usage.thoughts_token_count,
        ..Answer::default()
    };
    let Some(candidate) = response.candidates.into_iter().next() else {
        let reason = response
            .prompt_feedback
            .and_then(|f| f.block_reason)
            .unwrap_or_else(|| "unknown".into());
        answer.problem = Some(format!(
            "the provider returned no candidate (block reason: {reason})"
        ));
        return Ok(answer);
    };
    let text: String = candidate
        .content
        .map(|c| {
            c.parts
                .into_iter()
                .filter(|p| !p.thought)
                .filter_map(|p| p.text)
                .collect()
        })
        .unwrap_or_default();
    let finish = candidate.finish_reason.unwrap_or_default();
    answer.truncated = finish == "MAX_TOKENS";
    if text.trim().is_empty() {
        answer.problem = Some(format!("the answer was empty (finish reason: {finish})"));
    } else {
        answer.text = Some(text);
    }
    Ok(answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn model_ids_are_one_path_segment() {
        assert_eq!(path_segment("gemini-2.5-flash"), "gemini-2.5-flash");
        assert_eq!(path_segment("a/b:c"), "a%2Fb%3Ac");
    }

    #[test]
    fn parses_parts_usage_and_blocks() {
        let body = br#"{"candidates":[{"content":{"role":"model","parts":[{"text":"plan","thought":true},{"text":"{\"a\":1}"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":7,"candidatesTokenCount":3,"thoughtsTokenCount":2}}"#;
        let answer = parse(body).unwrap();
        assert_eq!(answer.text.as_deref(), Some("{\"a\":1}"));
        assert_eq!((answer.input_tokens, answer.output_tokens), (7, 5));
        let blocked =
            parse(br#"{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":7}}"#).unwrap();
        assert!(blocked.problem.unwrap().contains("SAFETY"));
        assert!(parse(b"{}").is_err());
    }
}
