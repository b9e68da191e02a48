//! Which model serves a request, and how to reach it: `modelKeys` in order,
//! host-served when the host can complete, else our own provider when a key
//! (or `noApiKey`) makes it usable.

use crate::config::{ProviderConfig, ProviderKind};

use super::{ApiKey, Endpoint, ModelEnv, ModelError, Route, SelectedModel};

/// Provider name of the offline model; selection stops there (callers then use it).
pub const LOCAL_PROVIDER: &str = "local";

/// Providers this crate knows without any config: name, wire format, base
/// URL and the environment variable of the key (`None`: a local endpoint
/// that needs no key).
const BUILT_INS: &[(&str, ProviderKind, &str, Option<&str>)] = &[
    (
        "openai",
        ProviderKind::Openai,
        "https://api.openai.com/v1",
        Some("OPENAI_API_KEY"),
    ),
    (
        "anthropic",
        ProviderKind::Anthropic,
        "https://api.anthropic.com/v1",
        Some("ANTHROPIC_API_KEY"),
    ),
    (
        "google",
        ProviderKind::Google,
        "https://generativelanguage.googleapis.com/v1beta",
        Some("GEMINI_API_KEY"),
    ),
    (
        "openrouter",
        ProviderKind::Openai,
        "https://openrouter.ai/api/v1",
        Some("OPENROUTER_API_KEY"),
    ),
    (
        "ollama",
        ProviderKind::Openai,
        "http://localhost:11434/v1",
        None,
    ),
    (
        "lmstudio",
        ProviderKind::Openai,
        "http://localhost:1234/v1",
        None,
    ),
];

/// The first available model of `config.model_keys`, reading API keys from
/// the host and then from the process environment.
pub fn select_model(env: &ModelEnv) -> Result<SelectedModel, ModelError> {
    select_model_with_env(env, |name| std::env::var(name).ok())
}

/// [`select_model`] with an explicit environment lookup (tests use a map, so
/// they never mutate the process environment).
pub fn select_model_with_env(
    model_env: &ModelEnv,
    env: impl Fn(&str) -> Option<String>,
) -> Result<SelectedModel, ModelError> {
    let config = model_env.config;
    let host_serves = config.use_host_models && model_env.host.is_some_and(|h| h.can_complete());
    let mut skipped = Vec::new();
    for key in &config.model_keys {
        let Some((provider, model)) = key.split_once('/') else {
            skipped.push(format!("{key} is not provider/model"));
            continue;
        };
        if provider == LOCAL_PROVIDER {
            skipped.push(format!("{key} is the offline model"));
            break;
        }
        if host_serves {
            return Ok(SelectedModel {
                key: key.clone(),
                route: Route::Host,
            });
        }
        match endpoint(model_env, provider, model, &env) {
            Ok(endpoint) => {
                return Ok(SelectedModel {
                    key: key.clone(),
                    route: Route::Provider(endpoint),
                })
            }
            Err(reason) => skipped.push(format!("{key} {reason}")),
        }
    }
    Err(ModelError::Unavailable(if skipped.is_empty() {
        "modelKeys is empty".to_string()
    } else {
        format!("none of modelKeys is usable: {}", skipped.join("; "))
    }))
}

fn endpoint(
    model_env: &ModelEnv,
    provider: &str,
    model: &str,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<Endpoint, String> {
    let configured: Option<&ProviderConfig> = model_env.config.providers.get(provider);
    let built_in = BUILT_INS.iter().find(|(name, ..)| *name == provider);
    if configured.is_none() && built_in.is_none() {
        return Err("has an unknown provider (define it under providers with a baseUrl)".into());
    }
    let kind = configured
        .and_then(|c| c.kind)
        .or(built_in.map(|&(_, kind, ..)| kind))
        .unwrap_or(ProviderKind::Openai);
    let base_url = configured
        .and_then(|c| c.base_url.clone())
        .or(built_in.map(|(_, _, url, _)| url.to_string()))
        .ok_or_else(|| "has no baseUrl".to_string())?;
    // Built-in local endpoints stay keyless when only their baseUrl is overridden.
    let no_key = configured.is_some_and(|c| c.no_api_key)
        || (built_in.is_some_and(|(.., env)| env.is_none())
            && configured.and_then(|c| c.api_key_env.as_ref()).is_none());
    let api_key = if no_key {
        None
    } else {
        let env_name = configured
            .and_then(|c| c.api_key_env.clone())
            .or(built_in.and_then(|(.., env)| env.map(str::to_string)))
            .unwrap_or_else(|| default_env_name(provider));
        let key = non_empty(model_env.host.and_then(|h| h.api_key(provider)))
            .or_else(|| non_empty(env(&env_name)))
            .ok_or_else(|| format!("has no API key (set ${env_name})"))?;
        Some(ApiKey(key))
    };
    Ok(Endpoint {
        provider: provider.to_string(),
        model: model.to_string(),
        kind,
        base_url: base_url.trim_end_matches('/').to_string(),
        api_key,
    })
}

/// `my-llm` → `MY_LLM_API_KEY`.
fn default_env_name(provider: &str) -> String {
    let stem: String = provider
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect();
    format!("{stem}_API_KEY")
}

fn non_empty(value: Option<String>) -> Option<String> {
    value
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_env_names() {
        assert_eq!(default_env_name("groq"), "GROQ_API_KEY");
        assert_eq!(default_env_name("my-llm.v2"), "MY_LLM_V2_API_KEY");
    }
}
