//! Writing the derived index: chunks (the keyword index reads them) and vectors.
//! Chunking happens before the write transaction opens; only SQL runs inside. Ordinary
//! writes queue their chunks for the background embedder (`embed_queue`), so a write never
//! waits for the model; a rebuild embeds first and writes chunks with their vectors.

use super::{chunk_text, Memory, Result};
use crate::db::Runner;
use crate::embed::vectors_to_blob;

/// A chunk ready to be written: its text, content hash and, when already embedded, its
/// vector blob (otherwise it is queued for the background embedder).
pub(super) struct PreparedChunk {
    text: String,
    hash: String,
    vector: Option<Vec<u8>>,
}

/// Where chunks belong.
pub(super) struct ChunkOwner<'a> {
    pub session_id: &'a str,
    pub user_id: &'a str,
    pub note_id: Option<&'a str>,
}

/// The chunks of one text (an event, a note) with where that text stands.
#[derive(Clone, Copy)]
pub(super) struct ChunkSource<'a> {
    pub sequence: i64,
    pub created_at: i64,
    /// The role of the turn (`None` for a note), kept with each chunk so that search
    /// tells the user's turns from the assistant's without reading the event.
    pub role: Option<&'a str>,
    /// What came just before in the session (see [`chunk_context`]); empty for notes.
    pub context: &'a str,
    pub chunks: &'a [PreparedChunk],
}

/// Characters of the previous event kept as a chunk's context: enough for the question
/// a reply answers, short enough that the chunk's own text stays inside the model's window.
pub const CONTEXT_CHARS: usize = 120;

/// A chunk's context: the end of the event before it in its session, whitespace
/// normalised.
pub(super) fn chunk_context(previous_event: &str) -> String {
    let normalized = crate::text::normalize_whitespace(previous_event);
    crate::text::tail_chars(&normalized, CONTEXT_CHARS).to_string()
}

/// What the embedder reads for a chunk: its context, then its text.
pub(super) fn embedding_input(context: &str, text: &str) -> String {
    if context.is_empty() {
        text.to_string()
    } else {
        format!("{context}\n{text}")
    }
}

/// Everything the embedder reads for one chunk, in the order its vectors are stored: the
/// chunk with its context, then at most `sentences` of its sentences alone (a user's
/// chunk's, up to `memory.sentence_vectors`; 0 for any other: see [`super::sentences`]).
pub(super) fn vector_inputs(context: &str, text: &str, sentences: usize) -> Vec<String> {
    let mut inputs = vec![embedding_input(context, text)];
    inputs.extend(
        super::sentences::sentences(text, sentences)
            .into_iter()
            .map(str::to_string),
    );
    inputs
}

/// Embeds each chunk's inputs (`per_chunk`, from [`vector_inputs`]) in one call and
/// returns one blob a chunk: its vectors one after another.
pub(super) async fn embed_chunks(
    memory: &Memory,
    per_chunk: Vec<Vec<String>>,
) -> Result<Vec<Vec<u8>>> {
    let counts: Vec<usize> = per_chunk.iter().map(Vec::len).collect();
    let inputs: Vec<String> = per_chunk.into_iter().flatten().collect();
    let asked = inputs.len();
    let vectors = memory.embed_blocking(inputs).await?;
    // One vector short would shift every chunk after it onto another's vectors.
    if vectors.len() != asked {
        return Err(crate::embed::EmbedError::Failed(format!(
            "the embedder returned {} vectors for {asked} texts",
            vectors.len()
        ))
        .into());
    }
    let mut vectors = vectors.into_iter();
    Ok(counts
        .into_iter()
        .map(|n| vectors_to_blob(&vectors.by_ref().take(n).collect::<Vec<_>>()))
        .collect())
}

impl Memory {
    /// Chunks each text, to be embedded later by the queue; one entry per input text.
    pub(super) fn prepare_chunks(&self, texts: &[&str]) -> Vec<Vec<PreparedChunk>> {
        texts
            .iter()
            .map(|t| {
                chunk_text(t, self.limits.chunk_chars, self.limits.chunk_overlap_chars)
                    .into_iter()
                    .map(|text| PreparedChunk {
                        hash: blake3::hash(text.as_bytes()).to_hex().to_string(),
                        vector: None,
                        text,
                    })
                    .collect()
            })
            .collect()
    }

    /// Chunks and embeds each text with its context (on a blocking thread), for a rebuild
    /// that swaps a session's whole index in one transaction.
    /// `by_user[i]` says whether `texts[i]` is a user's turn, whose sentences are embedded
    /// on their own too.
    pub(super) async fn prepare_chunks_embedded(
        &self,
        texts: &[&str],
        contexts: &[String],
        by_user: &[bool],
    ) -> Result<Vec<Vec<PreparedChunk>>> {
        let mut per_text = self.prepare_chunks(texts);
        let inputs: Vec<Vec<String>> = per_text
            .iter()
            .zip(contexts)
            .zip(by_user)
            .flat_map(|((chunks, context), by_user)| {
                chunks
                    .iter()
                    .map(|c| vector_inputs(context, &c.text, self.sentences_of(*by_user)))
            })
            .collect();
        let blobs = embed_chunks(self, inputs).await?;
        for (chunk, blob) in per_text.iter_mut().flatten().zip(blobs) {
            chunk.vector = Some(blob);
        }
        Ok(per_text)
    }

    /// How many sentences of a chunk are embedded on their own: up to
    /// `memory.sentence_vectors` of a user's, none of anything else.
    pub(super) fn sentences_of(&self, by_user: bool) -> usize {
        if by_user {
            self.limits.sentence_vectors
        } else {
            0
        }
    }

    /// Runs the embedder on a blocking thread: model calls take milliseconds to seconds.
    pub(super) async fn embed_blocking(&self, texts: Vec<String>) -> Result<Vec<Vec<f32>>> {
        if self.embedder.is_cheap() {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            return Ok(self.embedder.embed(&refs)?);
        }
        let embedder = self.embedder.clone();
        tokio::task::spawn_blocking(move || {
            let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
            embedder.embed(&refs)
        })
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
        .map_err(Into::into)
    }
}

/// A statement run many times: prepared once on a local file (preparing costs about as
/// much as running); on a libSQL server run as text on the transaction's stream, where
/// the connection keeps what it has described (`db::Runner`). (A statement libsql
/// prepares outside a transaction would close the stream, and the transaction, when run.)
pub(super) enum Sql {
    Prepared(libsql::Statement),
    Text(Runner, &'static str),
}

impl Sql {
    pub(super) async fn new(conn: &Runner, sql: &'static str, prepare: bool) -> Result<Self> {
        Ok(if prepare {
            Sql::Prepared(conn.prepare(sql).await?)
        } else {
            Sql::Text(conn.clone(), sql)
        })
    }

    /// The first row's columns, as values.
    pub(super) async fn first_row(
        &self,
        params: impl libsql::params::IntoParams,
    ) -> Result<Option<Vec<libsql::Value>>> {
        let read = |mut rows: libsql::Rows| async move {
            let first = match rows.next().await? {
                Some(row) => row_values(&row)?,
                None => return Ok(None),
            };
            crate::db::finish_rows(rows).await?;
            Ok(Some(first))
        };
        match self {
            Sql::Prepared(statement) => {
                let result = match statement.query(params).await {
                    Ok(rows) => read(rows).await,
                    Err(e) => Err(e),
                };
                statement.reset();
                Ok(result?)
            }
            Sql::Text(conn, sql) => Ok(read(conn.query(sql, params).await?).await?),
        }
    }
}

/// Rows a multi-row statement carries at most (see [`RowsSql`]): far inside SQLite's
/// limit on parameters (32,766) at the widest row written (an event's, 7 parameters).
const ROWS_PER_STATEMENT: usize = 256;

/// One row of a multi-row statement's `VALUES`: `prefix`, then the row's own `width`
/// parameters (numbered after the statement's shared ones and the rows before it), then
/// `suffix`.
pub(super) struct RowShape {
    pub prefix: &'static str,
    pub width: usize,
    pub suffix: &'static str,
}

/// A statement over rows of values: its text has `{rows}` where the `VALUES` rows go,
/// and `shared` leading parameters (`?1`…) every row may use. On a local file it is
/// prepared for one row and run once a row (running a prepared statement costs less there
/// than preparing a longer one); on a server it carries up to [`ROWS_PER_STATEMENT`] rows
/// at once, since each statement is a network round trip, inside a transaction one that
/// holds the server's write lock, which every worker shares.
pub(super) enum RowsSql {
    Prepared {
        statement: libsql::Statement,
        shared: usize,
    },
    Text {
        conn: Runner,
        template: &'static str,
        shared: usize,
        shape: RowShape,
    },
}

impl RowsSql {
    pub(super) async fn new(
        conn: &Runner,
        template: &'static str,
        shared: usize,
        shape: RowShape,
        prepare: bool,
    ) -> Result<Self> {
        Ok(if prepare {
            let sql = Self::sql(template, shared, &shape, 1);
            RowsSql::Prepared {
                statement: conn.prepare(&sql).await?,
                shared,
            }
        } else {
            RowsSql::Text {
                conn: conn.clone(),
                template,
                shared,
                shape,
            }
        })
    }

    /// The statement's text for `rows` rows.
    fn sql(template: &str, shared: usize, shape: &RowShape, rows: usize) -> String {
        let values = (0..rows)
            .map(|row| {
                let first = shared + 1 + row * shape.width;
                format!(
                    "({}{}{})",
                    shape.prefix,
                    super::in_list::placeholders(first, shape.width),
                    shape.suffix
                )
            })
            .collect::<Vec<_>>()
            .join(", ");
        template.replace("{rows}", &values)
    }

    /// Runs it over `rows`, each with the `shared` values first.
    pub(super) async fn execute(
        &self,
        shared: &[libsql::Value],
        rows: &[Vec<libsql::Value>],
    ) -> Result<()> {
        self.run(shared, rows, false).await.map(|_| ())
    }

    /// Runs it over `rows` and returns every row it yields (its `RETURNING` rows).
    pub(super) async fn query(
        &self,
        shared: &[libsql::Value],
        rows: &[Vec<libsql::Value>],
    ) -> Result<Vec<Vec<libsql::Value>>> {
        self.run(shared, rows, true).await
    }

    async fn run(
        &self,
        shared: &[libsql::Value],
        rows: &[Vec<libsql::Value>],
        returning: bool,
    ) -> Result<Vec<Vec<libsql::Value>>> {
        let mut out = Vec::new();
        match self {
            RowsSql::Prepared {
                statement,
                shared: n,
            } => {
                debug_assert_eq!(shared.len(), *n);
                for row in rows {
                    let params: Vec<libsql::Value> = shared.iter().chain(row).cloned().collect();
                    let result = if returning {
                        match statement.query(params).await {
                            Ok(found) => read_rows(found, &mut out).await,
                            Err(e) => Err(e),
                        }
                    } else {
                        statement.execute(params).await.map(|_| ())
                    };
                    statement.reset();
                    result?;
                }
            }
            RowsSql::Text {
                conn,
                template,
                shared: n,
                shape,
            } => {
                debug_assert_eq!(shared.len(), *n);
                for group in rows.chunks(ROWS_PER_STATEMENT) {
                    let sql = Self::sql(template, *n, shape, group.len());
                    let params: Vec<libsql::Value> = shared
                        .iter()
                        .cloned()
                        .chain(group.iter().flatten().cloned())
                        .collect();
                    if returning {
                        read_rows(conn.query(&sql, params).await?, &mut out).await?;
                    } else {
                        conn.execute(&sql, params).await?;
                    }
                }
            }
        }
        Ok(out)
    }
}

/// Appends every row's columns, as values, to `out`.
async fn read_rows(
    mut rows: libsql::Rows,
    out: &mut Vec<Vec<libsql::Value>>,
) -> std::result::Result<(), libsql::Error> {
    while let Some(row) = rows.next().await? {
        out.push(row_values(&row)?);
    }
    Ok(())
}

/// A row's columns, as values.
fn row_values(row: &libsql::Row) -> std::result::Result<Vec<libsql::Value>, libsql::Error> {
    (0..row.column_count()).map(|i| row.get_value(i)).collect()
}

/// A distinct chunk text of one write: where it first and last appears.
struct PlannedChunk<'a> {
    chunk: &'a PreparedChunk,
    first: i64,
    last: i64,
    created_at: i64,
    role: Option<&'a str>,
    context: &'a str,
}

/// The statements that write chunks and their vectors.
pub(super) struct ChunkWriter {
    model: String,
    extend: RowsSql,
    insert: RowsSql,
    insert_vector: RowsSql,
    enqueue: RowsSql,
}

impl ChunkWriter {
    pub(super) async fn prepare(conn: &Runner, model: &str, prepare: bool) -> Result<Self> {
        Ok(Self {
            model: model.to_string(),
            // Finds the chunks of the same text and moves them on, in one statement (the
            // same text again is the common case: a schedule's goal, a short reply).
            // Shared: ?1 session, ?2 note; a row: hash, sequence.
            extend: RowsSql::new(
                conn,
                "WITH appended (hash, sequence) AS (VALUES {rows})
                 UPDATE chunks SET sequence_end = max(sequence_end, CAST(appended.sequence AS BIGINT))
                 FROM appended
                 WHERE chunks.session_id = ?1 AND chunks.note_id IS NOT DISTINCT FROM ?2
                   AND chunks.content_hash = appended.hash
                 RETURNING content_hash",
                2,
                RowShape {
                    prefix: "",
                    width: 2,
                    suffix: "",
                },
                prepare,
            )
            .await?,
            // Shared: ?1 session, ?2 user, ?3 note; a row: text, hash, first and last
            // sequence, created_at, context, role. `scope` fed FTS5 once and is left empty.
            insert: RowsSql::new(
                conn,
                "INSERT INTO chunks (session_id, user_id, note_id, scope, text, content_hash,
                                     sequence_start, sequence_end, created_at, context, role)
                 VALUES {rows} RETURNING content_hash, chunk_id",
                3,
                RowShape {
                    prefix: "?1, ?2, ?3, '', ",
                    width: 7,
                    suffix: "",
                },
                prepare,
            )
            .await?,
            // Shared: ?1 session, ?2 model; a row: chunk, embedding.
            insert_vector: RowsSql::new(
                conn,
                "INSERT INTO chunk_vectors (session_id, model, chunk_id, embedding) VALUES {rows}",
                2,
                RowShape {
                    prefix: "?1, ?2, ",
                    width: 2,
                    suffix: "",
                },
                prepare,
            )
            .await?,
            // A row: chunk.
            enqueue: RowsSql::new(
                conn,
                "INSERT INTO embed_queue (chunk_id, enqueued_at) VALUES {rows} ON CONFLICT DO NOTHING",
                0,
                RowShape {
                    prefix: "",
                    width: 1,
                    suffix: ", CAST(unixepoch('subsec') * 1000 AS BIGINT)",
                },
                prepare,
            )
            .await?,
        })
    }

    /// Writes the chunks of `sources` (in order) inside the caller's transaction. A chunk
    /// whose text the session (or note) already holds, or that came earlier in this
    /// write, is not stored twice: the existing one's `sequence_end` moves on. Returns
    /// how many chunks were queued for the embedder.
    pub(super) async fn write(
        &self,
        owner: &ChunkOwner<'_>,
        sources: &[ChunkSource<'_>],
    ) -> Result<usize> {
        let mut planned: Vec<PlannedChunk> = Vec::new();
        let mut by_hash: std::collections::HashMap<&str, usize> = Default::default();
        for source in sources {
            for chunk in source.chunks {
                match by_hash.get(chunk.hash.as_str()) {
                    Some(&at) => planned[at].last = planned[at].last.max(source.sequence),
                    None => {
                        by_hash.insert(chunk.hash.as_str(), planned.len());
                        planned.push(PlannedChunk {
                            chunk,
                            first: source.sequence,
                            last: source.sequence,
                            created_at: source.created_at,
                            role: source.role,
                            context: source.context,
                        });
                    }
                }
            }
        }
        if planned.is_empty() {
            return Ok(0);
        }
        let text = |s: &str| libsql::Value::Text(s.to_string());
        let note = owner.note_id.map_or(libsql::Value::Null, text);

        let rows: Vec<_> = planned
            .iter()
            .map(|p| vec![text(&p.chunk.hash), libsql::Value::Integer(p.last)])
            .collect();
        let extended = self
            .extend
            .query(&[text(owner.session_id), note.clone()], &rows)
            .await?;
        let held: std::collections::HashSet<String> = extended
            .into_iter()
            .filter_map(|row| match row.into_iter().next() {
                Some(libsql::Value::Text(hash)) => Some(hash),
                _ => None,
            })
            .collect();
        let new: Vec<&PlannedChunk> = planned
            .iter()
            .filter(|p| !held.contains(&p.chunk.hash))
            .collect();
        if new.is_empty() {
            return Ok(0);
        }

        let rows: Vec<_> = new
            .iter()
            .map(|p| {
                vec![
                    text(&p.chunk.text),
                    text(&p.chunk.hash),
                    libsql::Value::Integer(p.first),
                    libsql::Value::Integer(p.last),
                    libsql::Value::Integer(p.created_at),
                    text(p.context),
                    p.role.map_or(libsql::Value::Null, text),
                ]
            })
            .collect();
        let shared = [text(owner.session_id), text(owner.user_id), note];
        let inserted: std::collections::HashMap<String, i64> = self
            .insert
            .query(&shared, &rows)
            .await?
            .into_iter()
            .filter_map(|row| match row.as_slice() {
                [libsql::Value::Text(hash), libsql::Value::Integer(id)] => {
                    Some((hash.clone(), *id))
                }
                _ => None,
            })
            .collect();
        let chunk_id = |p: &PlannedChunk| {
            *inserted
                .get(&p.chunk.hash)
                .expect("INSERT … RETURNING yields each new row")
        };

        let (embedded, unembedded): (Vec<&PlannedChunk>, Vec<&PlannedChunk>) =
            new.into_iter().partition(|p| p.chunk.vector.is_some());
        let vectors: Vec<_> = embedded
            .iter()
            .map(|p| {
                vec![
                    libsql::Value::Integer(chunk_id(p)),
                    libsql::Value::Blob(p.chunk.vector.clone().unwrap_or_default()),
                ]
            })
            .collect();
        if !vectors.is_empty() {
            self.insert_vector
                .execute(&[text(owner.session_id), text(&self.model)], &vectors)
                .await?;
        }
        let queued: Vec<_> = unembedded
            .iter()
            .map(|p| vec![libsql::Value::Integer(chunk_id(p))])
            .collect();
        if !queued.is_empty() {
            self.enqueue.execute(&[], &queued).await?;
        }
        Ok(queued.len())
    }
}
