//! The input rules of [`crate::input`] and the library's ranges, written into the OpenAPI
//! document, so that what the document calls valid is what the handlers accept, and what
//! it calls invalid they refuse (the API fuzzer holds the two to each other, both ways).
//!
//! The rules are applied by name, once, to every parameter and every request-body field
//! of that name: the library checks a field of one name by one rule whichever route it
//! came through, and the document says so in one place. A string parameter or request
//! field with no rule here fails `tests/api.rs`, so a new one cannot go undescribed.
//!
//! JSON Schema counts characters where the library counts bytes (UTF-8): each
//! `maxLength` here is the byte limit, so a long text of non-ASCII characters the document
//! allows can still be refused as too long. Patterns use the syntax ECMAScript and
//! Python's `re` share (the fuzzer generates from them in Python).

use std::collections::BTreeSet;

use serde_json::{json, Map, Value};

use crate::config::Config;
use crate::input::{MAX_ID_BYTES, MAX_NAME_BYTES, MAX_QUERY_BYTES};

/// Control characters (`char::is_control`): never in an id, a name or a one-line text.
const CONTROL: &str = r"\x00-\x1f\x7f-\x9f";
/// Control characters but tab, newline and carriage return (goals, notes: many lines).
const CONTROL_BUT_LINES: &str = r"\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f";
/// Control characters and Unicode white space (`char::is_whitespace`, as `str::trim`).
const CONTROL_OR_SPACE: &str =
    r"\x00-\x20\x7f-\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";
/// Unicode white space alone.
const SPACE: &str = r"\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000";

/// An id (`input::check_id`): no control character, not starting or ending with space.
fn id() -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": MAX_ID_BYTES,
        "pattern": format!("^[^{CONTROL_OR_SPACE}]([^{CONTROL}]*[^{CONTROL_OR_SPACE}])?$"),
    })
}

/// One line of text (`input::check_text` with `Lines::One`): no control character, not
/// blank.
fn line(max_bytes: usize) -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": max_bytes,
        "pattern": format!("^[^{CONTROL}]*[^{CONTROL_OR_SPACE}][^{CONTROL}]*$"),
    })
}

/// Text of many lines (`input::check_text` with `Lines::Many`).
fn lines(max_bytes: usize) -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": max_bytes,
        "pattern": format!(
            "^[^{CONTROL_BUT_LINES}]*[^{CONTROL_OR_SPACE}][^{CONTROL_BUT_LINES}]*$"
        ),
    })
}

/// Conversation content (`input::check_content`): any characters, not blank.
fn content() -> Value {
    json!({
        "type": "string",
        "minLength": 1,
        "pattern": format!("^[\\s\\S]*[^{SPACE}][\\s\\S]*$"),
    })
}

/// An instant as `memory::parse_time` reads it: UTC milliseconds, a date, or RFC 3339.
/// The pattern is narrower than the parser (years 1980 to 8999, days 1 to 28, at most
/// 14 digits of milliseconds) so that whatever it allows is a real instant in range
/// whatever its offset; the other forms the parser takes are the document's "invalid"
/// that the server accepts, which a generator of invalid strings does not reach.
fn instant() -> Value {
    let date = r"(19[89][0-9]|[2-8][0-9]{3})-(0[1-9]|1[0-2])-(0[1-9]|1[0-9]|2[0-8])";
    let time = r"T([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{1,9})?(Z|[+-](0[0-9]|1[0-3]):[0-5][0-9])";
    json!({
        "type": "string",
        "pattern": format!("^([0-9]{{1,14}}|{date}({time})?)$"),
    })
}

/// A file name (`artifact::check_name`): an id without `/` or `\`, not `.` or `..`,
/// counted in characters.
fn file_name() -> Value {
    let first = format!(r"[^{CONTROL_OR_SPACE}/\\]");
    json!({
        "type": "string",
        "minLength": 1,
        "maxLength": crate::artifact::MAX_NAME_CHARS,
        "pattern": format!(r"^(?!\.\.?$){first}([^{CONTROL}/\\]*{first})?$"),
    })
}

/// Tags in a query parameter, comma-separated: each a one-line text without a comma.
fn tag_list() -> Value {
    let tag = format!("[^{CONTROL},]*[^{CONTROL_OR_SPACE},][^{CONTROL},]*");
    json!({ "type": "string", "pattern": format!("^{tag}(,{tag})*$") })
}

/// Empty, or one line of text: a prefix to match, where nothing matches everything.
fn optional_line(max_bytes: usize) -> Value {
    json!({
        "type": "string",
        "maxLength": max_bytes,
        "pattern": format!("^([^{CONTROL}]*[^{CONTROL_OR_SPACE}][^{CONTROL}]*)?$"),
    })
}

/// A MIME type as `artifact::check_mime_type` reads it: `type/subtype`, then
/// `; name=value` parameters, a value a token or a quoted string.
fn mime_type() -> Value {
    let token = r"[A-Za-z0-9!#$%&'*+.^_`|~-]+";
    json!({
        "type": "string",
        "maxLength": crate::artifact::MAX_MIME_BYTES,
        "pattern": format!(r#"^{token}/{token}( *; *{token}=({token}|"[ !#-:<-\[\]-~]*"))*$"#),
    })
}

fn one_of(values: &[&str]) -> Value {
    json!({ "type": "string", "enum": values })
}

fn range(min: i64, max: i64) -> Value {
    json!({ "type": "integer", "format": "int64", "minimum": min, "maximum": max })
}

/// The rule for a parameter or request field named `name`: `scope` is the operation's
/// path for a parameter, the body's schema name for a field. `None` for a name whose
/// declared schema is already exact (booleans, closed enums the types derive).
fn rule(scope: &str, name: &str, config: &Config) -> Option<Value> {
    // Note filters (a search's, the notes list's) are one-line texts, not ids: a key
    // prefix may end in a space the keys hold inside.
    let filter = matches!(scope, "SearchBody" | "/v1/notes");
    Some(match name {
        "tags" | "any_tags" | "no_tags" if scope == "/v1/notes" => tag_list(),
        "tags" | "any_tags" | "no_tags" if filter => line(MAX_ID_BYTES),
        // A note's own tags: trimmed, at most 64 characters, at most 32 (`memory::notes`).
        "tags" => json!({
            "type": "array",
            "items": line(crate::memory::MAX_TAG_CHARS),
            "maxItems": crate::memory::MAX_TAGS,
        }),
        "category" | "key_prefix" if filter => line(MAX_ID_BYTES),
        "user" | "agent" | "session" | "session_id" | "note_id" | "artifact_id" | "approval_id"
        | "schedule_id" | "run_id" | "message_id" | "user_id" | "key" | "category" | "channel"
        | "calendars" => id(),
        // Trimmed where they are read: one line, spaces at the ends allowed.
        "after" | "idempotency_key" => line(MAX_ID_BYTES),
        "prefix" => optional_line(crate::state::MAX_KEY_BYTES),
        "type" => mime_type(),
        "name" if scope == "/v1/artifacts" => file_name(),
        "name" => line(MAX_NAME_BYTES),
        "query" => lines(MAX_QUERY_BYTES),
        "goal" => lines(crate::schedule::validate::MAX_GOAL_BYTES),
        "note" => lines(crate::schedule::store::MAX_PAUSE_NOTE_BYTES),
        "reason" => lines(crate::approval::MAX_REASON_BYTES),
        "text" | "content" | "input" => content(),
        "created_after" | "created_before" | "updated_after" | "updated_before" | "since"
        | "until" | "as_of" | "from" | "to" => instant(),
        "status" if scope == "/v1/schedules" => {
            one_of(&["active", "paused", "completed", "failed"])
        }
        "status" if scope == "ReplayBody" => one_of(&[
            "succeeded",
            "failed",
            "timed_out",
            "cancelled",
            "interrupted",
        ]),
        "source" => one_of(&["tool", "consolidation"]),
        "status" if scope == "/v1/admin/outbox" => one_of(&["pending", "delivered", "dead"]),
        "status" if scope == "/v1/runs" => one_of(crate::schedule::types::RunStatus::ALL),
        "schedule" => id(),
        "passes" => {
            let names: Vec<&str> = crate::consolidate::Pass::ALL
                .iter()
                .map(|pass| pass.as_str())
                .collect();
            one_of(&names)
        }
        // A schedule's cadence, zone, bounds and tool patterns have grammars of their own
        // (the schedule's parsers say what is wrong); what the document can say is that
        // each is one line of text.
        "cron" | "every" | "at" | "when" | "tz" | "jitter" | "skip" | "starts_at" | "ends_at"
        | "catch_up_window" | "approve" | "tools" | "alert_late" | "alert_silent" => {
            line(MAX_QUERY_BYTES)
        }
        "alert_failures" => range(1, crate::schedule::validate::MAX_ALERT_FAILURES),
        // A folder of Markdown files is imported by the CLI alone.
        "format" if scope == "/v1/import" => one_of(&["nightshift", "mem0"]),
        "limit" if scope.ends_with("/events") => range(1, crate::memory::MAX_RECALL as i64),
        "limit" if scope == "/v1/runs" => range(1, crate::schedule::store::MAX_RUN_PAGE),
        "limit" => range(1, 1000),
        "offset" | "expected_version" => range(0, i64::MAX),
        "top_k" => range(1, config.search.max_top_k as i64),
        "version" => range(1, i64::MAX),
        "created_at" => range(crate::input::MIN_INSTANT_MS, crate::input::MAX_INSTANT_MS),
        "importance" => json!({ "type": "number", "minimum": 0, "maximum": 1 }),
        "budget" => range(1, crate::input::MAX_CONTEXT_BUDGET as i64),
        // A header: the id of the last event a stream's client saw.
        "Last-Event-ID" => json!({
            "type": "string",
            "pattern": format!(
                "^[0-9]{{1,{}}}$",
                crate::schedule::progress::MAX_EVENT_ID_DIGITS
            ),
        }),
        _ => return None,
    })
}

/// Writes the rules into `doc` (the document as JSON), with the limits of `config`.
pub fn apply(doc: &mut Value, config: &Config) {
    let request_schemas = request_schemas(doc);
    if let Some(paths) = doc.get_mut("paths").and_then(Value::as_object_mut) {
        for (path, item) in paths.iter_mut() {
            let Some(item) = item.as_object_mut() else {
                continue;
            };
            for operation in item.values_mut() {
                let Some(parameters) = operation
                    .get_mut("parameters")
                    .and_then(Value::as_array_mut)
                else {
                    continue;
                };
                for parameter in parameters {
                    let Some(name) = parameter.get("name").and_then(Value::as_str) else {
                        continue;
                    };
                    if let Some(rule) = rule(path, name, config) {
                        parameter["schema"] = rule;
                    }
                }
            }
        }
    }
    let Some(schemas) = doc
        .pointer_mut("/components/schemas")
        .and_then(Value::as_object_mut)
    else {
        return;
    };
    for name in request_schemas {
        if let Some(Value::Object(schema)) = schemas.get_mut(&name) {
            apply_to_fields(&name, schema, config);
        }
    }
}

/// A request body's fields: each named field with a rule takes it (for an array, its
/// items, unless the rule is an array's own; a field that may be `null` stays so).
fn apply_to_fields(schema_name: &str, schema: &mut Map<String, Value>, config: &Config) {
    let Some(Value::Object(properties)) = schema.get_mut("properties") else {
        return;
    };
    for (name, field) in properties.iter_mut() {
        let Some(rule) = rule(schema_name, name, config) else {
            continue;
        };
        let nullable = field
            .get("type")
            .and_then(Value::as_array)
            .is_some_and(|types| types.iter().any(|t| t == "null"));
        let is_array = field.get("type").is_some_and(|t| {
            t == "array"
                || t.as_array()
                    .is_some_and(|ts| ts.iter().any(|t| t == "array"))
        });
        let description = field.get("description").cloned();
        let mut new = if rule["type"] == "array" {
            // The rule is the whole array's.
            let mut rule = rule;
            if nullable {
                rule["type"] = json!(["array", "null"]);
            }
            rule
        } else if is_array {
            let mut array = field.clone();
            array["items"] = rule;
            array
        } else if nullable {
            let mut rule = rule;
            rule["type"] = json!([rule["type"].clone(), "null"]);
            rule
        } else {
            rule
        };
        if let Some(description) = description {
            new["description"] = description;
        }
        *field = new;
    }
}

/// The component schemas request bodies use, with those they refer to in turn. (Only
/// those: a response is described as it is, not as input must be.)
fn request_schemas(doc: &Value) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    let mut queue: Vec<String> = Vec::new();
    if let Some(paths) = doc.get("paths").and_then(Value::as_object) {
        for item in paths.values().filter_map(Value::as_object) {
            for operation in item.values() {
                if let Some(body) = operation.get("requestBody") {
                    refs(body, &mut queue);
                }
            }
        }
    }
    while let Some(name) = queue.pop() {
        if found.insert(name.clone()) {
            if let Some(schema) = doc.pointer(&format!("/components/schemas/{name}")) {
                refs(schema, &mut queue);
            }
        }
    }
    found
}

fn refs(value: &Value, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            if let Some(Value::String(target)) = map.get("$ref") {
                if let Some(name) = target.strip_prefix("#/components/schemas/") {
                    out.push(name.to_string());
                }
            }
            map.values().for_each(|v| refs(v, out));
        }
        Value::Array(items) => items.iter().for_each(|v| refs(v, out)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::input::{self, Lines};
    use proptest::prelude::*;

    fn pattern(rule: &Value) -> regex::Regex {
        regex::Regex::new(rule["pattern"].as_str().unwrap()).unwrap()
    }

    /// Characters where the rules draw their lines: controls, every kind of white space,
    /// the ends of the ranges, and ordinary letters.
    fn text() -> impl Strategy<Value = String> {
        let edges = prop::sample::select(vec![
            'a', 'Z', '0', ' ', '\t', '\n', '\r', '\0', '\u{1f}', '\u{7f}', '\u{85}', '\u{9f}',
            '\u{a0}', '\u{a1}', '\u{1680}', '\u{2000}', '\u{200a}', '\u{200b}', '\u{2028}',
            '\u{3000}', 'é', '😀', '/', '\\', '.', ';', '=', '"', ',',
        ]);
        prop::collection::vec(prop_oneof![edges, any::<char>()], 0..12)
            .prop_map(|chars| chars.into_iter().collect())
    }

    proptest! {
        /// What the document calls a valid id, name, text or content is what the library
        /// accepts, and the other way round (within the byte limit, which JSON Schema
        /// cannot count).
        #[test]
        fn the_documents_patterns_are_the_librarys_rules(text in text()) {
            prop_assert_eq!(pattern(&id()).is_match(&text), input::check_id("x", &text).is_ok());
            prop_assert_eq!(
                pattern(&line(MAX_NAME_BYTES)).is_match(&text),
                input::check_text("x", &text, MAX_NAME_BYTES, Lines::One).is_ok()
            );
            prop_assert_eq!(
                pattern(&lines(MAX_NAME_BYTES)).is_match(&text),
                input::check_text("x", &text, MAX_NAME_BYTES, Lines::Many).is_ok()
            );
            prop_assert_eq!(
                pattern(&content()).is_match(&text),
                input::check_content("x", &text, MAX_NAME_BYTES).is_ok()
            );
            let list_ok = text
                .split(',')
                .all(|tag| input::check_text("x", tag, MAX_ID_BYTES, Lines::One).is_ok());
            prop_assert_eq!(pattern(&tag_list()).is_match(&text), list_ok);
            let prefix_ok = text.is_empty()
                || input::check_text("x", &text, MAX_NAME_BYTES, Lines::One).is_ok();
            prop_assert_eq!(pattern(&optional_line(MAX_NAME_BYTES)).is_match(&text), prefix_ok);
        }

        /// Every instant the document allows is one the library reads, inside its range,
        /// as a start and as an end.
        #[test]
        fn every_documented_instant_is_read(
            ms in 0i64..100_000_000_000_000,
            year in 1980u32..9000,
            month in 1u32..=12,
            day in 1u32..=28,
            (h, m, s) in (0u32..24, 0u32..60, 0u32..60),
            fraction in prop::option::of(1u32..999_999_999),
            offset in prop::option::of((any::<bool>(), 0u32..14, 0u32..60)),
        ) {
            let date = format!("{year:04}-{month:02}-{day:02}");
            let fraction = fraction.map(|f| format!(".{f}")).unwrap_or_default();
            let zone = match offset {
                None => "Z".to_string(),
                Some((east, oh, om)) => format!("{}{oh:02}:{om:02}", if east { '+' } else { '-' }),
            };
            let time = format!("{date}T{h:02}:{m:02}:{s:02}{fraction}{zone}");
            let documented = pattern(&instant());
            for written in [ms.to_string(), date, time] {
                prop_assert!(documented.is_match(&written), "{}", written);
                for end in [false, true] {
                    let read = crate::memory::parse_time("x", &written, end);
                    prop_assert!(read.is_ok(), "{}: {:?}", written, read);
                }
            }
        }

        /// A MIME type the document allows is one the library takes; a plain
        /// `type/subtype` the library takes, the document allows.
        #[test]
        fn documented_mime_types_are_taken(text in text(), kind in "[a-z]{1,8}", sub in "[a-z0-9.+-]{1,12}") {
            let documented = pattern(&mime_type());
            if documented.is_match(&text) {
                prop_assert!(crate::artifact::check_mime_type(&text).is_ok(), "{:?}", text);
            }
            let plain = format!("{kind}/{sub}");
            prop_assert!(documented.is_match(&plain) && crate::artifact::check_mime_type(&plain).is_ok());
        }
    }

    /// Every string a request carries, in a parameter or a body field, is described by a
    /// rule: a pattern, a closed set or a format. A new one without fails here.
    #[test]
    fn every_string_a_request_carries_has_a_rule() {
        let doc = super::super::openapi();
        let described = |schema: &Value| {
            let schema = match schema.get("items") {
                Some(items) if schema["type"] == "array" || schema["type"][0] == "array" => items,
                _ => schema,
            };
            let is_string = schema["type"] == "string" || schema["type"][0] == "string";
            !is_string
                || schema.get("pattern").is_some()
                || schema.get("enum").is_some()
                || schema.get("$ref").is_some()
        };
        let mut missing = Vec::new();
        for (path, item) in doc["paths"].as_object().unwrap() {
            for (method, operation) in item.as_object().unwrap() {
                for parameter in operation["parameters"].as_array().into_iter().flatten() {
                    if !described(&parameter["schema"]) {
                        missing.push(format!("{method} {path} ?{}", parameter["name"]));
                    }
                }
            }
        }
        for name in request_schemas(&doc) {
            let schema = &doc["components"]["schemas"][&name];
            for (field, field_schema) in schema["properties"].as_object().into_iter().flatten() {
                if !described(field_schema) {
                    missing.push(format!("{name}.{field}"));
                }
            }
        }
        assert!(missing.is_empty(), "strings with no rule: {missing:#?}");
        // And the rules are there: a check that passes on an empty document proves nothing.
        let note_id = &doc["paths"]["/v1/notes/{note_id}"]["get"]["parameters"][0]["schema"];
        assert_eq!(note_id["pattern"], id()["pattern"]);
    }
}
