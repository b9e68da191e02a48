//! The README's configuration table is the user's only reference for
//! `session-index.config.json`: it must list exactly the keys of `Config`
//! (nested keys as `indexing.auto`, map entries as `providers.<name>.baseUrl`),
//! with the type and the default the code has. A failure lists every missing
//! or extra key and every wrong type or default, so the table can be fixed in
//! one go.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{json, Value};
use session_index::config::Config;

/// `key → (type, default)` from the README table under `## Configuration`.
fn readme_rows() -> BTreeMap<String, (String, String)> {
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme
        .split("\n## Configuration")
        .nth(1)
        .expect("a ## Configuration section");
    let section = section.split("\n## ").next().unwrap_or_default();
    let mut rows = BTreeMap::new();
    for line in section.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(
            cells.len(),
            4,
            "a row is | key | type | default | meaning |: {line}"
        );
        let key = cells[0].trim_matches('`').to_string();
        assert!(
            rows.insert(key.clone(), (cells[1].to_string(), cells[2].to_string()))
                .is_none(),
            "{key} twice"
        );
    }
    rows
}

/// Every leaf key of a config document, dotted, with its value.
fn leaves(prefix: &str, value: &Value, out: &mut BTreeMap<String, Value>) {
    match value {
        Value::Object(map) if !map.is_empty() => {
            for (k, v) in map {
                leaves(
                    &if prefix.is_empty() {
                        k.clone()
                    } else {
                        format!("{prefix}.{k}")
                    },
                    v,
                    out,
                );
            }
        }
        _ => {
            out.insert(prefix.to_string(), value.clone());
        }
    }
}

fn type_fits(ty: &str, value: &Value) -> bool {
    if let Some(ty) = ty.strip_suffix(" or null") {
        return value.is_null() || type_fits(ty, value);
    }
    match ty {
        "string" => value.is_string(),
        "integer" => value.is_u64() || value.is_i64(),
        "number" => value.is_number(),
        "boolean" => value.is_boolean(),
        t if t.starts_with("array") => value.is_array(),
        _ => false,
    }
}

#[test]
fn readme_config_table_matches_the_config_struct() {
    // The defaults, plus one entry in each map, named as the README names them.
    let mut doc = serde_json::to_value(Config::default()).unwrap();
    let entries = json!({
        "providers": { "<name>": {} },
        "prices": { "<provider/model>": { "inputPerMtok": 0.0, "outputPerMtok": 0.0 } },
    });
    let sample: Config = serde_json::from_value(entries.clone()).unwrap();
    let sample = serde_json::to_value(sample).unwrap();
    for map in ["providers", "prices"] {
        doc[map] = sample[map].clone();
    }
    let mut code = BTreeMap::new();
    leaves("", &doc, &mut code);
    let readme = readme_rows();

    let missing: Vec<&String> = code.keys().filter(|k| !readme.contains_key(*k)).collect();
    let extra: Vec<&String> = readme.keys().filter(|k| !code.contains_key(*k)).collect();
    let mut wrong = Vec::new();
    for (key, (ty, default)) in &readme {
        let Some(value) = code.get(key).filter(|_| !key.contains('<')) else {
            continue;
        };
        if !type_fits(ty, value) {
            wrong.push(format!("{key}: type {ty:?} but the default is {value}"));
        }
        let documented = default.strip_prefix('`').and_then(|d| d.strip_suffix('`'));
        match documented.map(serde_json::from_str::<Value>) {
            Some(Ok(d)) if d == *value => {}
            _ => wrong.push(format!(
                "{key}: default {default} but the code has `{value}`"
            )),
        }
    }
    assert!(
        missing.is_empty() && extra.is_empty() && wrong.is_empty(),
        "README.md's config table is out of date:\n  missing keys (in Config, not in the table): {missing:?}\n  \
         extra keys (in the table, not in Config): {extra:?}\n  wrong rows: {wrong:#?}"
    );
}
