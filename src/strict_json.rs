//! JSON read into a request's types as their documents describe them, at any depth:
//! - a record takes a JSON object only. serde's derived records also take an array of
//!   their fields in order (`[null, 3]` for `{"value": null, "expected_version": 3}`),
//!   which no document of ours allows and no client means;
//! - an integer field takes a whole number however it is written (`3.0`, `3e0`): JSON has
//!   one kind of number, JSON Schema's `integer` allows it, and a client that keeps every
//!   number as a double sends it so. Only up to 2^53, where a double is still exact, and
//!   only where an integer is asked for: a free JSON value (a state value, a payload)
//!   keeps the number as it was sent.
//!
//! Anything else is an error naming where it was.

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

    fn deserialize_i64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match whole(&self.0) {
            Some(n) => visitor.visit_i64(n),
            None => self.deserialize_any(visitor),
        }
    }

    fn deserialize_u64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        match whole(&self.0) {
            Some(n) => visitor.visit_i64(n),
            None => self.deserialize_any(visitor),
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

    fn deserialize_i32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.deserialize_i64(visitor)
    }

    fn deserialize_u32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Self::Error> {
        self.deserialize_u64(visitor)
    }

    serde::forward_to_deserialize_any! {
        bool i8 i16 i128 u8 u16 u128 f32 f64 char str string bytes byte_buf
        unit unit_struct seq tuple tuple_struct map identifier ignored_any
    }
}

/// A number written as a fraction whose value is whole and at most 2^53 in size (where a
/// double holds every integer exactly), as that integer.
fn whole(value: &Value) -> Option<i64> {
    const EXACT: f64 = 9_007_199_254_740_992.0;
    let float = value.as_number().filter(|n| n.is_f64())?.as_f64()?;
    (float.fract() == 0.0 && (-EXACT..=EXACT).contains(&float)).then_some(float as i64)
}

fn unexpected(value: &Value) -> de::Unexpected<'_> {
    match value {
        Value::Null => de::Unexpected::Other("null"),
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
        let err = from_value::<Outer>(json!({"value": 1, "inner": null, "list": [null]}));
        assert!(err.unwrap_err().to_string().contains("null"));
    }

    #[derive(Debug, Deserialize, PartialEq)]
    struct Numbers {
        count: i64,
        small: u32,
        size: usize,
        ratio: f64,
        free: Value,
    }

    proptest::proptest! {
        /// An integer field takes a whole number written as a fraction, within 2^53, and
        /// refuses any other fraction; a float field and a free value keep what was sent.
        #[test]
        fn whole_numbers_read_as_integers_where_integers_are_asked_for(
            any_float in proptest::num::f64::NORMAL | proptest::num::f64::ZERO,
            small in -1e15f64..1e15,
            pick in proptest::bool::ANY,
        ) {
            let float = if pick { any_float } else { small.trunc() };
            let value = json!({
                "count": float, "small": 7.0, "size": 3.0, "ratio": float, "free": float
            });
            let read = from_value::<Numbers>(value);
            let exact_whole = float.fract() == 0.0 && float.abs() <= 9_007_199_254_740_992.0;
            if exact_whole {
                let read = read.unwrap();
                proptest::prop_assert_eq!(read.count, float as i64);
                proptest::prop_assert_eq!((read.small, read.size), (7, 3));
                proptest::prop_assert_eq!(read.ratio, float);
                proptest::prop_assert_eq!(read.free.as_f64(), Some(float), "kept as sent");
                proptest::prop_assert!(read.free.is_f64());
            } else {
                let err = read.unwrap_err();
                proptest::prop_assert_eq!(err.path().to_string(), "count");
            }
        }
    }
}
