//! JSON read into a request's types as their documents describe them. serde's derived
//! records also take an array of their fields in order (`[null, 3]` for
//! `{"value": null, "expected_version": 3}`), which no document of ours allows and no
//! client means: read through [`from_value`], a record takes a JSON object only, at any
//! depth, and anything else is an error naming where it was.

use serde::de::{self, DeserializeOwned, DeserializeSeed, IntoDeserializer, Visitor};
use serde_json::{Map, Value};

/// `value` as `T`, each record an object; an error names the path of what did not fit.
pub fn from_value<T: DeserializeOwned>(
    value: Value,
) -> Result<T, serde_path_to_error::Error<serde_json::Error>> {
    serde_path_to_error::deserialize(Strict(value))
}

/// A JSON value whose records must be objects.
struct Strict(Value);

impl<'de> de::Deserializer<'de> for Strict {
    type Error = serde_json::Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Array(items) => visitor.visit_seq(Items(items.into_iter())),
            Value::Object(fields) => visitor.visit_map(Fields::new(fields)),
            other => other.deserialize_any(visitor),
        }
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Object(fields) => visitor.visit_map(Fields::new(fields)),
            other => Err(de::Error::invalid_type(
                unexpected(&other),
                &"a JSON object",
            )),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match self.0 {
            Value::Null => visitor.visit_none(),
            other => visitor.visit_some(Strict(other)),
        }
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        visitor.visit_newtype_struct(self)
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Self::Error> {
        self.0.deserialize_enum(name, variants, visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Unit,
        Value::Bool(b) => de::Unexpected::Bool(*b),
        Value::Number(_) => de::Unexpected::Other("a number"),
        Value::String(s) => de::Unexpected::Str(s),
        Value::Array(_) => de::Unexpected::Seq,
        Value::Object(_) => de::Unexpected::Map,
    }
}

struct Items(std::vec::IntoIter<Value>);

impl<'de> de::SeqAccess<'de> for Items {
    type Error = serde_json::Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Self::Error> {
        self.0
            .next()
            .map(|v| seed.deserialize(Strict(v)))
            .transpose()
    }

    fn size_hint(&self) -> Option<usize> {
        Some(self.0.len())
    }
}

struct Fields {
    entries: serde_json::map::IntoIter,
    value: Option<Value>,
}

impl Fields {
    fn new(fields: Map<String, Value>) -> Self {
        Self {
            entries: fields.into_iter(),
            value: None,
        }
    }
}

impl<'de> de::MapAccess<'de> for Fields {
    type Error = serde_json::Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Self::Error> {
        match self.entries.next() {
            Some((key, value)) => {
                self.value = Some(value);
                let key: de::value::StringDeserializer<serde_json::Error> = key.into_deserializer();
                seed.deserialize(key).map(Some)
            }
            None => Ok(None),
        }
    }

    fn next_value_seed<V: DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, Self::Error> {
        let value = self
            .value
            .take()
            .ok_or_else(|| de::Error::custom("a value asked for before its key"))?;
        seed.deserialize(Strict(value))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;
    use serde_json::json;

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Inner {
        n: i64,
    }

    #[derive(Debug, Deserialize, PartialEq)]
    #[serde(deny_unknown_fields)]
    struct Outer {
        value: Value,
        inner: Option<Inner>,
        #[serde(default)]
        list: Vec<Inner>,
        #[serde(default)]
        tags: Vec<String>,
    }

    #[test]
    fn records_are_objects_at_any_depth() {
        let read: Outer = from_value(json!({
            "value": [1, {"a": null}], "inner": {"n": 3}, "list": [{"n": 1}], "tags": ["x"]
        }))
        .unwrap();
        assert_eq!(
            read.value,
            json!([1, {"a": null}]),
            "a free value stays as sent"
        );
        assert_eq!(read.inner, Some(Inner { n: 3 }));
        assert_eq!(read.list, vec![Inner { n: 1 }]);
        for (bad, at) in [
            (json!([null, null]), "."),
            (json!({"value": 1, "inner": [3]}), "inner"),
            (json!({"value": 1, "list": [[1]]}), "list[0]"),
        ] {
            let err = from_value::<Outer>(bad.clone()).unwrap_err();
            assert_eq!(err.path().to_string(), at, "{bad}");
            assert!(err.inner().to_string().contains("a JSON object"), "{err}");
        }
        let err = from_value::<Outer>(json!({"value": 1, "extra": 2})).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }
}
