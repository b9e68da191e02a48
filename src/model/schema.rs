//! Provider-specific copies of a task's JSON schema.
//!
//! Native structured-output modes accept different subsets of JSON Schema and
//! reject requests that use other keywords (OpenAI strict mode refuses
//! `maxLength`; Anthropic refuses numeric and length bounds). The constraints
//! dropped here are still enforced by garde on our side and reported back to
//! the model on a retry, so trimming loses no safety.

use serde_json::{Map, Value};

/// Keywords whose values are maps of sub-schemas (the keys are property names, not keywords).
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "$defs", "definitions"];
/// Keywords whose value is one sub-schema.
const SCHEMA_ONE: &[&str] = &[
    "items",
    "additionalProperties",
    "not",
    "contains",
    "if",
    "then",
    "else",
];
/// Keywords whose value is a list of sub-schemas.
const SCHEMA_LISTS: &[&str] = &["anyOf", "oneOf", "allOf", "prefixItems"];

/// OpenAI `response_format.json_schema`: the schema and whether `strict`
/// mode can be used (every object closed and every property required).
pub(super) fn for_openai(schema: &Value) -> (Value, bool) {
    let mut schema = schema.clone();
    let mut strict = true;
    walk(&mut schema, &mut |node| {
        strip(
            node,
            &[
                "$schema",
                "minLength",
                "maxLength",
                "minProperties",
                "maxProperties",
            ],
        );
        if is_object(node) {
            let closed = node.get("additionalProperties") == Some(&Value::Bool(false));
            let required: Vec<&Value> = node
                .get("required")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .collect();
            let props = node
                .get("properties")
                .and_then(Value::as_object)
                .into_iter()
                .flatten();
            strict &= closed
                && props
                    .into_iter()
                    .all(|(p, _)| required.contains(&&Value::String(p.clone())));
        }
    });
    (schema, strict)
}

fn is_object(node: &Map<String, Value>) -> bool {
    node.get("type").and_then(Value::as_str) == Some("object") || node.contains_key("properties")
}

/// Anthropic `output_config.format.schema`: no numeric or length bounds,
/// `minItems` only 0 or 1, and every object closed.
pub(super) fn for_anthropic(schema: &Value) -> Value {
    let mut schema = schema.clone();
    walk(&mut schema, &mut |node| {
        strip(
            node,
            &[
                "$schema",
                "minimum",
                "maximum",
                "exclusiveMinimum",
                "exclusiveMaximum",
                "multipleOf",
                "minLength",
                "maxLength",
                "maxItems",
                "minProperties",
                "maxProperties",
            ],
        );
        if node
            .get("minItems")
            .and_then(Value::as_u64)
            .is_some_and(|n| n > 1)
        {
            node.remove("minItems");
        }
        if is_object(node) && !node.contains_key("additionalProperties") {
            node.insert("additionalProperties".into(), Value::Bool(false));
        }
    });
    schema
}

/// Gemini `generationConfig.responseJsonSchema`: JSON Schema minus the
/// keywords it does not document (`$schema`, string length bounds).
pub(super) fn for_gemini(schema: &Value) -> Value {
    let mut schema = schema.clone();
    walk(&mut schema, &mut |node| {
        strip(node, &["$schema", "minLength", "maxLength", "pattern"])
    });
    schema
}

fn strip(node: &mut Map<String, Value>, keys: &[&str]) {
    for key in keys {
        node.remove(*key);
    }
}

/// Apply `f` to every schema object in `schema`, parents first.
fn walk(schema: &mut Value, f: &mut impl FnMut(&mut Map<String, Value>)) {
    let Value::Object(node) = schema else { return };
    f(node);
    for (key, child) in node.iter_mut() {
        let key = key.as_str();
        if SCHEMA_MAPS.contains(&key) {
            if let Value::Object(map) = child {
                map.values_mut().for_each(|sub| walk(sub, f));
            }
        } else if SCHEMA_ONE.contains(&key) {
            walk(child, f);
        } else if SCHEMA_LISTS.contains(&key) {
            if let Value::Array(list) = child {
                list.iter_mut().for_each(|sub| walk(sub, f));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sample() -> Value {
        json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "required": ["name", "tags"],
            "properties": {
                // A property literally named like a keyword must survive.
                "name": {"type": "string", "maxLength": 120},
                "tags": {"type": "array", "minItems": 3, "maxItems": 12, "items": {"type": "string", "maxLength": 80}},
            }
        })
    }

    #[test]
    fn openai_strict_only_when_closed_and_required() {
        let (schema, strict) = for_openai(&sample());
        assert!(strict);
        assert!(schema.get("$schema").is_none());
        assert!(schema["properties"]["name"].get("maxLength").is_none());
        assert_eq!(schema["properties"]["tags"]["minItems"], 3);
        let mut open = sample();
        open["required"] = json!(["name"]);
        assert!(!for_openai(&open).1);
    }

    #[test]
    fn anthropic_drops_bounds_and_closes_objects() {
        let mut input = sample();
        input["properties"]["meta"] = json!({"type": "object", "properties": {"maxLength": {"type": "integer", "minimum": 0}}});
        let schema = for_anthropic(&input);
        assert!(schema["properties"]["tags"].get("minItems").is_none());
        assert!(schema["properties"]["tags"].get("maxItems").is_none());
        assert_eq!(schema["properties"]["meta"]["additionalProperties"], false);
        let kept = &schema["properties"]["meta"]["properties"]["maxLength"];
        assert_eq!(kept, &json!({"type": "integer"}));
    }

    #[test]
    fn gemini_keeps_item_bounds() {
        let schema = for_gemini(&sample());
        assert_eq!(schema["properties"]["tags"]["maxItems"], 12);
        assert!(schema["properties"]["tags"]["items"]
            .get("maxLength")
            .is_none());
    }
}
