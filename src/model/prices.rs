//! USD cost of a completion from its token usage.
//!
//! Config `prices` (keyed `provider/model`) override a small built-in table of
//! current cheap models. Dated or `-latest` variants of a listed model
//! (`claude-haiku-4-5-20251001`) share its price.

use crate::config::{Config, Price};

/// `(provider/model, input USD per million tokens, output USD per million tokens)`.
const BUILT_IN: &[(&str, f64, f64)] = &[
    ("anthropic/claude-haiku-4-5", 1.00, 5.00),
    ("anthropic/claude-3-5-haiku", 0.80, 4.00),
    ("anthropic/claude-3-haiku", 0.25, 1.25),
    ("anthropic/claude-sonnet-4-5", 3.00, 15.00),
    ("openai/gpt-4.1-mini", 0.40, 1.60),
    ("openai/gpt-4.1-nano", 0.10, 0.40),
    ("openai/gpt-4o-mini", 0.15, 0.60),
    ("openai/gpt-5-mini", 0.25, 2.00),
    ("openai/gpt-5-nano", 0.05, 0.40),
    ("google/gemini-2.5-flash", 0.30, 2.50),
    ("google/gemini-2.5-flash-lite", 0.10, 0.40),
    ("google/gemini-2.0-flash", 0.10, 0.40),
    ("google/gemini-2.0-flash-lite", 0.075, 0.30),
];

/// The price of `key`: config first, then the built-in table.
pub fn price_for(config: &Config, key: &str) -> Option<Price> {
    if let Some(price) = config.prices.get(key) {
        return Some(price.clone());
    }
    if let Some((_, price)) = config
        .prices
        .iter()
        .filter(|(k, _)| is_variant(key, k))
        .max_by_key(|(k, _)| k.len())
    {
        return Some(price.clone());
    }
    BUILT_IN
        .iter()
        .filter(|(k, _, _)| *k == key || is_variant(key, k))
        .max_by_key(|(k, _, _)| k.len())
        .map(|(_, input, output)| Price {
            input_per_mtok: *input,
            output_per_mtok: *output,
        })
}

/// USD cost of `input`/`output` tokens on `key`; 0 (and a debug log) when
/// the price is unknown.
pub fn cost_usd(config: &Config, key: &str, input: u64, output: u64) -> f64 {
    match price_for(config, key) {
        Some(price) => {
            (input as f64 * price.input_per_mtok + output as f64 * price.output_per_mtok)
                / 1_000_000.0
        }
        None => {
            tracing::debug!(
                model = key,
                "no price known for this model; reporting cost 0 (set config prices)"
            );
            0.0
        }
    }
}

/// `base-20251001`, `base-2024-07-18` and `base-latest` are variants of `base`;
/// `base-mini` is a different model.
fn is_variant(key: &str, base: &str) -> bool {
    key.strip_prefix(base)
        .and_then(|rest| rest.strip_prefix('-'))
        .is_some_and(|rest| rest == "latest" || rest.starts_with(|c: char| c.is_ascii_digit()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn built_in_and_variants() {
        let config = Config::default();
        let haiku = price_for(&config, "anthropic/claude-haiku-4-5-20251001").unwrap();
        assert_eq!(haiku.input_per_mtok, 1.0);
        assert_eq!(
            price_for(&config, "openai/gpt-4o-mini-2024-07-18")
                .unwrap()
                .output_per_mtok,
            0.60
        );
        assert!(price_for(&config, "openai/gpt-4.1-mini-high").is_none());
        assert!(price_for(&config, "ollama/llama3.2").is_none());
        let cost = cost_usd(&config, "openai/gpt-4.1-mini", 1_000_000, 500_000);
        assert!((cost - 1.2).abs() < 1e-9, "{cost}");
        assert_eq!(cost_usd(&config, "ollama/llama3.2", 1000, 1000), 0.0);
    }

    #[test]
    fn config_overrides_built_in() {
        let mut config = Config::default();
        config.prices.insert(
            "openai/gpt-4.1-mini".into(),
            Price {
                input_per_mtok: 2.0,
                output_per_mtok: 4.0,
            },
        );
        config.prices.insert(
            "ollama/llama3.2".into(),
            Price {
                input_per_mtok: 0.0,
                output_per_mtok: 0.0,
            },
        );
        assert_eq!(
            price_for(&config, "openai/gpt-4.1-mini")
                .unwrap()
                .input_per_mtok,
            2.0
        );
        assert!(price_for(&config, "ollama/llama3.2").is_some());
        let cost = cost_usd(&config, "openai/gpt-4.1-mini", 1_000, 1_000);
        assert!((cost - 0.006).abs() < 1e-12, "{cost}");
    }
}
