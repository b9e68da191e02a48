//! The model layer against mock providers over real loopback HTTP: each
//! provider's wire format and native JSON mode, the retry policy, limits,
//! cost, redaction and model selection.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::mock_provider::{MockProvider, Reply, ServingHost, Wire};
use pi_ext_abi::protocol::{SessionContext, Usage};
use serde::Deserialize;
use serde_json::{json, Value};
use session_index::model::{
    select_model, select_model_with_env, spend, JsonTask, ModelError, ModelOutcome,
};
use session_index::plugin::host::{Host, RecordingHost};
use session_index::plugin::state::Services;

#[derive(Debug, Deserialize, garde::Validate, PartialEq)]
#[serde(deny_unknown_fields)]
struct Summary {
    #[garde(length(min = 1, max = 40))]
    name: String,
    #[garde(length(min = 1, max = 4), inner(length(min = 1, max = 20)))]
    tags: Vec<String>,
}

const VALID: &str = r#"{"name":"Fix the parser","tags":["rust","parser"]}"#;
/// Generous: the machine is shared, and only the timeout tests use short limits.
const TIMEOUT_MS: u64 = 30_000;

fn task(user: &str) -> JsonTask {
    JsonTask {
        system: "You index coding sessions.".into(),
        user: user.into(),
        schema_name: "session_summary".into(),
        schema: json!({
            "type": "object",
            "additionalProperties": false,
            "required": ["name", "tags"],
            "properties": {
                "name": {"type": "string", "maxLength": 40},
                "tags": {"type": "array", "minItems": 1, "maxItems": 4, "items": {"type": "string", "maxLength": 20}},
            },
        }),
        max_output_tokens: 500,
    }
}

fn recording_host(keys: &[(&str, &str)]) -> Arc<RecordingHost> {
    let host = RecordingHost::new(SessionContext::default());
    host.keys
        .lock()
        .unwrap()
        .extend(keys.iter().map(|(p, k)| (p.to_string(), k.to_string())));
    host
}

fn make_app(host: Host, config: Value) -> Arc<Services> {
    let services = Services::new(host, PathBuf::from("."), &config.to_string());
    assert!(services.config_ok(), "{:?}", services.config_problems);
    services
}

/// An app whose only model is `key`, served by `mock` under the provider name of `key`.
fn app_for(mock: &MockProvider, key: &str, extra: Value) -> Arc<Services> {
    let provider = key.split_once('/').unwrap().0;
    let mut config = json!({
        "modelKeys": [key],
        "providers": {provider: mock.provider_config()},
        "timeoutMs": TIMEOUT_MS,
        "useHostModels": false,
    });
    for (k, v) in extra.as_object().unwrap() {
        config[k] = v.clone();
    }
    make_app(
        recording_host(&[(provider, "sk-test-key-0123456789abcdef")]),
        config,
    )
}

fn run(services: &Services, user: &str) -> Result<ModelOutcome<Summary>, ModelError> {
    select_model(&services.model_env())?.complete_json::<Summary>(
        &services.model_env(),
        &no_cap(),
        &task(user),
        &(),
    )
}

/// A ledger without a cap, shared by these tests (what they spend is not what they check).
fn no_cap() -> spend::Budget<'static> {
    static LEDGER: std::sync::LazyLock<tempfile::TempDir> =
        std::sync::LazyLock::new(|| tempfile::tempdir().unwrap());
    spend::Budget {
        meta_dir: LEDGER.path(),
        kind: spend::Kind::Queries,
        cap: None,
        session: None,
    }
}

fn expected_summary() -> Summary {
    Summary {
        name: "Fix the parser".into(),
        tags: vec!["rust".into(), "parser".into()],
    }
}

// ---------------------------------------------------------------- happy paths

#[test]
fn openai_happy_path_uses_strict_json_schema_and_no_tools() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer(VALID).usage(1000, 50));
    let services = app_for(&mock, "openai/gpt-4.1-mini", json!({}));
    let outcome = run(&services, "summarise this").unwrap();
    assert_eq!(outcome.value, expected_summary());
    assert_eq!(outcome.model, "openai/gpt-4.1-mini");
    assert_eq!(
        (
            outcome.usage.input_tokens,
            outcome.usage.output_tokens,
            outcome.attempts
        ),
        (1000, 50, 1)
    );
    let cost = outcome.usage.cost_usd.unwrap();
    assert!(
        (cost - (1000.0 * 0.40 + 50.0 * 1.60) / 1e6).abs() < 1e-12,
        "{cost}"
    );

    let sent = mock.requests();
    assert_eq!(sent.len(), 1);
    let req = &sent[0];
    assert_eq!(
        (req.method.as_str(), req.path.as_str()),
        ("POST", "/v1/chat/completions")
    );
    assert_eq!(
        req.header("authorization"),
        Some("Bearer sk-test-key-0123456789abcdef")
    );
    let format = &req.json["response_format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["json_schema"]["name"], "session_summary");
    assert_eq!(format["json_schema"]["strict"], true);
    assert_eq!(
        format["json_schema"]["schema"]["required"],
        json!(["name", "tags"])
    );
    assert_eq!(req.json["max_completion_tokens"], 500);
    assert_eq!(req.json["model"], "gpt-4.1-mini");
    assert_eq!(
        req.json["messages"][0],
        json!({"role": "system", "content": "You index coding sessions."})
    );
    assert_eq!(
        req.json["messages"][1],
        json!({"role": "user", "content": "summarise this"})
    );
    for field in ["tools", "tool_choice", "functions"] {
        assert!(req.json.get(field).is_none(), "{field} sent");
    }
    assert!(
        !req.body.contains("sk-test-key"),
        "the key leaked into the body"
    );
}

#[test]
fn anthropic_happy_path_uses_output_config_format() {
    let mock = MockProvider::start(Wire::Anthropic);
    mock.push(Reply::answer(VALID).usage(2000, 100));
    let services = app_for(&mock, "anthropic/claude-haiku-4-5", json!({}));
    let outcome = run(&services, "summarise this").unwrap();
    assert_eq!(outcome.value, expected_summary());
    assert_eq!(outcome.model, "anthropic/claude-haiku-4-5");
    let cost = outcome.usage.cost_usd.unwrap();
    assert!(
        (cost - (2000.0 * 1.0 + 100.0 * 5.0) / 1e6).abs() < 1e-12,
        "{cost}"
    );

    let req = &mock.requests()[0];
    assert_eq!(req.path, "/v1/messages");
    assert_eq!(
        req.header("x-api-key"),
        Some("sk-test-key-0123456789abcdef")
    );
    assert_eq!(req.header("anthropic-version"), Some("2023-06-01"));
    assert!(req.header("authorization").is_none());
    let format = &req.json["output_config"]["format"];
    assert_eq!(format["type"], "json_schema");
    assert_eq!(format["schema"]["additionalProperties"], false);
    assert!(
        format["schema"]["properties"]["name"]
            .get("maxLength")
            .is_none(),
        "unsupported keyword sent"
    );
    assert_eq!(req.json["system"], "You index coding sessions.");
    assert_eq!(req.json["max_tokens"], 500);
    assert_eq!(
        req.messages(),
        vec![("user".to_string(), "summarise this".to_string())]
    );
    assert!(req.json.get("tools").is_none());
}

#[test]
fn anthropic_without_structured_outputs_prefills_a_brace() {
    let mock = MockProvider::start(Wire::Anthropic);
    mock.push(Reply::answer(VALID));
    let services = app_for(&mock, "anthropic/claude-3-5-haiku-latest", json!({}));
    let outcome = run(&services, "summarise this").unwrap();
    assert_eq!(outcome.value, expected_summary());
    let req = &mock.requests()[0];
    assert!(req.json.get("output_config").is_none());
    assert_eq!(
        req.messages().last().unwrap(),
        &("assistant".to_string(), "{".to_string())
    );
    let system = req.json["system"].as_str().unwrap();
    assert!(
        system.contains("only one JSON object") && system.contains("\"tags\""),
        "{system}"
    );
}

#[test]
fn gemini_happy_path_uses_response_json_schema_and_header_key() {
    let mock = MockProvider::start(Wire::Gemini);
    mock.push(Reply::answer(VALID).usage(3000, 200));
    let services = app_for(&mock, "google/gemini-2.5-flash", json!({}));
    let outcome = run(&services, "summarise this").unwrap();
    assert_eq!(outcome.value, expected_summary());
    assert_eq!(
        (outcome.usage.input_tokens, outcome.usage.output_tokens),
        (3000, 200)
    );
    let cost = outcome.usage.cost_usd.unwrap();
    assert!(
        (cost - (3000.0 * 0.30 + 200.0 * 2.50) / 1e6).abs() < 1e-12,
        "{cost}"
    );

    let req = &mock.requests()[0];
    assert_eq!(req.path, "/v1beta/models/gemini-2.5-flash:generateContent");
    assert_eq!(
        req.header("x-goog-api-key"),
        Some("sk-test-key-0123456789abcdef")
    );
    assert!(
        !req.path.contains("key="),
        "the key must not travel in the URL"
    );
    let generation = &req.json["generationConfig"];
    assert_eq!(generation["responseMimeType"], "application/json");
    assert_eq!(
        generation["responseJsonSchema"]["required"],
        json!(["name", "tags"])
    );
    assert_eq!(generation["maxOutputTokens"], 500);
    assert_eq!(generation["thinkingConfig"]["thinkingBudget"], 0);
    assert_eq!(
        req.json["systemInstruction"]["parts"][0]["text"],
        "You index coding sessions."
    );
    assert_eq!(
        req.messages(),
        vec![("user".to_string(), "summarise this".to_string())]
    );
    assert!(req.json.get("tools").is_none());
}

#[test]
fn works_from_a_background_job_thread() {
    // Features call providers from their background jobs (Jobs::submit), each on a thread of its own.
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer(VALID));
    let services = app_for(&mock, "openai/gpt-4.1-mini", json!({}));
    let job_app = services.clone();
    let (sender, answers) = std::sync::mpsc::channel();
    services.jobs.submit("provider-call", move || {
        let _ = sender.send(run(&job_app, "from a job").map(|o| o.value));
    });
    let answer = answers
        .recv_timeout(std::time::Duration::from_secs(120))
        .expect("the job answers");
    assert_eq!(answer.unwrap(), expected_summary());
}

// ---------------------------------------------------------------- invalid output

#[test]
fn malformed_json_is_retried_with_the_error_and_usage_is_summed() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer(r#"{"name": "Fix the parser", "tags": ["#).usage(1000, 10));
    mock.push(Reply::answer(VALID).usage(1100, 20));
    let services = app_for(&mock, "openai/gpt-4.1-mini", json!({}));
    let outcome = run(&services, "summarise this").unwrap();
    assert_eq!(outcome.value, expected_summary());
    assert_eq!(outcome.attempts, 2);
    assert_eq!(
        (outcome.usage.input_tokens, outcome.usage.output_tokens),
        (2100, 30)
    );

    let sent = mock.requests();
    assert_eq!(sent.len(), 2);
    let messages = &sent[1].json["messages"];
    assert_eq!(messages.as_array().unwrap().len(), 4, "{messages}");
    assert_eq!(messages[2]["role"], "assistant");
    assert_eq!(
        messages[2]["content"],
        r#"{"name": "Fix the parser", "tags": ["#
    );
    assert_eq!(messages[3]["role"], "user");
    assert!(
        messages[3]["content"]
            .as_str()
            .unwrap()
            .contains("not valid JSON"),
        "{}",
        messages[3]
    );
}

#[test]
fn schema_invalid_answer_is_retried_naming_the_field() {
    let mock = MockProvider::start(Wire::Anthropic);
    let too_long = json!({"name": "x".repeat(80), "tags": ["rust"]});
    mock.push(Reply::answer_json(&too_long));
    mock.push(Reply::answer(VALID));
    let services = app_for(&mock, "anthropic/claude-haiku-4-5", json!({}));
    let outcome = run(&services, "summarise this").unwrap();
    assert_eq!(outcome.attempts, 2);
    let retry = &mock.requests()[1];
    let messages = retry.messages();
    assert_eq!(messages.len(), 3);
    assert_eq!(messages[1].0, "assistant");
    assert_eq!(messages[2].0, "user");
    assert!(messages[2].1.contains("name: "), "{}", messages[2].1);
    assert!(messages[2].1.contains("validation"), "{}", messages[2].1);
}

#[test]
fn three_invalid_answers_fail_with_invalid_output() {
    let mock = MockProvider::start(Wire::Gemini);
    mock.push(Reply::answer("not json"));
    mock.push(Reply::answer(r#"{"name": "", "tags": []}"#));
    mock.push(Reply::answer(r#"{"name": "ok"}"#));
    mock.push(Reply::answer(VALID)); // never requested
    let services = app_for(&mock, "google/gemini-2.5-flash", json!({}));
    let error = run(&services, "summarise this").unwrap_err();
    match &error {
        ModelError::InvalidOutput {
            attempts,
            last_error,
        } => {
            assert_eq!(*attempts, 3);
            assert!(last_error.contains("tags"), "{last_error}");
        }
        other => panic!("expected InvalidOutput, got {other:?}"),
    }
    assert_eq!(mock.requests().len(), 3);
    assert_eq!(mock.pending(), 1);
    assert_eq!(
        mock.requests()[2].messages().len(),
        5,
        "the whole exchange is sent on the third attempt"
    );
    assert!(!error.to_string().contains('\n'));
}

#[test]
fn truncated_answer_asks_for_a_shorter_one() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer(r#"{"name": "Fix the par"#).truncated());
    mock.push(Reply::answer(VALID));
    let services = app_for(&mock, "openai/gpt-4.1-mini", json!({}));
    run(&services, "summarise this").unwrap();
    let feedback = &mock.requests()[1].messages()[3].1;
    assert!(feedback.contains("cut off"), "{feedback}");
}

// ---------------------------------------------------------------- transport policy

#[test]
fn http_500_is_not_retried() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::error(500, "The server had an error"));
    mock.push(Reply::answer(VALID));
    let services = app_for(&mock, "openai/gpt-4.1-mini", json!({}));
    let error = run(&services, "summarise this").unwrap_err();
    assert_eq!(
        error,
        ModelError::Http {
            status: 500,
            message: "The server had an error".into()
        }
    );
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn http_429_with_retry_after_is_retried_once() {
    let mock = MockProvider::start(Wire::Anthropic);
    mock.push(Reply::error(429, "rate limited").header("retry-after", "1"));
    mock.push(Reply::answer(VALID));
    let services = app_for(&mock, "anthropic/claude-haiku-4-5", json!({}));
    let started = Instant::now();
    let outcome = run(&services, "summarise this").unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(950),
        "Retry-After was not honoured"
    );
    assert_eq!(
        outcome.attempts, 1,
        "a rate-limit retry is not an answer attempt"
    );
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn rate_limit_is_retried_only_once() {
    let mock = MockProvider::start(Wire::Gemini);
    mock.push(Reply::error(503, "overloaded"));
    mock.push(Reply::error(503, "still overloaded"));
    mock.push(Reply::answer(VALID));
    let services = app_for(&mock, "google/gemini-2.5-flash", json!({}));
    let error = run(&services, "summarise this").unwrap_err();
    assert_eq!(
        error,
        ModelError::Http {
            status: 503,
            message: "still overloaded".into()
        }
    );
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn anthropic_overloaded_529_is_retried_once() {
    let mock = MockProvider::start(Wire::Anthropic);
    mock.push(Reply::error(529, "Overloaded"));
    mock.push(Reply::answer(VALID));
    let services = app_for(&mock, "anthropic/claude-haiku-4-5", json!({}));
    assert_eq!(run(&services, "x").unwrap().value, expected_summary());
    assert_eq!(mock.requests().len(), 2);
}

#[test]
fn retry_after_beyond_the_timeout_is_not_waited_for() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::error(429, "come back tomorrow").header("retry-after", "86400"));
    mock.push(Reply::answer(VALID));
    let services = app_for(&mock, "openai/gpt-4.1-mini", json!({}));
    let started = Instant::now();
    let error = run(&services, "summarise this").unwrap_err();
    assert!(
        matches!(error, ModelError::Http { status: 429, .. }),
        "{error:?}"
    );
    assert_eq!(mock.requests().len(), 1);
    assert!(started.elapsed() < Duration::from_secs(20));
}

#[test]
fn slow_provider_times_out() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer(VALID).delay(Duration::from_secs(10)));
    let services = app_for(&mock, "openai/gpt-4.1-mini", json!({"timeoutMs": 500}));
    let started = Instant::now();
    let error = run(&services, "summarise this").unwrap_err();
    assert_eq!(error, ModelError::Timeout(500));
    assert!(
        started.elapsed() < Duration::from_secs(8),
        "the timeout did not cut the request"
    );
}

#[test]
fn oversized_response_is_rejected_while_streaming() {
    let mock = MockProvider::start(Wire::OpenAi);
    // No Content-Length: the size is only discovered while reading; 64 MB
    // exceeds any loopback socket buffer, so the writer sees the hang-up.
    mock.push(Reply::oversized(64 * 1024 * 1024, false));
    let services = app_for(
        &mock,
        "openai/gpt-4.1-mini",
        json!({"maxResponseBytes": 65_536}),
    );
    let error = run(&services, "summarise this").unwrap_err();
    assert_eq!(error, ModelError::ResponseTooLarge(65_536));
    assert_eq!(mock.requests().len(), 1);
    let deadline = Instant::now() + Duration::from_secs(20);
    while !mock.oversized_aborted() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        mock.oversized_aborted(),
        "the client kept reading the oversized body"
    );
}

#[test]
fn oversized_content_length_is_rejected_up_front() {
    let mock = MockProvider::start(Wire::Anthropic);
    mock.push(Reply::oversized(10 * 1024 * 1024, true));
    let services = app_for(
        &mock,
        "anthropic/claude-haiku-4-5",
        json!({"maxResponseBytes": 65_536}),
    );
    assert_eq!(
        run(&services, "x").unwrap_err(),
        ModelError::ResponseTooLarge(65_536)
    );
}

#[test]
fn unexpected_success_body_is_a_transport_error() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::raw(200, "<html>captive portal</html>"));
    let services = app_for(&mock, "openai/gpt-4.1-mini", json!({}));
    let error = run(&services, "x").unwrap_err();
    assert!(matches!(error, ModelError::Transport(_)), "{error:?}");
    assert_eq!(mock.requests().len(), 1);
}

#[test]
fn redirects_are_not_followed_so_keys_stay_put() {
    let mock = MockProvider::start(Wire::Gemini);
    let elsewhere = MockProvider::start(Wire::Gemini);
    let target = format!(
        "{}/models/gemini-2.5-flash:generateContent",
        elsewhere.base_url()
    );
    mock.push(Reply::raw(307, "").header("location", &target));
    elsewhere.push(Reply::answer(VALID));
    let services = app_for(&mock, "google/gemini-2.5-flash", json!({}));
    let error = run(&services, "x").unwrap_err();
    assert!(
        matches!(error, ModelError::Http { status: 307, .. }),
        "{error:?}"
    );
    assert!(
        elsewhere.requests().is_empty(),
        "the x-goog-api-key followed a redirect"
    );
}

#[test]
fn connection_refused_is_a_transport_error() {
    let mock = MockProvider::start(Wire::OpenAi);
    let services = app_for(&mock, "openai/gpt-4.1-mini", json!({}));
    drop(mock);
    let error = run(&services, "x").unwrap_err();
    assert!(matches!(error, ModelError::Transport(_)), "{error:?}");
}

// ---------------------------------------------------------------- cost

#[test]
fn configured_prices_override_the_built_in_table() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer(VALID).usage(1000, 500));
    let prices =
        json!({"prices": {"openai/gpt-4.1-mini": {"inputPerMtok": 2.0, "outputPerMtok": 8.0}}});
    let services = app_for(&mock, "openai/gpt-4.1-mini", prices);
    let cost = run(&services, "x").unwrap().usage.cost_usd.unwrap();
    assert!((cost - 0.006).abs() < 1e-12, "{cost}");
}

#[test]
fn unknown_model_costs_zero() {
    let mock = MockProvider::start(Wire::OpenAi);
    mock.push(Reply::answer(VALID).usage(1000, 500));
    let services = app_for(&mock, "openai/some-unlisted-model", json!({}));
    assert_eq!(run(&services, "x").unwrap().usage.cost_usd, Some(0.0));
}

// ---------------------------------------------------------------- secret hygiene

#[test]
fn secrets_are_redacted_before_they_leave_the_process() {
    let mock = MockProvider::start(Wire::Gemini);
    mock.push(Reply::answer(VALID));
    let services = app_for(&mock, "google/gemini-2.5-flash", json!({}));
    let user = "I ran `export ANTHROPIC_API_KEY=sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz` then \
                psql postgres://admin:hunter2@db.internal/app and pasted\n\
                -----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7secretbody\n-----END RSA PRIVATE KEY-----\n\
                curl -H 'Authorization: Bearer abcdef0123456789abcdef' https://api.example.com";
    let mut task = task(user);
    task.system.push_str(" Never reveal AKIAIOSFODNN7EXAMPLE.");
    select_model(&services.model_env())
        .unwrap()
        .complete_json::<Summary>(&services.model_env(), &no_cap(), &task, &())
        .unwrap();
    let req = &mock.requests()[0];
    for secret in [
        "AbCdEfGhIjKlMnOpQrStUvWx",
        "hunter2",
        "MIIEowIBAAKCAQEA7secretbody",
        "abcdef0123456789abcdef",
        "AKIAIOSFODNN7EXAMPLE",
    ] {
        assert!(
            !req.body.contains(secret),
            "{secret} was sent: {}",
            req.body
        );
    }
    let texts = req.texts();
    assert!(
        texts.contains("postgres://admin:[REDACTED]@db.internal/app"),
        "{texts}"
    );
    assert!(texts.contains("Bearer [REDACTED]"), "{texts}");
}

#[test]
fn error_messages_never_carry_the_api_key() {
    let mock = MockProvider::start(Wire::OpenAi);
    let echoed = "Incorrect API key provided: sk-test-key-0123456789abcdef. You can find your API key at ...";
    mock.push(Reply::error(401, echoed));
    let services = app_for(&mock, "openai/gpt-4.1-mini", json!({}));
    let error = run(&services, "x").unwrap_err();
    let text = error.to_string();
    assert!(
        matches!(error, ModelError::Http { status: 401, .. }),
        "{error:?}"
    );
    assert!(!text.contains("0123456789abcdef"), "{text}");
    assert!(text.contains("[REDACTED]"), "{text}");
    let selected = select_model(&services.model_env()).unwrap();
    assert!(!format!("{selected:?}").contains("0123456789abcdef"));
}

// ---------------------------------------------------------------- selection

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

fn two_provider_config(openai: &MockProvider, anthropic: &MockProvider) -> Value {
    json!({
        "modelKeys": ["anthropic/claude-haiku-4-5", "openai/gpt-4.1-mini"],
        "providers": {"openai": openai.provider_config(), "anthropic": anthropic.provider_config()},
        "timeoutMs": TIMEOUT_MS,
        "useHostModels": false,
    })
}

#[test]
fn host_key_wins_over_the_environment() {
    let openai = MockProvider::start(Wire::OpenAi);
    let anthropic = MockProvider::start(Wire::Anthropic);
    anthropic.push(Reply::answer(VALID));
    let services = make_app(
        recording_host(&[("anthropic", "sk-ant-from-host")]),
        two_provider_config(&openai, &anthropic),
    );
    let env = env_of(&[
        ("ANTHROPIC_API_KEY", "sk-ant-from-env"),
        ("OPENAI_API_KEY", "sk-openai-env"),
    ]);
    let selected = select_model_with_env(&services.model_env(), env).unwrap();
    assert_eq!(selected.key(), "anthropic/claude-haiku-4-5");
    selected
        .complete_json::<Summary>(&services.model_env(), &no_cap(), &task("x"), &())
        .unwrap();
    assert_eq!(
        anthropic.requests()[0].header("x-api-key"),
        Some("sk-ant-from-host")
    );
    assert!(openai.requests().is_empty());
}

#[test]
fn standard_environment_variables_are_the_fallback() {
    let openai = MockProvider::start(Wire::OpenAi);
    let anthropic = MockProvider::start(Wire::Anthropic);
    openai.push(Reply::answer(VALID));
    let services = make_app(
        recording_host(&[]),
        two_provider_config(&openai, &anthropic),
    );
    // No Anthropic key anywhere: the second key is the first available one.
    let selected = select_model_with_env(
        &services.model_env(),
        env_of(&[("OPENAI_API_KEY", "sk-openai-env")]),
    )
    .unwrap();
    assert_eq!(selected.key(), "openai/gpt-4.1-mini");
    selected
        .complete_json::<Summary>(&services.model_env(), &no_cap(), &task("x"), &())
        .unwrap();
    assert_eq!(
        openai.requests()[0].header("authorization"),
        Some("Bearer sk-openai-env")
    );

    let gemini_only = select_model_with_env(
        &app_with_keys(&["google/gemini-2.5-flash"]).model_env(),
        env_of(&[("GEMINI_API_KEY", "AIza-env")]),
    )
    .unwrap();
    assert_eq!(gemini_only.key(), "google/gemini-2.5-flash");
}

fn app_with_keys(keys: &[&str]) -> Arc<Services> {
    make_app(
        recording_host(&[]),
        json!({"modelKeys": keys, "useHostModels": false}),
    )
}

#[test]
fn no_available_model_is_unavailable_and_names_each_key() {
    let services = app_with_keys(&[
        "anthropic/claude-haiku-4-5",
        "openai/gpt-4.1-mini",
        "mystery/model-x",
    ]);
    let error = select_model_with_env(
        &services.model_env(),
        env_of(&[("UNRELATED", "sk-unrelated-0123456789abcdef")]),
    )
    .unwrap_err();
    let ModelError::Unavailable(message) = &error else {
        panic!("{error:?}")
    };
    assert!(
        message.contains("ANTHROPIC_API_KEY") && message.contains("OPENAI_API_KEY"),
        "{message}"
    );
    assert!(
        message.contains("mystery/model-x has an unknown provider"),
        "{message}"
    );
    assert!(!error.to_string().contains('\n'));
}

#[test]
fn built_in_local_endpoints_need_no_key() {
    let ollama = MockProvider::start(Wire::OpenAi);
    ollama.push(Reply::answer(VALID));
    let config = json!({
        "modelKeys": ["ollama/llama3.2"],
        "providers": {"ollama": {"baseUrl": ollama.base_url()}},
        "timeoutMs": TIMEOUT_MS,
        "useHostModels": false,
    });
    let services = make_app(recording_host(&[]), config);
    let selected = select_model_with_env(&services.model_env(), env_of(&[])).unwrap();
    selected
        .complete_json::<Summary>(&services.model_env(), &no_cap(), &task("x"), &())
        .unwrap();
    assert!(ollama.requests()[0].header("authorization").is_none());
    // Without any config it is known too (default http://localhost:11434/v1).
    assert!(select_model_with_env(
        &app_with_keys(&["ollama/llama3.2"]).model_env(),
        env_of(&[])
    )
    .is_ok());
}

#[test]
fn offline_model_first_stops_selection() {
    let services = app_with_keys(&["local/extractive", "openai/gpt-4.1-mini"]);
    let error = select_model_with_env(
        &services.model_env(),
        env_of(&[("OPENAI_API_KEY", "sk-openai-env")]),
    )
    .unwrap_err();
    assert!(matches!(error, ModelError::Unavailable(_)), "{error:?}");
}

#[test]
fn custom_api_key_env_and_keyless_local_endpoints() {
    let compatible = MockProvider::start(Wire::OpenAi);
    compatible.push(Reply::answer(VALID));
    let mut provider = compatible.provider_config();
    provider["noApiKey"] = json!(true);
    let config = json!({
        "modelKeys": ["vllm/qwen2.5-7b-instruct"],
        "providers": {"vllm": provider},
        "timeoutMs": TIMEOUT_MS,
        "useHostModels": false,
    });
    let services = make_app(recording_host(&[]), config);
    let selected = select_model_with_env(&services.model_env(), env_of(&[])).unwrap();
    let outcome = selected
        .complete_json::<Summary>(&services.model_env(), &no_cap(), &task("x"), &())
        .unwrap();
    assert_eq!(outcome.model, "vllm/qwen2.5-7b-instruct");
    assert_eq!(outcome.usage.cost_usd, Some(0.0));
    let req = &compatible.requests()[0];
    assert!(req.header("authorization").is_none());
    assert_eq!(
        req.json["max_tokens"], 500,
        "compatible servers get max_tokens"
    );
    assert_eq!(req.json["model"], "qwen2.5-7b-instruct");

    let router = MockProvider::start(Wire::OpenAi);
    router.push(Reply::answer(VALID));
    let mut provider = router.provider_config();
    provider["apiKeyEnv"] = json!("MY_ROUTER_KEY");
    let config = json!({
        "modelKeys": ["openrouter/anthropic/claude-haiku-4.5"],
        "providers": {"openrouter": provider},
        "timeoutMs": TIMEOUT_MS,
        "useHostModels": false,
    });
    let services = make_app(recording_host(&[]), config);
    assert!(select_model_with_env(
        &services.model_env(),
        env_of(&[("OPENROUTER_API_KEY", "sk-or-default")])
    )
    .is_err());
    let selected = select_model_with_env(
        &services.model_env(),
        env_of(&[("MY_ROUTER_KEY", "sk-or-custom")]),
    )
    .unwrap();
    selected
        .complete_json::<Summary>(&services.model_env(), &no_cap(), &task("x"), &())
        .unwrap();
    let req = &router.requests()[0];
    assert_eq!(req.header("authorization"), Some("Bearer sk-or-custom"));
    assert_eq!(req.json["model"], "anthropic/claude-haiku-4.5");
}

/// Issue 24: the cap holds whatever model the host picks. The hold is priced
/// at the most expensive model the host may answer with, and the host is told
/// that limit; when it may fall back to a model nobody here can price, it is
/// held to the room left under the cap.
#[test]
fn a_host_is_told_the_most_it_may_spend_under_the_cap() {
    let ledger = tempfile::tempdir().unwrap();
    let capped = spend::Budget {
        meta_dir: ledger.path(),
        kind: spend::Kind::Queries,
        cap: Some(1.0),
        session: None,
    };
    let ask = |fallback: &str| {
        let host = ServingHost::new(&[VALID]);
        let config = json!({
            "modelKeys": ["openai/gpt-4.1-nano", "anthropic/claude-haiku-4-5"],
            "modelFallback": fallback,
        });
        let services = make_app(host.clone(), config);
        let selected = select_model_with_env(&services.model_env(), env_of(&[])).unwrap();
        assert!(selected.is_host_served());
        selected
            .complete_json::<Summary>(&services.model_env(), &capped, &task("x"), &())
            .unwrap();
        host.requests()[0].clone()
    };
    let priced = ask("offline");
    // Every byte sent: the system prompt, the schema twice (as the output
    // format and in the prompt) with 128 bytes for the words around it, the
    // messages.
    let request_bytes = |request: &pi_ext_abi::protocol::CompletionRequest| {
        request.system.len()
            + 2 * request.json_schema.as_ref().unwrap().to_string().len()
            + 128
            + request
                .messages
                .iter()
                .map(|m| m.content.len())
                .sum::<usize>()
    };
    // Haiku (1 / 5 USD per million) is the dearer of the two keys.
    let haiku_worst = (request_bytes(&priced) as f64 * 1.0 + 500.0 * 5.0) / 1e6;
    let limit = priced
        .max_cost_usd
        .expect("a cap is set: the host gets a limit");
    assert!(
        (limit - haiku_worst).abs() < 1e-9,
        "{limit} vs {haiku_worst}"
    );

    // Spent so far: the host's reported 0.001.
    let room = ask("cheapest").max_cost_usd.unwrap();
    assert!((room - (1.0 - 0.001)).abs() < 1e-9, "{room}");
    let spent = spend::read(ledger.path()).unwrap();
    assert!(spent.reserved.is_empty(), "both holds settled");
    assert!((spent.today().total() - 0.002).abs() < 1e-9);
    let uncapped = ServingHost::new(&[VALID]);
    let services = make_app(
        uncapped.clone(),
        json!({"modelKeys": ["openai/gpt-4.1-nano"]}),
    );
    select_model_with_env(&services.model_env(), env_of(&[]))
        .unwrap()
        .complete_json::<Summary>(&services.model_env(), &no_cap(), &task("x"), &())
        .unwrap();
    assert_eq!(
        uncapped.requests()[0].max_cost_usd,
        None,
        "no cap, no limit"
    );
}

#[test]
fn host_served_models_come_first_and_get_the_schema() {
    let host = ServingHost::new(&["{\"name\": 1}", VALID]);
    let config = json!({"modelKeys": ["anthropic/claude-haiku-4-5"], "timeoutMs": 1234});
    let services = make_app(host.clone(), config);
    let selected = select_model_with_env(&services.model_env(), env_of(&[])).unwrap();
    assert!(selected.is_host_served());
    let outcome = selected
        .complete_json::<Summary>(
            &services.model_env(),
            &no_cap(),
            &task("password=hunter2 please"),
            &(),
        )
        .unwrap();
    assert_eq!(outcome.value, expected_summary());
    assert_eq!(outcome.attempts, 2);
    assert_eq!(
        outcome.usage,
        Usage {
            input_tokens: 20,
            output_tokens: 10,
            cost_usd: Some(0.002)
        }
    );
    let requests = host.requests();
    assert_eq!(
        requests[0].model.as_deref(),
        Some("anthropic/claude-haiku-4-5")
    );
    assert_eq!(
        requests[0].json_schema.as_ref().unwrap()["required"],
        json!(["name", "tags"])
    );
    assert_eq!(
        (requests[0].max_tokens, requests[0].timeout_ms),
        (500, 1234)
    );
    assert_eq!(
        requests[0].messages[0].content,
        "password=[REDACTED] please"
    );
    assert_eq!(requests[1].messages.len(), 3);

    // With host models turned off, the same host's keys feed our own providers.
    let services = app_with_keys(&["anthropic/claude-haiku-4-5"]);
    let selected = select_model_with_env(
        &services.model_env(),
        env_of(&[("ANTHROPIC_API_KEY", "sk-ant-x")]),
    )
    .unwrap();
    assert!(!selected.is_host_served());
}
