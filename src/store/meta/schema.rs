//! The meta file document.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

pub const SCHEMA_VERSION: u32 = 1;

/// `<id>.meta.json`. Fields of schemaVersion 1 first, then additive ones.
/// Unknown fields written by other tools are kept in `extra` and written back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMeta {
    pub schema_version: u32,
    pub session_id: String,
    pub session_file: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parent_session_file: Option<String>,
    pub name: String,
    pub description: String,
    pub summary: String,
    #[serde(default)]
    pub tags: Vec<String>,
    #[serde(default)]
    pub cwd: String,
    /// ISO timestamp of the first index; kept across re-indexing.
    pub created_at: String,
    pub updated_at: String,
    /// `provider/id` of the model that wrote it (`local/extractive` offline).
    #[serde(default)]
    pub model: String,
    /// Why that model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model_choice: Option<ModelChoice>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_indexed_leaf_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub usage: Option<MetaUsage>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<MetaFiles>,
    /// Decisions stated in the session (additive).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub decisions: Vec<String>,
    /// Work still open at the last index (additive).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub open_tasks: Vec<String>,
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// Why a model wrote a meta (`modelChoice`). Written as its name; a name
/// this version does not know (a newer writer's) is kept as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(from = "String", into = "String")]
pub enum ModelChoice {
    /// A `modelKeys` entry.
    Configured,
    /// The cheapest capable model in pi's registry.
    Cheapest,
    /// The session's own model, as a last resort.
    Session,
    /// The offline extractive model.
    Offline,
    Other(String),
}

impl ModelChoice {
    /// What it means, for people.
    pub fn label(&self) -> &'static str {
        match self {
            ModelChoice::Configured => "configured key",
            ModelChoice::Cheapest => "cheapest in pi's registry",
            ModelChoice::Session => "fallback: the session's model",
            ModelChoice::Offline => "offline model",
            ModelChoice::Other(_) => "",
        }
    }
}

impl From<String> for ModelChoice {
    fn from(name: String) -> ModelChoice {
        match name.as_str() {
            "configured" => ModelChoice::Configured,
            "cheapest" => ModelChoice::Cheapest,
            "session" => ModelChoice::Session,
            "offline" => ModelChoice::Offline,
            _ => ModelChoice::Other(name),
        }
    }
}

impl From<ModelChoice> for String {
    fn from(choice: ModelChoice) -> String {
        match choice {
            ModelChoice::Configured => "configured".into(),
            ModelChoice::Cheapest => "cheapest".into(),
            ModelChoice::Session => "session".into(),
            ModelChoice::Offline => "offline".into(),
            ModelChoice::Other(name) => name,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct MetaUsage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cost_usd: f64,
}

/// `files`: what the session read and modified, as the views compute it.
pub type MetaFiles = crate::session::views::FilesTouched;

impl SessionMeta {
    /// Whether a model wrote it (not the offline model, `local/…`, and not an
    /// unknown writer that left `model` empty): what it holds was paid for.
    pub fn written_by_model(&self) -> bool {
        let provider = self.model.split('/').next().unwrap_or_default();
        !provider.is_empty() && provider != crate::model::LOCAL_PROVIDER
    }

    /// Whether the offline model wrote it.
    pub fn written_offline(&self) -> bool {
        self.model.split('/').next() == Some(crate::model::LOCAL_PROVIDER)
    }

    /// Structural checks beyond serde: a meta file failing them is treated as
    /// corrupt. A newer schemaVersion passes (the store never writes over it).
    pub fn check(&self) -> Result<(), String> {
        if self.schema_version < SCHEMA_VERSION {
            return Err(format!("unsupported schemaVersion {}", self.schema_version));
        }
        if self.session_id.trim().is_empty() {
            return Err("empty sessionId".into());
        }
        Ok(())
    }
}
