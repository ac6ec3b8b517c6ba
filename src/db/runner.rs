//! How statements reach a connection: against a server, through the statements the
//! connection has already described; outside a transaction, after this process's turn to
//! write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::Semaphore;

/// Statements a server connection has already described, by SQL text (see
/// [`Runner::query`]). At most this many are kept per connection.
const MAX_DESCRIBED: usize = 128;

/// A server connection's described statements, kept with the connection in the pool.
#[derive(Clone, Default)]
pub(super) struct Described(Arc<Mutex<HashMap<String, Arc<libsql::Statement>>>>);

/// A connection as statements run on it: the libsql connection, against a server the
/// statements it has described, and, outside a transaction, this process's turn to write.
/// Cheap to clone (all shared handles).
#[derive(Clone)]
pub struct Runner {
    pub(super) conn: libsql::Connection,
    pub(super) described: Option<Described>,
    /// `None` on a local file, and inside a [`WriteTx`](super::WriteTx) (which holds the turn).
    pub(super) write_gate: Option<Arc<Semaphore>>,
}

impl Runner {
    pub(super) fn new(
        conn: libsql::Connection,
        described: Option<Described>,
        write_gate: Option<Arc<Semaphore>>,
    ) -> Self {
        Self {
            conn,
            described,
            write_gate,
        }
    }

    /// A transaction's connection: it holds the turn to write, and its stream is its own,
    /// so nothing is kept described on it.
    pub(super) fn in_transaction(conn: libsql::Connection) -> Self {
        Self {
            conn,
            described: None,
            write_gate: None,
        }
    }

    /// Runs a query. libsql, against a server, sends every query twice: once to have it
    /// described (its column names), then to run it, and each request costs sqld about
    /// as much CPU as running a small query (~0.8 ms measured). So on a server a
    /// connection keeps the statements it has described and runs them again in one
    /// request. A described statement holds no state at the server (it is the SQL text
    /// and its columns), so keeping it is always safe.
    pub async fn query(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<libsql::Rows, libsql::Error> {
        let Some(described) = &self.described else {
            return self.conn.query(sql, params).await;
        };
        let known = described
            .0
            .lock()
            .expect("statement cache poisoned")
            .get(sql)
            .cloned();
        let statement = match known {
            Some(statement) => statement,
            None => {
                let statement = Arc::new(self.conn.prepare(sql).await?);
                let mut described = described.0.lock().expect("statement cache poisoned");
                if described.len() >= MAX_DESCRIBED {
                    described.clear();
                }
                described.insert(sql.to_string(), statement.clone());
                statement
            }
        };
        statement.query(params).await
    }

    /// Runs one statement. Outside a transaction, against a server, it takes this
    /// process's turn to write first, like a [`WriteTx`](super::WriteTx): a single-statement write waits
    /// at the server for the write lock just as a transaction does, and under a long queue
    /// sqld answers `SQLITE_BUSY` to waiters it keeps queued (see `db::write_tx`).
    pub async fn execute(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<u64, libsql::Error> {
        let _turn = super::write_tx::take_turn(self.write_gate.as_ref()).await;
        self.conn.execute(sql, params).await
    }

    pub fn connection(&self) -> &libsql::Connection {
        &self.conn
    }
}
