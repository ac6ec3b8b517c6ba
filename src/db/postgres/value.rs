//! Values between the stores and PostgreSQL. Stores bind and read libSQL's values (an
//! integer, a real, a text, a blob, null) on both engines; PostgreSQL types every
//! parameter and column. A parameter is sent as the type PostgreSQL inferred for it, when
//! the value can be that type without loss, and a column is read back as the value
//! SQLite would have given (a boolean as 0 or 1, a whole numeric as an integer).
//!
//! PostgreSQL's text cannot hold U+0000, which nightshift keeps byte for byte in a
//! conversation; a text is stored with it escaped (see [`escape`]) and read back whole.

use std::error::Error;

use libsql::Value;
use tokio_postgres::types::{to_sql_checked, FromSql, IsNull, ToSql, Type};

type BoxError = Box<dyn Error + Sync + Send>;

/// A store's value, bound to a parameter of whatever type PostgreSQL inferred.
#[derive(Debug)]
pub struct Param<'a>(pub &'a Value);

fn cannot(value: &Value, ty: &Type) -> BoxError {
    let what = match value {
        Value::Null => "null",
        Value::Integer(_) => "an integer",
        Value::Real(_) => "a real number",
        Value::Text(_) => "a text",
        Value::Blob(_) => "a blob",
    };
    format!("{what} cannot be bound to a parameter of type {ty}").into()
}

impl ToSql for Param<'_> {
    fn to_sql(&self, ty: &Type, out: &mut bytes::BytesMut) -> Result<IsNull, BoxError> {
        match self.0 {
            Value::Null => Ok(IsNull::Yes),
            Value::Integer(i) => match *ty {
                Type::INT8 => i.to_sql(ty, out),
                Type::INT4 => i32::try_from(*i)
                    .map_err(|_| format!("{i} is out of range for a parameter of type int4"))?
                    .to_sql(ty, out),
                Type::INT2 => i16::try_from(*i)
                    .map_err(|_| format!("{i} is out of range for a parameter of type int2"))?
                    .to_sql(ty, out),
                Type::BOOL => (*i != 0).to_sql(ty, out),
                Type::FLOAT8 => (*i as f64).to_sql(ty, out),
                Type::FLOAT4 => (*i as f32).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
                    i.to_string().to_sql(&Type::TEXT, out)
                }
                _ => Err(cannot(self.0, ty)),
            },
            Value::Real(f) => match *ty {
                Type::FLOAT8 => f.to_sql(ty, out),
                Type::FLOAT4 => (*f as f32).to_sql(ty, out),
                Type::TEXT | Type::VARCHAR => f.to_string().to_sql(&Type::TEXT, out),
                _ => Err(cannot(self.0, ty)),
            },
            Value::Text(text) => match *ty {
                Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                    escape(text).as_ref().to_sql(&Type::TEXT, out)
                }
                Type::JSON => {
                    out.extend_from_slice(text.as_bytes());
                    Ok(IsNull::No)
                }
                Type::JSONB => {
                    out.extend_from_slice(&[1]);
                    out.extend_from_slice(text.as_bytes());
                    Ok(IsNull::No)
                }
                _ => Err(cannot(self.0, ty)),
            },
            Value::Blob(bytes) => match *ty {
                Type::BYTEA => bytes.as_slice().to_sql(ty, out),
                _ => Err(cannot(self.0, ty)),
            },
        }
    }

    fn accepts(_: &Type) -> bool {
        true
    }

    to_sql_checked!();
}

/// A column's value as a store reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct Cell(pub Value);

impl<'a> FromSql<'a> for Cell {
    fn from_sql(ty: &Type, raw: &'a [u8]) -> Result<Self, BoxError> {
        let value = match *ty {
            Type::BOOL => Value::Integer(i64::from(bool::from_sql(ty, raw)?)),
            Type::INT2 => Value::Integer(i64::from(i16::from_sql(ty, raw)?)),
            Type::INT4 => Value::Integer(i64::from(i32::from_sql(ty, raw)?)),
            Type::INT8 => Value::Integer(i64::from_sql(ty, raw)?),
            Type::OID => Value::Integer(i64::from(u32::from_sql(ty, raw)?)),
            Type::FLOAT4 => Value::Real(f64::from(f32::from_sql(ty, raw)?)),
            Type::FLOAT8 => Value::Real(f64::from_sql(ty, raw)?),
            Type::NUMERIC => numeric(raw)?,
            Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME | Type::UNKNOWN => {
                Value::Text(unescape(String::from_sql(&Type::TEXT, raw)?))
            }
            Type::JSON => Value::Text(String::from_sql(&Type::TEXT, raw)?),
            Type::JSONB => match raw.split_first() {
                Some((1, text)) => Value::Text(std::str::from_utf8(text)?.to_string()),
                _ => return Err("a jsonb value of an unknown version".into()),
            },
            Type::BYTEA => Value::Blob(raw.to_vec()),
            _ => return Err(format!("a column of type {ty} cannot be read as a value").into()),
        };
        Ok(Cell(value))
    }

    fn from_sql_null(_: &Type) -> Result<Self, BoxError> {
        Ok(Cell(Value::Null))
    }

    fn accepts(_: &Type) -> bool {
        true
    }
}

/// What stands for U+0000 in stored text (followed by [`NUL_MARK`]), and for itself
/// (doubled): a noncharacter, which no text a person writes holds, so escaping costs
/// nothing for nearly all text.
const ESCAPE: char = '\u{10FFFF}';

/// After [`ESCAPE`], U+0000. Another noncharacter, not a letter: a word next to a NUL
/// stays a word of its own to the full-text search, as it is to SQLite's.
const NUL_MARK: char = '\u{10FFFE}';

/// `text` as stored: U+0000 written as [`ESCAPE`] [`NUL_MARK`], [`ESCAPE`] as itself
/// twice.
pub fn escape(text: &str) -> std::borrow::Cow<'_, str> {
    if !text.contains(['\0', ESCAPE]) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\0' => {
                out.push(ESCAPE);
                out.push(NUL_MARK);
            }
            ESCAPE => {
                out.push(ESCAPE);
                out.push(ESCAPE);
            }
            other => out.push(other),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// A stored text as written (the inverse of [`escape`]); an escape that stands for
/// nothing (cut by a function in a statement) is kept as it is.
pub fn unescape(text: String) -> String {
    if !text.contains(ESCAPE) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == ESCAPE {
            match chars.peek() {
                Some(&NUL_MARK) => {
                    chars.next();
                    out.push('\0');
                }
                Some(&ESCAPE) => {
                    chars.next();
                    out.push(ESCAPE);
                }
                _ => out.push(ESCAPE),
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// A `numeric` (what PostgreSQL's `sum` of integers gives): an integer when it has no
/// fraction and fits, else a real, as SQLite's `sum` and `total` give.
fn numeric(raw: &[u8]) -> Result<Value, BoxError> {
    let word = |at: usize| -> Result<u16, BoxError> {
        raw.get(at..at + 2)
            .map(|b| u16::from_be_bytes([b[0], b[1]]))
            .ok_or_else(|| "a numeric value cut short".into())
    };
    let digits = usize::from(word(0)?);
    let weight = i32::from(word(2)? as i16);
    let sign = word(4)?;
    match sign {
        0xC000 => return Ok(Value::Real(f64::NAN)),
        0xD000 => return Ok(Value::Real(f64::INFINITY)),
        0xF000 => return Ok(Value::Real(f64::NEG_INFINITY)),
        _ => {}
    }
    let negative = sign == 0x4000;
    let mut whole: Option<i128> = Some(0);
    let mut real = 0f64;
    let mut fraction = false;
    for i in 0..digits {
        let digit = word(8 + 2 * i)?;
        let power = weight - i as i32;
        real += f64::from(digit) * 10000f64.powi(power);
        if power < 0 {
            fraction |= digit != 0;
        } else {
            whole = whole.and_then(|w| {
                10000i128
                    .checked_pow(power as u32)
                    .and_then(|scale| i128::from(digit).checked_mul(scale))
                    .and_then(|part| w.checked_add(part))
            });
        }
    }
    let whole = whole
        .map(|w| if negative { -w } else { w })
        .and_then(|w| i64::try_from(w).ok());
    Ok(match (whole, fraction) {
        (Some(whole), false) => Value::Integer(whole),
        _ => Value::Real(if negative { -real } else { real }),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// PostgreSQL's binary `numeric` for a whole number, as its server writes it.
    fn encode(n: i128) -> Vec<u8> {
        let mut digits = Vec::new();
        let mut rest = n.unsigned_abs();
        while rest > 0 {
            digits.push((rest % 10000) as u16);
            rest /= 10000;
        }
        digits.reverse();
        let weight = digits.len() as i16 - 1;
        let mut raw = Vec::new();
        raw.extend_from_slice(&(digits.len() as u16).to_be_bytes());
        raw.extend_from_slice(&weight.to_be_bytes());
        raw.extend_from_slice(&(if n < 0 { 0x4000u16 } else { 0 }).to_be_bytes());
        raw.extend_from_slice(&0u16.to_be_bytes());
        for digit in digits {
            raw.extend_from_slice(&digit.to_be_bytes());
        }
        raw
    }

    /// `numeric` as the server writes one: its header and base-10000 digits.
    fn raw_numeric(weight: i16, sign: u16, digits: &[u16]) -> Vec<u8> {
        let mut raw = Vec::new();
        raw.extend_from_slice(&(digits.len() as u16).to_be_bytes());
        raw.extend_from_slice(&weight.to_be_bytes());
        raw.extend_from_slice(&sign.to_be_bytes());
        raw.extend_from_slice(&0u16.to_be_bytes());
        for digit in digits {
            raw.extend_from_slice(&digit.to_be_bytes());
        }
        raw
    }

    #[test]
    fn numerics_past_any_integer_and_infinities_read_as_reals() {
        // 9999 × 10000^9 is past i128 as well as i64.
        let huge = numeric(&raw_numeric(9, 0, &[9999])).unwrap();
        assert!(
            matches!(huge, Value::Real(x) if (x - 9.999e39).abs() < 1e27),
            "{huge:?}"
        );
        let huge = numeric(&raw_numeric(40, 0x4000, &[9999, 9999])).unwrap();
        assert!(matches!(huge, Value::Real(x) if x < -1e160), "{huge:?}");
        assert!(
            matches!(numeric(&raw_numeric(0, 0xD000, &[])).unwrap(), Value::Real(x) if x == f64::INFINITY)
        );
        assert!(
            matches!(numeric(&raw_numeric(0, 0xF000, &[])).unwrap(), Value::Real(x) if x == f64::NEG_INFINITY)
        );
    }

    proptest! {
        #[test]
        fn a_whole_numeric_reads_as_the_integer(n in any::<i64>()) {
            prop_assert_eq!(numeric(&encode(i128::from(n))).unwrap(), Value::Integer(n));
        }

        #[test]
        fn a_numeric_past_an_integer_reads_as_a_real(n in (i64::MAX as i128 + 1)..i128::MAX / 4) {
            match numeric(&encode(n)).unwrap() {
                Value::Real(r) => prop_assert!((r - n as f64).abs() <= n as f64 * 1e-12),
                other => prop_assert!(false, "read {:?}", other),
            }
        }

        /// Every text comes back as written, and what is stored holds no U+0000.
        #[test]
        fn any_text_is_stored_without_nul_and_read_back_whole(
            text in proptest::collection::vec(
                prop_oneof![Just('\0'), Just(ESCAPE), Just(NUL_MARK), any::<char>()],
                0..24,
            ).prop_map(|chars| chars.into_iter().collect::<String>())
        ) {
            let stored = escape(&text).into_owned();
            prop_assert!(!stored.contains('\0'));
            prop_assert_eq!(unescape(stored), text);
        }

        /// Any bytes at all: an error or a value, never a panic.
        #[test]
        fn any_bytes_read_without_a_panic(raw in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = numeric(&raw);
        }
    }

    #[test]
    fn a_fraction_reads_as_a_real() {
        // 1.5: digits [1, 5000], weight 0, dscale 1.
        let raw = [0, 2, 0, 0, 0, 0, 0, 1, 0, 1, 0x13, 0x88];
        assert_eq!(numeric(&raw).unwrap(), Value::Real(1.5));
    }
}
