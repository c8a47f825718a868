//! # mcp::schema
//!
//! Owns how an MCP server's tool is presented to the model: its name
//! (`mcp__<server>__<tool>`, in the characters and length both APIs accept) and its input
//! schema, adapted to what both provider APIs take. Both reject a schema whose top level is
//! not a plain object (`oneOf`/`anyOf`/`allOf` there), and some OpenAI-compatible servers
//! reject `$ref`, `$defs` and `format`; so references are inlined (a cycle is cut, with a
//! word in its description), combinators at the top are merged into one object, `oneOf`
//! below becomes `anyOf`, and a `format` moves into the description.
//!
//! Must never: drop a property the server declares, or loop on a recursive schema.

use serde_json::{Map, Value};
use sha2::Digest as _;

/// The longest tool name both APIs accept.
pub const MAX_NAME: usize = 64;

/// The longest description sent: OpenAI refuses longer ones.
pub const MAX_DESCRIPTION: usize = 1024;

/// How deep `$ref`s are followed before the rest is left as an open object.
const MAX_DEPTH: usize = 12;

/// Keys that only organise a schema or point elsewhere.
const DROPPED: [&str; 7] = [
    "$schema",
    "$id",
    "$defs",
    "definitions",
    "$comment",
    "$anchor",
    "$dynamicAnchor",
];

/// `mcp__<server>__<tool>`, with anything but letters, digits, `_` and `-` made `_`; when
/// longer than [`MAX_NAME`], cut and ended with a hash of the whole, so it stays unique.
pub fn qualified_name(server: &str, tool: &str) -> String {
    let clean = |s: &str| -> String {
        s.chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                    c
                } else {
                    '_'
                }
            })
            .collect()
    };
    let name = format!("mcp__{}__{}", clean(server), clean(tool));
    if name.len() <= MAX_NAME {
        return name;
    }
    let hash = sha2::Sha256::digest(format!("{server}\0{tool}").as_bytes());
    let suffix = hex::encode(&hash[..4]);
    format!("{}_{suffix}", &name[..MAX_NAME - suffix.len() - 1])
}

/// The description the model reads: the server's, cut to [`MAX_DESCRIPTION`] characters, or
/// the tool's title or name when it gives none.
pub fn description(server: &str, description: Option<&str>, title: Option<&str>, tool: &str) -> String {
    let text = description
        .filter(|d| !d.trim().is_empty())
        .or(title.filter(|t| !t.trim().is_empty()))
        .unwrap_or(tool)
        .trim();
    let text = format!("{text} (MCP server {server})");
    if text.chars().count() <= MAX_DESCRIPTION {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_DESCRIPTION - 1).collect();
    cut.push('…');
    cut
}

/// The input schema as both APIs accept it: an object at the top, no references, no
/// `format`, `anyOf` for `oneOf`.
pub fn sanitize(schema: &Map<String, Value>) -> Value {
    let mut defs = Map::new();
    for key in ["definitions", "$defs"] {
        if let Some(Value::Object(d)) = schema.get(key) {
            defs.extend(d.clone());
        }
    }
    let root = Value::Object(schema.clone());
    let cleaned = clean(
        &root,
        &Ctx {
            defs: &defs,
            root: &root,
        },
        &mut Vec::new(),
    );
    top_level_object(cleaned)
}

struct Ctx<'a> {
    defs: &'a Map<String, Value>,
    root: &'a Value,
}

fn clean(node: &Value, ctx: &Ctx, seen: &mut Vec<String>) -> Value {
    let Value::Object(map) = node else {
        // `true` (anything) and `false` (nothing) are schemas too; an open one says it best.
        return Value::Object(Map::new());
    };
    if let Some(Value::String(reference)) = map.get("$ref") {
        let mut resolved = resolve(reference, ctx, seen);
        // Siblings of `$ref` (a description, say) refine what it points at.
        if let Value::Object(out) = &mut resolved {
            for (k, v) in map.iter().filter(|(k, _)| *k != "$ref") {
                out.insert(k.clone(), v.clone());
            }
        }
        return clean_keys(&resolved, ctx, seen);
    }
    clean_keys(node, ctx, seen)
}

/// The target of a local reference, itself cleaned; an open object with a note for a cycle,
/// a reference too deep, or one that points outside the schema.
fn resolve(reference: &str, ctx: &Ctx, seen: &mut Vec<String>) -> Value {
    let note = |why: String| serde_json::json!({"type": "object", "description": why});
    if seen.iter().any(|s| s == reference) || seen.len() >= MAX_DEPTH {
        return note(format!("(the same shape as {}, nested)", ref_name(reference)));
    }
    let target = if reference == "#" {
        Some(ctx.root)
    } else {
        ["#/$defs/", "#/definitions/"]
            .iter()
            .find_map(|p| reference.strip_prefix(p))
            .and_then(|name| ctx.defs.get(name))
    };
    let Some(target) = target else {
        return note(format!("(see {reference})"));
    };
    seen.push(reference.to_string());
    let out = clean(target, ctx, seen);
    seen.pop();
    out
}

fn ref_name(reference: &str) -> &str {
    reference.rsplit('/').next().unwrap_or(reference)
}

fn clean_keys(node: &Value, ctx: &Ctx, seen: &mut Vec<String>) -> Value {
    let Value::Object(map) = node else {
        return Value::Object(Map::new());
    };
    let mut out = Map::new();
    let mut format = None;
    for (key, value) in map {
        match key.as_str() {
            k if DROPPED.contains(&k) || k == "$ref" => {}
            "format" => format = value.as_str().map(str::to_string),
            "properties" | "patternProperties" => {
                let props = value
                    .as_object()
                    .map(|p| p.iter().map(|(k, v)| (k.clone(), clean(v, ctx, seen))).collect())
                    .unwrap_or_default();
                out.insert(key.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" | "not" | "contains" | "propertyNames" | "if" | "then" | "else"
                if value.is_object() =>
            {
                out.insert(key.clone(), clean(value, ctx, seen));
            }
            "items" | "prefixItems" if value.is_array() => {
                out.insert(key.clone(), list(value, ctx, seen));
            }
            "oneOf" | "anyOf" | "allOf" => {
                let key = if key == "oneOf" { "anyOf" } else { key.as_str() };
                let mut variants = list(value, ctx, seen);
                // `oneOf` and `anyOf` side by side would collide; keep both sets of choices.
                if let (Some(Value::Array(have)), Value::Array(more)) = (out.get_mut(key), &mut variants) {
                    have.append(more);
                } else {
                    out.insert(key.to_string(), variants);
                }
            }
            _ => {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    if let Some(format) = format {
        let text = match out.get("description").and_then(Value::as_str) {
            Some(d) if !d.is_empty() => format!("{d} (format: {format})"),
            _ => format!("Format: {format}."),
        };
        out.insert("description".into(), Value::String(text));
    }
    Value::Object(out)
}

fn list(value: &Value, ctx: &Ctx, seen: &mut Vec<String>) -> Value {
    Value::Array(
        value
            .as_array()
            .map(|items| items.iter().map(|v| clean(v, ctx, seen)).collect())
            .unwrap_or_default(),
    )
}

/// Makes the top level one plain object: `allOf` parts are merged (every `required` kept);
/// `anyOf` choices are merged with only what all of them require, and the description says
/// that the choices exist.
fn top_level_object(schema: Value) -> Value {
    let Value::Object(mut top) = schema else {
        return serde_json::json!({"type": "object", "properties": {}});
    };
    let mut properties = match top.remove("properties") {
        Some(Value::Object(p)) => p,
        _ => Map::new(),
    };
    let mut required: Vec<Value> = match top.remove("required") {
        Some(Value::Array(r)) => r,
        _ => vec![],
    };
    if let Some(Value::Array(parts)) = top.remove("allOf") {
        for part in parts {
            let inner = top_level_object(part);
            merge_properties(&mut properties, &inner);
            for r in inner["required"].as_array().into_iter().flatten() {
                if !required.contains(r) {
                    required.push(r.clone());
                }
            }
        }
    }
    if let Some(Value::Array(choices)) = top.remove("anyOf") {
        let choices: Vec<Value> = choices.into_iter().map(top_level_object).collect();
        let mut common: Option<Vec<Value>> = None;
        for choice in &choices {
            merge_properties(&mut properties, choice);
            let theirs = choice["required"].as_array().cloned().unwrap_or_default();
            common = Some(match common {
                None => theirs,
                Some(c) => c.into_iter().filter(|r| theirs.contains(r)).collect(),
            });
        }
        for r in common.unwrap_or_default() {
            if !required.contains(&r) {
                required.push(r);
            }
        }
        if choices.len() > 1 {
            let forms: Vec<String> = choices
                .iter()
                .map(|c| {
                    let names: Vec<&str> = c["required"]
                        .as_array()
                        .map(|r| r.iter().filter_map(Value::as_str).collect())
                        .unwrap_or_default();
                    match names.is_empty() {
                        true => "no required fields".to_string(),
                        false => names.join(" + "),
                    }
                })
                .collect();
            let note = format!("Give one of these forms: {}.", forms.join("; or "));
            let text = match top.get("description").and_then(Value::as_str) {
                Some(d) if !d.is_empty() => format!("{d} {note}"),
                _ => note,
            };
            top.insert("description".into(), Value::String(text));
        }
    }
    top.remove("not");
    top.remove("enum");
    top.remove("const");
    top.insert("type".into(), Value::String("object".into()));
    top.insert("properties".into(), Value::Object(properties));
    if !required.is_empty() {
        top.insert("required".into(), Value::Array(required));
    }
    Value::Object(top)
}

/// Adds `from`'s properties; a name both have keeps the first definition.
fn merge_properties(into: &mut Map<String, Value>, from: &Value) {
    for (k, v) in from["properties"].as_object().into_iter().flatten() {
        into.entry(k.clone()).or_insert_with(|| v.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn sanitized(v: Value) -> Value {
        sanitize(v.as_object().unwrap())
    }

    /// Every key anywhere in `v`, for "none of these are left" checks.
    fn keys(v: &Value, out: &mut Vec<String>) {
        match v {
            Value::Object(m) => m.iter().for_each(|(k, v)| {
                out.push(k.clone());
                keys(v, out)
            }),
            Value::Array(a) => a.iter().for_each(|v| keys(v, out)),
            _ => {}
        }
    }

    #[test]
    fn refs_are_inlined_oneof_becomes_anyof_and_format_moves_into_the_description() {
        let schema = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "$defs": {
                "Point": {"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"]},
                "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}, "value": {"type": "string"}}}
            },
            "properties": {
                "at": {"$ref": "#/$defs/Point", "description": "Where."},
                "when": {"type": "string", "format": "date-time", "description": "When it happens"},
                "site": {"type": "string", "format": "uri"},
                "shape": {"oneOf": [{"type": "string"}, {"$ref": "#/$defs/Point"}]},
                "list": {"$ref": "#/$defs/Node"}
            },
            "required": ["at"]
        });
        let out = sanitized(schema);
        assert_eq!(
            out["properties"]["at"],
            json!({"type": "object", "properties": {"x": {"type": "number"}, "y": {"type": "number"}}, "required": ["x", "y"], "description": "Where."})
        );
        assert_eq!(
            out["properties"]["when"],
            json!({"type": "string", "description": "When it happens (format: date-time)"})
        );
        assert_eq!(
            out["properties"]["site"],
            json!({"type": "string", "description": "Format: uri."})
        );
        assert_eq!(out["properties"]["shape"]["anyOf"][1]["required"], json!(["x", "y"]));
        // The recursive list is cut one level down, with a word about it.
        assert_eq!(
            out["properties"]["list"]["properties"]["next"],
            json!({"type": "object", "description": "(the same shape as Node, nested)"})
        );
        assert_eq!(out["required"], json!(["at"]));
        let mut all = vec![];
        keys(&out, &mut all);
        for gone in ["$ref", "$defs", "$schema", "oneOf", "format"] {
            assert!(!all.iter().any(|k| k == gone), "{gone} left in {out}");
        }
    }

    #[test]
    fn a_top_level_choice_becomes_one_object_with_what_every_choice_requires() {
        let schema = json!({
            "oneOf": [
                {"type": "object", "properties": {"path": {"type": "string"}, "mode": {"type": "string"}}, "required": ["path", "mode"]},
                {"type": "object", "properties": {"url": {"type": "string"}, "mode": {"type": "string"}}, "required": ["url", "mode"]}
            ]
        });
        assert_eq!(
            sanitized(schema),
            json!({
                "type": "object",
                "description": "Give one of these forms: path + mode; or url + mode.",
                "properties": {"path": {"type": "string"}, "mode": {"type": "string"}, "url": {"type": "string"}},
                "required": ["mode"]
            })
        );
        let all_of = json!({"allOf": [
            {"properties": {"a": {"type": "string"}}, "required": ["a"]},
            {"properties": {"b": {"type": "integer"}}, "required": ["b"]}
        ]});
        assert_eq!(
            sanitized(all_of),
            json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["a", "b"]})
        );
        // No properties at all still names them, as OpenAI wants.
        assert_eq!(
            sanitized(json!({"type": "object"})),
            json!({"type": "object", "properties": {}})
        );
    }

    #[test]
    fn names_fit_both_apis_and_stay_apart() {
        assert_eq!(qualified_name("everything", "echo"), "mcp__everything__echo");
        assert_eq!(qualified_name("my server", "do.it/now"), "mcp__my_server__do_it_now");
        let long = qualified_name(
            "a-server-with-a-rather-long-name",
            "and-a-tool-with-an-even-longer-name-1",
        );
        let other = qualified_name(
            "a-server-with-a-rather-long-name",
            "and-a-tool-with-an-even-longer-name-2",
        );
        assert_eq!(long.len(), MAX_NAME);
        assert_ne!(long, other);
        assert!(long.starts_with("mcp__a-server-with"));
    }

    #[test]
    fn descriptions_are_bounded_and_never_empty() {
        assert_eq!(description("s", None, None, "echo"), "echo (MCP server s)");
        assert_eq!(
            description("s", Some(" "), Some("Echo Tool"), "echo"),
            "Echo Tool (MCP server s)"
        );
        let long = description("s", Some(&"x".repeat(5000)), None, "t");
        assert_eq!(long.chars().count(), MAX_DESCRIPTION);
        assert!(long.ends_with('…'));
    }
}
