//! The type of each archived column, read from the database's own schema: an imported
//! value must be of its column's type (an integer column takes a whole number, a text
//! column a string), because SQLite keeps what it is given (`2.5` stays REAL in an
//! INTEGER column) and every reader of the row expects the column's type.

use std::collections::HashMap;

use serde_json::Value;

use super::tables::{Table, TABLES};
use crate::db::{Db, DbError};

/// What a column holds, by SQLite's affinity rules for its declared type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ColumnType {
    Integer,
    Real,
    Text,
    /// No declared type the rules name: any value.
    Any,
}

impl ColumnType {
    /// SQLite's rules (section 3.1 of "Datatypes In SQLite"), in their order.
    pub(crate) fn of_declared(declared: &str) -> Self {
        let upper = declared.to_ascii_uppercase();
        if upper.contains("INT") {
            ColumnType::Integer
        } else if ["CHAR", "CLOB", "TEXT"].iter().any(|t| upper.contains(t)) {
            ColumnType::Text
        } else if ["REAL", "FLOA", "DOUB"].iter().any(|t| upper.contains(t)) {
            ColumnType::Real
        } else {
            ColumnType::Any
        }
    }

    /// Whether `value` may be stored in a column of this type; `Err` says what it must
    /// be. Null is left to the column's own constraint.
    pub(crate) fn check(self, column: &str, value: &Value) -> Result<(), String> {
        let fits = match (self, value) {
            (_, Value::Null) | (ColumnType::Any, _) => true,
            (ColumnType::Integer, Value::Number(n)) => n.as_i64().is_some(),
            (ColumnType::Real, Value::Number(_)) => true,
            (ColumnType::Text, Value::String(_)) => true,
            _ => false,
        };
        if fits {
            return Ok(());
        }
        Err(match self {
            ColumnType::Integer => format!("field `{column}` must be a whole number or null"),
            ColumnType::Real => format!("field `{column}` must be a number or null"),
            _ => format!("field `{column}` must be a string or null"),
        })
    }
}

/// Each archived table's columns and their types.
#[derive(Debug, Clone, Default)]
pub(crate) struct ColumnTypes {
    types: HashMap<(&'static str, String), ColumnType>,
}

impl ColumnTypes {
    /// Reads the types of every archived table from the database's schema.
    pub(crate) async fn load(db: &Db) -> Result<Self, DbError> {
        let conn = db.conn().await?;
        let mut types = HashMap::new();
        for table in TABLES {
            // The table name is one of ours, never the archive's. Both give the column's
            // position, name and declared type first.
            let mut rows = if conn.is_postgres() {
                conn.query(
                    "SELECT ordinal_position, column_name, data_type
                     FROM information_schema.columns
                     WHERE table_schema = current_schema() AND table_name = ?1
                     ORDER BY ordinal_position",
                    [table.table],
                )
                .await?
            } else {
                conn.query(&format!("PRAGMA table_info({})", table.table), ())
                    .await?
            };
            while let Some(row) = rows.next().await? {
                let name: String = row.get(1)?;
                let declared: String = row.get(2)?;
                types.insert((table.kind, name), ColumnType::of_declared(&declared));
            }
        }
        Ok(Self { types })
    }

    /// The type of `table`'s `column` (any, for a column the schema does not name).
    pub(crate) fn of(&self, table: &Table, column: &str) -> ColumnType {
        self.types
            .get(&(table.kind, column.to_string()))
            .copied()
            .unwrap_or(ColumnType::Any)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn declared_types_follow_sqlites_rules() {
        assert_eq!(ColumnType::of_declared("INTEGER"), ColumnType::Integer);
        assert_eq!(ColumnType::of_declared("BIGINT"), ColumnType::Integer);
        assert_eq!(ColumnType::of_declared("TEXT"), ColumnType::Text);
        assert_eq!(ColumnType::of_declared("varchar(10)"), ColumnType::Text);
        assert_eq!(ColumnType::of_declared("REAL"), ColumnType::Real);
        assert_eq!(ColumnType::of_declared("DOUBLE"), ColumnType::Real);
        assert_eq!(ColumnType::of_declared("BLOB"), ColumnType::Any);
        assert_eq!(ColumnType::of_declared(""), ColumnType::Any);
    }

    proptest! {
        /// An integer column takes exactly the numbers SQLite keeps as integers: any
        /// fraction, any value past i64 and any string is refused, naming the field.
        #[test]
        fn an_integer_column_takes_whole_numbers_only(x in any::<f64>(), i in any::<i64>(), s in ".*") {
            let integer = ColumnType::Integer;
            prop_assert!(integer.check("n", &Value::from(i)).is_ok());
            let float = serde_json::Number::from_f64(x).map(Value::Number);
            if let Some(float) = float {
                let whole = float.as_i64().is_some();
                prop_assert_eq!(integer.check("n", &float).is_ok(), whole);
            }
            let err = integer.check("max_attempts", &Value::String(s)).unwrap_err();
            prop_assert!(err.contains("`max_attempts`"));
            prop_assert!(ColumnType::Text.check("goal", &Value::from(i)).is_err());
            prop_assert!(ColumnType::Real.check("cost", &Value::from(i)).is_ok());
        }
    }
}
