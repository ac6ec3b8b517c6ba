//! How statements reach a connection: against a server, through the statements the
//! connection has already described, on a stream the server still keeps; outside a
//! transaction, after this process's turn to write.

use std::sync::Arc;

use super::server_stream::ServerStream;
use super::write_gate::{take_turn, Lane, WriteGate};

/// Statements a server connection has already described, by SQL text (see
/// [`Runner::query`]). At most this many are kept per connection.
const MAX_DESCRIBED: usize = 128;

/// The connection statements run on, by engine.
#[derive(Clone)]
pub(super) enum Link {
    Libsql(libsql::Connection),
    Postgres(super::postgres::Session),
}

/// A connection as statements run on it: the libsql connection, against a server the
/// statements it has described, and, outside a transaction, this process's turn to write.
/// Cheap to clone (all shared handles).
#[derive(Clone)]
pub struct Runner {
    pub(super) link: Link,
    /// `None` on a local file or replica, and inside libsql's transaction (through a
    /// replica), whose stream is its own.
    pub(super) stream: Option<ServerStream>,
    /// `None` on a local file, and inside a [`WriteTx`](super::WriteTx) (which holds the turn).
    pub(super) write_gate: Option<WriteGate>,
    /// On a local file outside a transaction: the connection's busy timeout, how long a
    /// write may wait for another process's write lock (see [`super::lock_wait`]).
    pub(super) local_busy: Option<std::time::Duration>,
}

impl Runner {
    pub(super) fn new(
        conn: libsql::Connection,
        stream: Option<ServerStream>,
        write_gate: Option<WriteGate>,
        local_busy: Option<std::time::Duration>,
    ) -> Self {
        Self {
            link: Link::Libsql(conn),
            stream,
            write_gate,
            local_busy,
        }
    }

    /// The connection of libsql's transaction (on a replica): it holds the turn to write,
    /// and its stream is its own, so nothing is kept described on it.
    pub(super) fn in_transaction(conn: libsql::Connection) -> Self {
        Self {
            link: Link::Libsql(conn),
            stream: None,
            write_gate: None,
            local_busy: None,
        }
    }

    /// A PostgreSQL session (outside or inside a transaction: the session knows).
    pub(super) fn postgres(session: super::postgres::Session) -> Self {
        Self {
            link: Link::Postgres(session),
            stream: None,
            write_gate: None,
            local_busy: None,
        }
    }

    /// On PostgreSQL (where some statements are written differently).
    pub fn is_postgres(&self) -> bool {
        matches!(self.link, Link::Postgres(_))
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
        let conn = match &self.link {
            Link::Libsql(conn) => conn,
            Link::Postgres(session) => return session.query(sql, params.into_params()?).await,
        };
        let Some(stream) = &self.stream else {
            return conn.query(sql, params).await;
        };
        let params = params.into_params()?;
        match self.query_on(stream, sql, params.clone()).await {
            // A read the server interrupted is tried once more, on the new stream the
            // failure started. sqld 0.24 was seen to interrupt the first read on a
            // connection after another connection changed the schema (a worker's first
            // read after migrating a fresh database: ~1 start in 16 on a loaded machine).
            // It also interrupted the statement after a query whose response the client
            // cut off unread; the vendored libsql reads every response to its end now
            // (`vendor/README.md`), and this retry stays for whatever else does it.
            Err(err) if err.to_string().contains("SQLITE_INTERRUPT") => {
                tracing::debug!(%err, "the server interrupted a read; reading again");
                self.query_on(stream, sql, params).await
            }
            result => result,
        }
    }

    async fn query_on(
        &self,
        stream: &ServerStream,
        sql: &str,
        params: libsql::params::Params,
    ) -> Result<libsql::Rows, libsql::Error> {
        self.keep_stream_fresh(stream).await;
        let known = stream.described().get(sql).cloned();
        let statement = match known {
            Some(statement) => statement,
            None => {
                let statement = self.prepare(sql).await;
                let statement = Arc::new(self.forget_stream_after(statement).await?);
                let mut described = stream.described();
                if described.len() >= MAX_DESCRIBED {
                    described.clear();
                }
                described.insert(sql.to_string(), statement.clone());
                statement
            }
        };
        let rows = statement.query(params).await;
        self.forget_stream_after(rows).await
    }

    /// Runs one statement. Outside a transaction, against a server, it takes this
    /// process's turn to write first, like a [`WriteTx`](super::WriteTx): a
    /// single-statement write waits at the server for the write lock just as a
    /// transaction does, and under a long queue sqld answers `SQLITE_BUSY` to waiters it
    /// keeps queued (see `db::write_tx`).
    pub async fn execute(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<u64, libsql::Error> {
        self.execute_in(Lane::Queue, sql, params).await
    }

    /// As [`Runner::execute`], behind at most one other write of this process: for a
    /// write that keeps a held run alive, which must not wait out a long queue of writes.
    pub async fn execute_ahead(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<u64, libsql::Error> {
        self.execute_in(Lane::Ahead, sql, params).await
    }

    async fn execute_in(
        &self,
        lane: Lane,
        sql: &str,
        params: impl libsql::params::IntoParams,
    ) -> Result<u64, libsql::Error> {
        let conn = match &self.link {
            Link::Libsql(conn) => conn,
            // A lease renewal waits for no queue of this process's: PostgreSQL orders
            // writers by its own lock.
            Link::Postgres(session) => return session.execute(sql, params.into_params()?).await,
        };
        let _turn = take_turn(self.write_gate.as_ref(), lane).await;
        if let Some(busy) = self.local_busy {
            let params = params.into_params()?;
            return super::lock_wait::writing(conn, busy, || conn.execute(sql, params.clone()))
                .await;
        }
        let Some(stream) = &self.stream else {
            return conn.execute(sql, params).await;
        };
        // After the turn: the wait for it may have outlasted the stream.
        self.keep_stream_fresh(stream).await;
        let result = conn.execute(sql, params).await;
        self.forget_stream_after(result).await
    }

    /// Before a request on a server stream: a stream idle past [`STREAM_REUSE`] (a pooled
    /// connection, or one a task held while it waited on something else) may have been
    /// ended by the server, so the request starts a new one. Only outside a transaction
    /// (see [`Runner::new_stream_if`]): a transaction's stream is never idle that long
    /// but by a fault, and starting another would lose the transaction unseen.
    async fn keep_stream_fresh(&self, stream: &ServerStream) {
        self.new_stream_if(stream.touch()).await;
    }

    /// After a failed request on a server stream, starts the next one on a new stream:
    /// the failure may have been the server going away or restarting, and the old
    /// stream's baton would then fail every later statement, for as long as the
    /// connection is reused.
    async fn forget_stream_after<T>(
        &self,
        result: Result<T, libsql::Error>,
    ) -> Result<T, libsql::Error> {
        self.new_stream_if(result.is_err()).await;
        result
    }

    /// Drops the connection's stream (its next request opens a new one) when `needed`,
    /// and never inside a transaction, whose state lives on its stream.
    async fn new_stream_if(&self, needed: bool) {
        if let Link::Libsql(conn) = &self.link {
            if needed && conn.is_autocommit() {
                conn.reset().await;
            }
        }
    }

    /// Prepares a statement on this connection, for a caller that runs it many times (a
    /// local file's writer). Not on a server: there a connection keeps what it described.
    pub(crate) async fn prepare(&self, sql: &str) -> Result<libsql::Statement, libsql::Error> {
        match &self.link {
            Link::Libsql(conn) => conn.prepare(sql).await,
            // PostgreSQL's pool keeps each connection's prepared statements itself.
            Link::Postgres(_) => Err(libsql::Error::Misuse(
                "statements are prepared by the pool on PostgreSQL".into(),
            )),
        }
    }

    /// The libSQL connection, for what only libSQL does (a migration's script runs on
    /// either engine through [`Runner::execute_script`]).
    pub(super) fn libsql(&self) -> Option<&libsql::Connection> {
        match &self.link {
            Link::Libsql(conn) => Some(conn),
            Link::Postgres(_) => None,
        }
    }

    /// Runs a script of statements without parameters (a migration's).
    pub(super) async fn execute_script(&self, sql: &str) -> Result<(), libsql::Error> {
        match &self.link {
            Link::Libsql(conn) => conn.execute_batch(sql).await.map(|_| ()),
            Link::Postgres(session) => session.execute_batch(sql).await,
        }
    }
}
