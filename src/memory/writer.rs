//! Group commit for appends. A commit costs about as much as the pages it writes, and an
//! appended event touches several (event, chunk, embed queue, their indexes). Appends
//! from concurrent callers are therefore queued to one writer task, which commits all that
//! are waiting in one transaction, each inside its own savepoint so one caller's failure
//! never undoes another's work. A lone caller still gets its own prompt commit.

use tokio::sync::{mpsc, oneshot};

use super::events::create_session;
use super::index::{
    chunk_context, ChunkOwner, ChunkSource, ChunkWriter, PreparedChunk, RowShape, RowsSql, Sql,
};
use super::{MemoryError, NewEvent, Result, SessionKey};
use crate::db::{Conn, Db, Runner};

/// Jobs committed together at most; bounds how long the write lock is held.
const MAX_JOBS_PER_COMMIT: usize = 128;
/// Events committed together at most.
const MAX_EVENTS_PER_COMMIT: usize = 2_000;
/// Appends queued before callers wait for room (back-pressure).
const QUEUE_DEPTH: usize = 1_024;

/// Validated and chunked events for one session, ready to write.
pub(super) struct Append {
    /// The user's session the events go to.
    pub key: SessionKey,
    pub events: Vec<NewEvent>,
    pub prepared: Vec<Vec<PreparedChunk>>,
    pub now: i64,
}

/// What an append stored: its events' sequences, and how many chunks it queued for the
/// embedder (none when every text was already stored: then there is nothing to wake it
/// for).
pub struct Appended {
    pub sequences: Vec<i64>,
    pub queued: usize,
}

/// An append queued to the writer task, with where its outcome goes.
pub(super) struct AppendJob {
    pub append: Append,
    pub reply: oneshot::Sender<Result<Appended>>,
}

/// Starts the writer task; it ends when every sender is dropped.
pub(super) fn spawn(db: Db, model: String) -> mpsc::Sender<AppendJob> {
    let (sender, receiver) = mpsc::channel(QUEUE_DEPTH);
    tokio::spawn(run(db, model, receiver));
    sender
}

/// The writer's statements on its connection. On a local file they are prepared once and
/// kept between commits; on a server they are made for each transaction, on the
/// transaction's own stream.
pub(super) struct Statements {
    /// Keeps the pooled connection while the statements live (local only).
    _pooled: Option<Conn>,
    conn: Runner,
    take_sequences: Sql,
    insert_events: RowsSql,
    chunks: ChunkWriter,
}

impl Statements {
    async fn prepare(db: &Db, model: &str) -> Result<Self> {
        let pooled = db.conn().await?;
        let mut statements = Self::on(&pooled.runner(), model, true).await?;
        statements._pooled = Some(pooled);
        Ok(statements)
    }

    pub(super) async fn on(conn: &Runner, model: &str, prepare: bool) -> Result<Self> {
        Ok(Self {
            _pooled: None,
            // Takes the sequences for the append's events from the session, if it exists,
            // and returns the last one before them with that event's content (the context
            // of the first chunks appended): one statement, where a read and a write would
            // be two round trips holding a server's write lock.
            take_sequences: Sql::new(
                conn,
                "UPDATE sessions SET last_sequence = last_sequence + ?3, updated_at = ?4
                 WHERE session_id = ?1 AND user_id = ?2
                 RETURNING last_sequence - ?3,
                           (SELECT content FROM events
                            WHERE session_id = ?1 AND sequence = last_sequence - ?3)",
                prepare,
            )
            .await?,
            // Shared: ?1 session; a row: sequence, role, content, payload, importance,
            // created_at, name.
            insert_events: RowsSql::new(
                conn,
                "INSERT INTO events (session_id, sequence, role, content, payload_json, importance, created_at, name)
                 VALUES {rows}",
                1,
                RowShape {
                    prefix: "?1, ",
                    width: 7,
                    suffix: "",
                },
                prepare,
            )
            .await?,
            chunks: ChunkWriter::prepare(conn, model, prepare).await?,
            conn: conn.clone(),
        })
    }
}

async fn run(db: Db, model: String, mut receiver: mpsc::Receiver<AppendJob>) {
    // Against a libSQL server each append is its own transaction: interactive
    // transactions there are streams with a deadline, not worth holding for a group.
    let local = db.is_local();
    let max_jobs = if local { MAX_JOBS_PER_COMMIT } else { 1 };
    let mut statements: Option<Statements> = None;
    while let Some(first) = receiver.recv().await {
        // Callers woken by the last commit are queued behind this task on its worker
        // thread; let them run and queue their next appends so they join this commit.
        tokio::task::yield_now().await;
        let mut events = first.append.events.len();
        let mut jobs = vec![first];
        while jobs.len() < max_jobs && events < MAX_EVENTS_PER_COMMIT {
            match receiver.try_recv() {
                Ok(job) => {
                    events += job.append.events.len();
                    jobs.push(job);
                }
                Err(_) => break,
            }
        }
        if !local {
            let outcome = write_remote(&db, &model, &jobs).await;
            reply(jobs, outcome);
            continue;
        }
        let outcome = match statements.take() {
            Some(prepared) => Ok(prepared),
            None => Statements::prepare(&db, &model).await,
        };
        let outcome = match outcome {
            Ok(prepared) => {
                let result = write_group(&prepared, &jobs).await;
                // After a failed commit, start over on a fresh connection.
                if result.is_ok() {
                    statements = Some(prepared);
                }
                result
            }
            Err(err) => Err(err),
        };
        reply(jobs, outcome);
    }
}

fn reply(jobs: Vec<AppendJob>, outcome: Result<Vec<Result<Appended>>>) {
    match outcome {
        Ok(results) => {
            for (job, result) in jobs.into_iter().zip(results) {
                // A caller that stopped waiting still had its events stored.
                let _ = job.reply.send(result);
            }
        }
        Err(err) => {
            // The transaction as a whole failed: nothing of any job was stored.
            let message = err.to_string();
            let mut jobs = jobs.into_iter();
            if let Some(job) = jobs.next() {
                let _ = job.reply.send(Err(err));
            }
            for job in jobs {
                let _ = job
                    .reply
                    .send(Err(MemoryError::WriteFailed(message.clone())));
            }
        }
    }
}

/// One append in one transaction on a libSQL server, its statements on the transaction's
/// stream.
async fn write_remote(db: &Db, model: &str, jobs: &[AppendJob]) -> Result<Vec<Result<Appended>>> {
    let conn = db.conn().await?;
    // Its first statement takes the session's sequences: a write.
    let tx = conn.write_tx_writing_first().await?;
    let statements = Statements::on(&tx.runner(), model, false).await?;
    let job = jobs.first().expect("a group has a job");
    let result = append_in_tx(&statements, &job.append).await;
    drop(statements);
    if result.is_ok() {
        tx.commit().await?;
    } else {
        tx.rollback().await?;
    }
    Ok(vec![result])
}

/// One transaction for the group; per-job results, or the error that sank them all.
async fn write_group(statements: &Statements, jobs: &[AppendJob]) -> Result<Vec<Result<Appended>>> {
    let tx = statements.conn.write_tx().await?;
    let mut results = Vec::with_capacity(jobs.len());
    for job in jobs {
        tx.execute("SAVEPOINT append_job", ()).await?;
        let result = append_in_tx(statements, &job.append).await;
        if let Err(err) = result {
            if tx.execute("ROLLBACK TO append_job", ()).await.is_err() {
                // The failure ended the whole transaction (SQLite rolls it back on an I/O
                // error or a full disk): report it, not the savepoint it took along.
                return Err(err);
            }
            tx.execute("RELEASE append_job", ()).await?;
            results.push(Err(err));
            continue;
        }
        tx.execute("RELEASE append_job", ()).await?;
        results.push(result);
    }
    tx.commit().await?;
    Ok(results)
}

pub(super) async fn append_in_tx(statements: &Statements, job: &Append) -> Result<Appended> {
    let session_id = job.key.as_str();
    let (last, previous) = session_sequence(statements, job).await?;
    let sequences: Vec<i64> = (last + 1..).take(job.events.len()).collect();
    // Each event's chunks carry the end of the event before it as context.
    let mut context = previous.as_deref().map(chunk_context).unwrap_or_default();
    let contexts: Vec<String> = job
        .events
        .iter()
        .map(|event| std::mem::replace(&mut context, chunk_context(&event.content)))
        .collect();
    let rows: Vec<Vec<libsql::Value>> = job
        .events
        .iter()
        .zip(&sequences)
        .map(|(event, &sequence)| {
            let payload = event
                .payload
                .as_ref()
                .map_or_else(|| "{}".to_string(), |p| p.to_string());
            vec![
                libsql::Value::Integer(sequence),
                libsql::Value::Text(event.role.as_str().to_string()),
                libsql::Value::Text(event.content.clone()),
                libsql::Value::Text(payload),
                libsql::Value::Real(event.importance.unwrap_or(event.role.default_importance())),
                libsql::Value::Integer(event.created_at.unwrap_or(job.now)),
                event
                    .name
                    .clone()
                    .map_or(libsql::Value::Null, libsql::Value::Text),
            ]
        })
        .collect();
    statements
        .insert_events
        .execute(&[libsql::Value::Text(session_id.to_string())], &rows)
        .await?;
    let sources: Vec<ChunkSource> = job
        .events
        .iter()
        .zip(&job.prepared)
        .zip(&sequences)
        .zip(&contexts)
        .map(|(((event, chunks), &sequence), context)| ChunkSource {
            sequence,
            created_at: event.created_at.unwrap_or(job.now),
            role: Some(event.role.as_str()),
            context,
            chunks,
        })
        .collect();
    let owner = ChunkOwner {
        session_id,
        user_id: job.key.user_id(),
        note_id: None,
    };
    let queued = statements.chunks.write(&owner, &sources).await?;
    Ok(Appended { sequences, queued })
}

/// Takes the next sequences of the session for the job's events, creating the session
/// on first use: returns the last sequence before them and that event's content. The
/// session is the user's by its key: another user's of the same id is another session.
async fn session_sequence(statements: &Statements, job: &Append) -> Result<(i64, Option<String>)> {
    let session_id = job.key.as_str();
    let take = || {
        libsql::params![
            session_id,
            job.key.user_id(),
            job.events.len() as i64,
            job.now
        ]
    };
    let taken = |row: Option<Vec<libsql::Value>>| {
        row.and_then(|row| {
            let mut columns = row.into_iter();
            match (columns.next(), columns.next()) {
                (Some(libsql::Value::Integer(last)), Some(libsql::Value::Text(content))) => {
                    Some((last, Some(content)))
                }
                (Some(libsql::Value::Integer(last)), _) => Some((last, None)),
                _ => None,
            }
        })
    };
    if let Some(found) = taken(statements.take_sequences.first_row(take()).await?) {
        return Ok(found);
    }
    // None yet: created here, in this transaction, with no event before the first one
    // appended.
    create_session(&statements.conn, &job.key, job.now).await?;
    taken(statements.take_sequences.first_row(take()).await?).ok_or_else(|| {
        MemoryError::WriteFailed(format!("session `{}` was not there once created", job.key))
    })
}
