//! JSON Schemas for MCP tools, from the same `utoipa` types the OpenAPI document uses, made
//! self-contained: MCP clients read a tool's schema alone, so every `$ref` to a component
//! is replaced by the component itself.

use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::{Map, Value};
use utoipa::openapi::{RefOr, Schema};
use utoipa::{PartialSchema, ToSchema};

/// The schema of `T` with every component it refers to inlined, as a JSON object.
pub fn of<T: ToSchema + PartialSchema>() -> Arc<Map<String, Value>> {
    let mut components = Vec::<(String, RefOr<Schema>)>::new();
    T::schemas(&mut components);
    let components: BTreeMap<String, Value> = components
        .into_iter()
        .map(|(name, schema)| (name, serde_json::to_value(schema).unwrap_or(Value::Null)))
        .collect();
    let mut root = serde_json::to_value(T::schema()).unwrap_or(Value::Null);
    inline(&mut root, &components, 0);
    let mut object = match root {
        Value::Object(object) => object,
        other => {
            let mut wrapped = Map::new();
            wrapped.insert("type".into(), Value::String("object".into()));
            wrapped.insert("description".into(), other);
            wrapped
        }
    };
    // MCP wants an object schema at the top.
    object
        .entry("type")
        .or_insert_with(|| Value::String("object".into()));
    Arc::new(object)
}

/// Replaces `{"$ref": "#/components/schemas/X"}` by X's schema, following at most 16
/// references deep (a type that contains itself stays a reference past that).
fn inline(value: &mut Value, components: &BTreeMap<String, Value>, depth: usize) {
    match value {
        Value::Object(object) => {
            let target = object
                .get("$ref")
                .and_then(Value::as_str)
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
                .and_then(|name| components.get(name))
                .cloned();
            if let Some(mut schema) = target {
                if depth < 16 {
                    inline(&mut schema, components, depth + 1);
                    *value = schema;
                }
                return;
            }
            for child in object.values_mut() {
                inline(child, components, depth);
            }
        }
        Value::Array(items) => {
            for child in items {
                inline(child, components, depth);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schemas_are_self_contained_objects() {
        let schema = of::<crate::schedule::view::ScheduleView>();
        assert_eq!(schema["type"], "object");
        let text = serde_json::to_string(&*schema).unwrap();
        assert!(!text.contains("$ref"), "{text}");
        assert!(
            text.contains("buffer_one"),
            "the overlap policy's values are inlined"
        );
    }
}
