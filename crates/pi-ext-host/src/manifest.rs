//! `plugin.toml`: what a plugin declares about itself before anything is loaded.
//!
//! Errors name the file and, when TOML can tell, the line and column, so a
//! user can fix the file without guessing.

use std::fmt;
use std::path::{Path, PathBuf};

use pi_ext_abi::protocol::{Registrations, EVENTS};
use serde::{Deserialize, Serialize, Serializer};
use toml::Spanned;

use crate::error::{one_line, HostError};

/// File name looked up when `--plugin` names a directory.
pub const MANIFEST_FILE: &str = "plugin.toml";

/// `MAJOR.MINOR` of the pi-ext-abi interface a plugin declares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AbiVersion {
    pub major: u32,
    pub minor: u32,
}

impl fmt::Display for AbiVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

impl Serialize for AbiVersion {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl AbiVersion {
    fn parse(text: &str) -> Option<AbiVersion> {
        let (major, minor) = text.split_once('.')?;
        let digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if !digits(major) || !digits(minor) {
            return None;
        }
        Some(AbiVersion {
            major: major.parse().ok()?,
            minor: minor.parse().ok()?,
        })
    }
}

/// A parsed and checked `plugin.toml`.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// The manifest file itself.
    pub path: PathBuf,
    /// Its directory: the plugin directory handed to the plugin.
    pub dir: PathBuf,
    pub name: String,
    pub version: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub abi: AbiVersion,
    /// File stem of the library (`session_index` → `libsession_index.so`).
    pub library: String,
    /// The default config file, resolved against `dir`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub config: Option<PathBuf>,
    pub events: Vec<String>,
    pub commands: Vec<String>,
    pub tools: Vec<String>,
}

#[derive(Deserialize)]
struct RawFile {
    plugin: Option<Spanned<RawPlugin>>,
}

// Unknown keys are allowed so later manifest versions stay readable.
#[derive(Deserialize)]
struct RawPlugin {
    name: Option<Spanned<String>>,
    version: Option<Spanned<String>>,
    description: Option<String>,
    abi: Option<Spanned<String>>,
    library: Option<Spanned<String>>,
    config: Option<Spanned<String>>,
    #[serde(default)]
    events: Vec<Spanned<String>>,
    #[serde(default)]
    commands: Vec<Spanned<String>>,
    #[serde(default)]
    tools: Vec<Spanned<String>>,
}

/// Turns byte offsets into `file:line:col` prefixes.
struct Locator<'a> {
    file: String,
    text: &'a str,
}

impl Locator<'_> {
    fn at(&self, offset: usize) -> String {
        let offset = offset.min(self.text.len());
        let before = self.text.get(..offset).unwrap_or(self.text);
        let line = before.matches('\n').count() + 1;
        let col = before
            .rsplit('\n')
            .next()
            .map(|l| l.chars().count())
            .unwrap_or(0)
            + 1;
        format!("{}:{line}:{col}", self.file)
    }

    fn error<T>(&self, offset: usize, message: impl fmt::Display) -> Result<T, HostError> {
        Err(HostError::Manifest(format!(
            "{}: {message}",
            self.at(offset)
        )))
    }

    fn require(
        &self,
        value: Option<Spanned<String>>,
        key: &str,
    ) -> Result<Spanned<String>, HostError> {
        match value {
            Some(v) if v.get_ref().trim().is_empty() => {
                self.error(v.span().start, format!("plugin.{key} is empty"))
            }
            Some(v) => Ok(v),
            None => Err(HostError::Manifest(format!(
                "{}: missing key plugin.{key}",
                self.file
            ))),
        }
    }
}

impl Manifest {
    /// Load `plugin.toml` from a directory or a file path (see [`Manifest::parse`]).
    pub fn load(path: impl AsRef<Path>) -> Result<Manifest, HostError> {
        let path = path.as_ref();
        // A path that does not exist and is not a .toml file is taken as a directory, so the
        // message names the plugin.toml that was expected there.
        let names_dir =
            path.is_dir() || (!path.exists() && path.extension().is_none_or(|e| e != "toml"));
        let file = if names_dir {
            path.join(MANIFEST_FILE)
        } else {
            path.to_path_buf()
        };
        // Absolute, so messages and the plugin directory handed to the plugin do not depend on the cwd.
        let file = std::path::absolute(&file).unwrap_or(file);
        let text = read_text(&file).map_err(|what| {
            HostError::Manifest(format!("{}: plugin manifest {what}", file.display()))
        })?;
        Manifest::parse(&file, &text)
    }

    /// Parse manifest text, refusing another major version of pi-ext-abi;
    /// `file` is used for messages and to resolve relative paths.
    pub fn parse(file: &Path, text: &str) -> Result<Manifest, HostError> {
        let loc = Locator {
            file: file.display().to_string(),
            text,
        };
        let raw: RawFile = match toml::from_str(text) {
            Ok(raw) => raw,
            Err(e) => {
                let message = one_line(e.message());
                return match e.span() {
                    Some(span) => loc.error(span.start, format!("invalid TOML: {message}")),
                    None => Err(HostError::Manifest(format!(
                        "{}: invalid TOML: {message}",
                        loc.file
                    ))),
                };
            }
        };
        let Some(plugin) = raw.plugin else {
            return Err(HostError::Manifest(format!(
                "{}: missing table [plugin]",
                loc.file
            )));
        };
        let plugin = plugin.into_inner();

        let name = loc.require(plugin.name, "name")?.into_inner();
        let version = loc.require(plugin.version, "version")?.into_inner();
        let abi_text = loc.require(plugin.abi, "abi")?;
        let Some(abi) = AbiVersion::parse(abi_text.get_ref()) else {
            return loc.error(
                abi_text.span().start,
                format!(
                    "plugin.abi must be \"MAJOR.MINOR\" (e.g. \"1.0\"), got \"{}\"",
                    abi_text.get_ref()
                ),
            );
        };
        if abi.major != pi_ext_abi::ABI_MAJOR {
            // Refused before anything is loaded: the library would not fit.
            let (host, plugin) = (pi_ext_abi::ABI_VERSION.to_string(), abi.to_string());
            let location = format!("{} (plugin.abi)", loc.at(abi_text.span().start));
            return Err(HostError::AbiMismatch {
                location,
                host,
                plugin,
                how: "declares",
            });
        }
        let library = loc.require(plugin.library, "library")?;
        if library.get_ref().contains(['/', '\\']) {
            return loc.error(
                library.span().start,
                "plugin.library is a file stem, not a path (e.g. \"my_plugin\")",
            );
        }

        let dir = file.parent().map(Path::to_path_buf).unwrap_or_default();
        let dir = if dir.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            dir
        };
        let config = match plugin.config {
            Some(c) if c.get_ref().trim().is_empty() => {
                return loc.error(c.span().start, "plugin.config is empty")
            }
            Some(c) => Some(dir.join(c.get_ref())),
            None => None,
        };

        let mut events = Vec::new();
        for event in plugin.events {
            if !EVENTS.contains(&event.get_ref().as_str()) {
                return loc.error(
                    event.span().start,
                    format!(
                        "unknown event '{}' in plugin.events (known: {})",
                        event.get_ref(),
                        EVENTS.join(", ")
                    ),
                );
            }
            events.push(event.into_inner());
        }
        let names = |list: Vec<Spanned<String>>, key: &str| -> Result<Vec<String>, HostError> {
            list.into_iter()
                .map(|n| {
                    if n.get_ref().trim().is_empty() {
                        loc.error(n.span().start, format!("empty name in plugin.{key}"))
                    } else {
                        Ok(n.into_inner())
                    }
                })
                .collect()
        };
        let commands = names(plugin.commands, "commands")?;
        let tools = names(plugin.tools, "tools")?;

        Ok(Manifest {
            path: file.to_path_buf(),
            dir,
            name,
            version,
            description: plugin.description,
            abi,
            library: library.into_inner(),
            config,
            events,
            commands,
            tools,
        })
    }

    /// Differences between what this manifest declares and what the plugin
    /// registered (one message each); a host may show them as warnings.
    pub fn registration_mismatches(&self, registered: &Registrations) -> Vec<String> {
        let mut problems = Vec::new();
        let mut compare = |kind: &str, declared: &[String], registered: Vec<&str>| {
            for name in declared
                .iter()
                .filter(|d| !registered.contains(&d.as_str()))
            {
                problems.push(format!(
                    "{kind} '{name}' is declared in plugin.toml but not registered"
                ));
            }
            for name in registered
                .iter()
                .filter(|r| !declared.iter().any(|d| d == *r))
            {
                problems.push(format!(
                    "{kind} '{name}' is registered but not declared in plugin.toml"
                ));
            }
        };
        compare(
            "event",
            &self.events,
            registered.events.iter().map(String::as_str).collect(),
        );
        compare(
            "command",
            &self.commands,
            registered
                .commands
                .iter()
                .map(|c| c.name.as_str())
                .collect(),
        );
        compare(
            "tool",
            &self.tools,
            registered.tools.iter().map(|t| t.name.as_str()).collect(),
        );
        problems
    }

    /// The config document to hand the plugin: the text of `override_path`
    /// if given, else of the manifest's config file, else `null`. A file that
    /// cannot be read (missing, not a regular file, not UTF-8) or does not
    /// hold a JSON object never stops the host: the plugin gets a JSON string
    /// naming the file and the problem (see `pi_ext_abi::PluginMod::instantiate`),
    /// so it starts with the features that need its config off and says why.
    pub fn config_json(&self, override_path: Option<&Path>) -> String {
        let (path, source) = match (override_path, &self.config) {
            (Some(p), _) => (p.to_path_buf(), "--config"),
            (None, Some(p)) => (p.clone(), "plugin.config"),
            (None, None) => return "null".to_string(),
        };
        let problem = match read_text(&path) {
            Ok(text) => match serde_json::from_str::<serde_json::Value>(&text) {
                Ok(serde_json::Value::Object(_)) => return text,
                Ok(other) => format!(
                    "holds {}, not a JSON object",
                    crate::instance::json_kind(&other)
                ),
                Err(_) if text.trim().is_empty() => "is empty, not a JSON object".to_string(),
                Err(e) => format!("is not JSON: {e}"),
            },
            Err(e) => e,
        };
        let message = format!("{}: config file ({source}) {problem}", path.display());
        eprintln!("pi-ext-host: warning: {message}; the plugin runs without it");
        serde_json::Value::String(message).to_string()
    }

    /// Print the problems the plugin found in the config object it was handed
    /// (`Registrations::config_problems`), naming the file: the plugin saw only
    /// its text. Faults of the file itself were named by [`Manifest::config_json`].
    pub fn warn_config_problems(
        &self,
        override_path: Option<&Path>,
        registrations: &Registrations,
    ) {
        let Some(file) = override_path
            .map(Path::to_path_buf)
            .or_else(|| self.config.clone())
        else {
            return;
        };
        let named = |p: &&String| p.starts_with(&*file.to_string_lossy());
        for problem in registrations.config_problems.iter().filter(|p| !named(p)) {
            eprintln!("pi-ext-host: warning: {}: {problem}", file.display());
        }
    }
}

/// A whole regular UTF-8 file, without ever blocking on a FIFO; the error
/// says what is wrong ("not found", "is a directory, not a regular file").
fn read_text(path: &Path) -> Result<String, String> {
    let bytes = regular_files::read_regular(path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => "not found".to_string(),
        _ => one_line(&e.to_string()),
    })?;
    String::from_utf8(bytes).map_err(|e| {
        format!(
            "is not UTF-8 (invalid byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<Manifest, HostError> {
        Manifest::parse(Path::new("/p/plugin.toml"), text)
    }

    const GOOD: &str = "[plugin]\nname = \"x\"\nversion = \"0.1.0\"\nabi = \"1.0\"\nlibrary = \"x\"\nconfig = \"c.json\"\nevents = [\"agent_end\"]\ncommands = [\"go\"]\ntools = [\"t\"]\n";

    #[test]
    fn parses_a_complete_manifest() {
        let m = parse(GOOD).unwrap();
        assert_eq!(m.name, "x");
        assert_eq!(m.abi, AbiVersion { major: 1, minor: 0 });
        assert_eq!(m.config, Some(PathBuf::from("/p/c.json")));
        assert_eq!(m.events, vec!["agent_end"]);
        assert_eq!(m.commands, vec!["go"]);
        assert_eq!(m.tools, vec!["t"]);
    }

    #[test]
    fn syntax_errors_name_file_line_and_column() {
        let err = parse("[plugin]\nname = \"x\"\nversion = 0.1.0\n")
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("/p/plugin.toml:3:"), "{err}");
        assert!(!err.contains('\n'));
    }

    #[test]
    fn type_errors_point_at_the_value() {
        let err = parse("[plugin]\nname = 5\n").unwrap_err().to_string();
        assert!(err.starts_with("/p/plugin.toml:2:8:"), "{err}");
    }

    #[test]
    fn missing_keys_are_named() {
        let err = parse("[plugin]\nname = \"x\"\nversion = \"1\"\nlibrary = \"x\"\n")
            .unwrap_err()
            .to_string();
        assert_eq!(err, "/p/plugin.toml: missing key plugin.abi");
        assert_eq!(
            parse("").unwrap_err().to_string(),
            "/p/plugin.toml: missing table [plugin]"
        );
    }

    #[test]
    fn bad_abi_and_unknown_events_are_refused() {
        let err = parse(&GOOD.replace("\"1.0\"", "\"one\""))
            .unwrap_err()
            .to_string();
        assert!(err.contains("plugin.toml:4:7: plugin.abi must be"), "{err}");
        let err = parse(&GOOD.replace("agent_end", "agent_ended"))
            .unwrap_err()
            .to_string();
        assert!(err.contains(":7:11: unknown event 'agent_ended'"), "{err}");
    }

    #[test]
    fn registration_mismatches_are_listed_both_ways() {
        let m = parse(GOOD).unwrap();
        let regs: Registrations = serde_json::from_value(serde_json::json!({
            "events": ["agent_end", "input"],
            "commands": [{"name": "go", "description": ""}],
            "tools": []
        }))
        .unwrap();
        assert_eq!(
            m.registration_mismatches(&regs),
            vec![
                "event 'input' is registered but not declared in plugin.toml",
                "tool 't' is declared in plugin.toml but not registered",
            ]
        );
    }

    #[test]
    fn another_abi_major_is_refused_naming_both_versions() {
        let text = GOOD.replace("\"1.0\"", "\"2.0\"");
        let err = parse(&text).unwrap_err().to_string();
        assert!(err.contains("/p/plugin.toml:4:7 (plugin.abi)"), "{err}");
        assert!(
            err.contains(&format!("pi-ext-abi {}", pi_ext_abi::ABI_VERSION)),
            "{err}"
        );
        assert!(err.contains("pi-ext-abi 2.0"), "{err}");
    }
}
