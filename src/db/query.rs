//! Reading rows as values: scalars, typed rows ([`FromRow`]) and the helpers every store
//! reads with, on a connection or inside a write transaction alike.

use super::error::DbError;
use super::pool::Conn;
use super::write_tx::WriteTx;

/// A column value [`query_scalar`] can return. (libsql keeps its own conversion trait
/// private.)
pub trait Scalar: Sized {
    fn from_value(value: libsql::Value) -> Option<Self>;
}

impl Scalar for i64 {
    fn from_value(value: libsql::Value) -> Option<Self> {
        match value {
            libsql::Value::Integer(n) => Some(n),
            _ => None,
        }
    }
}

impl Scalar for String {
    fn from_value(value: libsql::Value) -> Option<Self> {
        match value {
            libsql::Value::Text(s) => Some(s),
            _ => None,
        }
    }
}

/// Something queries run on: a [`Conn`] (which, against a server, keeps the statements
/// it has described), a [`WriteTx`], or a bare libsql connection.
pub trait Queryable: Sync {
    fn query_rows(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams + Send,
    ) -> impl std::future::Future<Output = Result<libsql::Rows, libsql::Error>> + Send;
}

impl Queryable for Conn {
    async fn query_rows(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams + Send,
    ) -> Result<libsql::Rows, libsql::Error> {
        self.query(sql, params).await
    }
}

impl Queryable for libsql::Connection {
    async fn query_rows(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams + Send,
    ) -> Result<libsql::Rows, libsql::Error> {
        self.query(sql, params).await
    }
}

impl Queryable for WriteTx {
    async fn query_rows(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams + Send,
    ) -> Result<libsql::Rows, libsql::Error> {
        self.query(sql, params).await
    }
}

/// What `read` takes from the first row; `None` when there is no row. The row and its
/// statement are gone when this returns: on a local file they keep a read transaction
/// open, and a write on the same connection after it could fail with `SQLITE_BUSY`.
pub async fn query_first_row<T>(
    conn: &(impl Queryable + ?Sized),
    sql: &str,
    params: impl libsql::params::IntoParams + Send,
    read: impl FnOnce(&libsql::Row) -> Result<T, libsql::Error>,
) -> Result<Option<T>, libsql::Error> {
    let mut rows = conn.query_rows(sql, params).await?;
    let first = match rows.next().await? {
        Some(row) => read(&row)?,
        None => return Ok(None),
    };
    finish_rows(rows).await?;
    Ok(Some(first))
}

/// After the row a caller wanted, one more look, for the end of the rows: against a
/// server, rows read to their end let the response end too, and only then is the
/// server done with the statement (see `vendor/README.md`); a response left unread
/// is cut off, and sqld 0.24 was seen to answer that by interrupting the next
/// statement on the stream. A statement with more rows is simply dropped.
pub(crate) async fn finish_rows(mut rows: libsql::Rows) -> Result<(), libsql::Error> {
    rows.next().await?;
    Ok(())
}

/// A record read from a row by column position; `COLUMNS` is the select list it reads, so
/// the positions and the list are written in one place.
pub trait FromRow: Sized {
    const COLUMNS: &'static str;
    fn from_row(row: &libsql::Row) -> Result<Self, DbError>;
}

/// A stored row that could not be read as its record: which kind of record, its id (the
/// first selected column, as text) and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Unreadable {
    pub what: &'static str,
    pub id: String,
    pub reason: String,
}

impl Unreadable {
    fn of<T: FromRow>(row: &libsql::Row, err: &DbError) -> Self {
        let id = match row.get_value(0) {
            Ok(libsql::Value::Text(text)) => crate::input::printable(&text).to_string(),
            Ok(libsql::Value::Integer(n)) => n.to_string(),
            Ok(other) => format!("{other:?}"),
            Err(e) => format!("(no id: {e})"),
        };
        let what = std::any::type_name::<T>()
            .rsplit("::")
            .next()
            .unwrap_or("row");
        Unreadable {
            what,
            id,
            reason: err.to_string(),
        }
    }
}

/// Every row `sql` returns, as records. A row that cannot be read (a value of another
/// type than its column's, stored JSON that does not parse: whatever put it there) is
/// skipped and logged with its record kind and id, so one bad row never fails every
/// read of its table.
pub async fn fetch_all<T: FromRow>(
    conn: &(impl Queryable + ?Sized),
    sql: &str,
    params: impl libsql::params::IntoParams + Send,
) -> Result<Vec<T>, DbError> {
    let (records, unreadable) = fetch_readable(conn, sql, params).await?;
    for bad in &unreadable {
        tracing::error!(record = bad.what, id = %bad.id, reason = %bad.reason,
            "a stored row cannot be read; skipped it");
    }
    Ok(records)
}

/// Every row `sql` returns: the records, and the rows that could not be read.
pub async fn fetch_readable<T: FromRow>(
    conn: &(impl Queryable + ?Sized),
    sql: &str,
    params: impl libsql::params::IntoParams + Send,
) -> Result<(Vec<T>, Vec<Unreadable>), DbError> {
    let mut rows = conn.query_rows(sql, params).await?;
    let (mut out, mut unreadable) = (Vec::new(), Vec::new());
    while let Some(row) = rows.next().await? {
        match T::from_row(&row) {
            Ok(record) => out.push(record),
            Err(err) => unreadable.push(Unreadable::of::<T>(&row, &err)),
        }
    }
    Ok((out, unreadable))
}

/// The first row `sql` returns, as a record; `None` when there is none.
pub async fn fetch_optional<T: FromRow>(
    conn: &(impl Queryable + ?Sized),
    sql: &str,
    params: impl libsql::params::IntoParams + Send,
) -> Result<Option<T>, DbError> {
    let mut rows = conn.query_rows(sql, params).await?;
    let first = match rows.next().await? {
        Some(row) => T::from_row(&row)?,
        None => return Ok(None),
    };
    finish_rows(rows).await?;
    Ok(Some(first))
}

/// A stored text column read as one of a closed set of names (see `text_enum!`).
pub fn text_column<T: std::str::FromStr<Err = String>>(
    row: &libsql::Row,
    index: i32,
    what: &str,
) -> Result<T, DbError> {
    let text: String = row.get(index)?;
    text.parse().map_err(|reason| DbError::Corrupt {
        what: what.to_string(),
        reason,
    })
}

/// A stored JSON column read as `T`.
pub fn json_column<T: serde::de::DeserializeOwned>(
    row: &libsql::Row,
    index: i32,
    what: &str,
) -> Result<T, DbError> {
    let text: String = row.get(index)?;
    serde_json::from_str(&text).map_err(|e| DbError::Corrupt {
        what: what.to_string(),
        reason: e.to_string(),
    })
}

/// Moves the schedules' change counter inside `tx`: every worker, in any process, looks
/// at the schedules and runs again at its next change check (the schedules' own triggers
/// move it for their rows; this is for changes elsewhere a worker must act on: an
/// approval answered, a cancel asked).
pub async fn tell_workers_to_look(tx: &WriteTx) -> Result<(), libsql::Error> {
    tx.execute(
        "UPDATE meta SET value = CAST(CAST(value AS BIGINT) + 1 AS TEXT) WHERE key = 'schedules_version'",
        (),
    )
    .await?;
    Ok(())
}

/// The first column of the first row; `None` when there is no row or the value is NULL.
pub async fn query_scalar<T: Scalar>(
    conn: &(impl Queryable + ?Sized),
    sql: &str,
    params: impl libsql::params::IntoParams + Send,
) -> Result<Option<T>, libsql::Error> {
    let value = query_first_row(conn, sql, params, |row| row.get_value(0)).await?;
    Ok(value.and_then(T::from_value))
}

/// A grouped count by a bucket's index (an hour or a day of a span; negative for before
/// it): `SELECT index, count(*) … GROUP BY 1`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IndexedCount(pub i64, pub i64);

impl FromRow for IndexedCount {
    const COLUMNS: &'static str = "";

    fn from_row(row: &libsql::Row) -> Result<Self, DbError> {
        Ok(IndexedCount(row.get(0)?, row.get(1)?))
    }
}
