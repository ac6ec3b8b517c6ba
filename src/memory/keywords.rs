//! The keyword leg's index: each session's chunks as inverted [`Segment`]s in memory,
//! loaded lazily (from the session's stored `keyword_blocks`, then its newer chunk rows),
//! topped up with only the chunks added since (chunk ids only grow), reloaded whole after
//! any removal (the session's tag moves), and bounded by an LRU memory budget. Scoring
//! walks only the query terms' postings, so a search costs what its words hold, and the
//! statistics (chunk count, average length, each word's frequency) are those of the
//! sessions searched: no other user's memory weighs on a ranking.
//!
//! Blocks are derived, like the vector blocks: made when the embedder idles (or by
//! [`Memory::pack_keywords`]), one short transaction each, ignored when made before a
//! removal from their session or by another format.

use std::collections::HashMap;
use std::sync::Arc;

use super::blocks::BLOCK_ROWS;
use super::postings::{score_doc, score_segment, Bm25, Segment, TopK};
use super::session_lru::{DueSessions, SessionLru, Weighed};
use super::terms::{DocTerms, Field, Terms};
use super::vectors::SessionTag;
use super::{Memory, Result, SessionKey};

/// The layout of a stored block and the words it was made with ([`Terms`]): blocks of
/// another format are ignored and made again.
const FORMAT: i64 = 1;

/// Blocks (or attempts) one call of [`Memory::pack_keywords`] makes at most.
const MAX_PACK_PASSES: usize = 4096;

/// One session's chunks as the keyword index holds them.
#[derive(Clone)]
pub(super) struct SessionKeywords {
    tag: SessionTag,
    last_chunk_id: i64,
    segments: Vec<Arc<Segment>>,
    /// The newest chunks, fewer than a segment's worth, scored one by one.
    tail: Vec<(i64, DocTerms)>,
    total_length: u64,
    /// Chunks read from stored blocks (the rest from chunk rows).
    from_blocks: usize,
}

impl Weighed for SessionKeywords {
    fn bytes(&self) -> usize {
        let tail: usize = self
            .tail
            .iter()
            .map(|(_, d)| 40 + d.terms.capacity() * std::mem::size_of::<(u64, [u8; 2])>())
            .sum();
        self.segments.iter().map(|s| s.bytes()).sum::<usize>() + tail
    }
}

impl SessionKeywords {
    fn empty(tag: SessionTag, last_chunk_id: i64) -> Self {
        Self {
            tag,
            last_chunk_id,
            segments: Vec::new(),
            tail: Vec::new(),
            total_length: 0,
            from_blocks: 0,
        }
    }

    /// Chunks held.
    pub(super) fn rows(&self) -> usize {
        self.segments.iter().map(|s| s.rows()).sum::<usize>() + self.tail.len()
    }

    fn push_segment(&mut self, segment: Segment) {
        self.total_length += segment.total_length();
        self.segments.push(Arc::new(segment));
    }

    fn push_doc(&mut self, chunk_id: i64, doc: DocTerms) {
        self.total_length += u64::from(doc.length);
        self.tail.push((chunk_id, doc));
        if self.tail.len() == BLOCK_ROWS {
            let docs = std::mem::take(&mut self.tail);
            let segment = Segment::build(&docs);
            self.segments.push(Arc::new(segment));
        }
    }

    /// Adds chunks newer than any held, in order.
    fn push_docs(&mut self, docs: Vec<(i64, DocTerms)>) {
        for (chunk_id, doc) in docs {
            self.push_doc(chunk_id, doc);
            self.last_chunk_id = chunk_id;
        }
    }

    /// Appends what was loaded after this copy's last chunk.
    fn append(&mut self, newer: SessionKeywords) {
        self.from_blocks += newer.from_blocks;
        self.last_chunk_id = newer.last_chunk_id;
        for segment in newer.segments {
            // A stored block after this copy's tail: the tail is scored as it is, so
            // the order of chunks in memory does not matter.
            self.total_length += segment.total_length();
            self.segments.push(segment);
        }
        for (id, doc) in newer.tail {
            self.push_doc(id, doc);
        }
    }
}

/// How a session's cached keyword index was loaded: for diagnostics and benchmarks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CachedKeywords {
    pub rows: usize,
    /// Of them, chunks read from stored blocks.
    pub from_blocks: usize,
    pub bytes: usize,
}

pub(super) struct KeywordCache {
    /// The words this cache's indexes hold.
    field: Field,
    copies: SessionLru<SessionKeywords>,
    /// Sessions a search found with a block's worth of chunks not in stored blocks.
    pub(super) due: DueSessions,
}

impl KeywordCache {
    pub(super) fn new(field: Field, budget_bytes: usize) -> Self {
        Self {
            field,
            copies: SessionLru::new(budget_bytes),
            due: DueSessions::default(),
        }
    }

    pub(super) fn cached(&self, session_id: &str) -> Option<CachedKeywords> {
        self.copies.peek(session_id).map(|k| CachedKeywords {
            rows: k.rows(),
            from_blocks: k.from_blocks,
            bytes: k.bytes(),
        })
    }

    /// This session's keyword index, brought up to date with the database. `tag` is the
    /// session's as just read: a copy made at another is missing a removal (or is of an
    /// earlier session of that id) and is loaded again whole.
    pub(super) async fn current(
        &self,
        conn: &crate::db::Conn,
        session_id: &str,
        tag: SessionTag,
    ) -> Result<Arc<SessionKeywords>, libsql::Error> {
        let cached = self.copies.peek(session_id).filter(|c| c.tag == tag);
        let from = cached.as_ref().map_or(0, |c| c.last_chunk_id);
        let mut added = SessionKeywords::empty(tag, from);
        load_chain(conn, session_id, self.field, tag.removals, &mut added).await;
        added.from_blocks = added.rows();
        let mut rows = conn
            .query(
                "SELECT chunk_id, text, context FROM chunks
                 WHERE session_id = ?1 AND chunk_id > ?2 ORDER BY chunk_id",
                libsql::params![session_id, added.last_chunk_id],
            )
            .await?;
        // A block's worth of rows is indexed on a blocking thread while the next is read.
        let (mut batch, mut from_rows, mut indexing) = (Vec::new(), 0, None);
        while let Some(row) = rows.next().await? {
            batch.push(chunk_row(&row)?);
            if batch.len() == BLOCK_ROWS {
                from_rows += batch.len();
                let rows = std::mem::take(&mut batch);
                let field = self.field;
                let next = tokio::task::spawn_blocking(move || index_rows(rows, field));
                if let Some(done) = indexing.replace(next) {
                    added.push_docs(joined(done).await);
                }
            }
        }
        drop(rows);
        if let Some(done) = indexing {
            added.push_docs(joined(done).await);
        }
        from_rows += batch.len();
        added.push_docs(index_rows_off_worker(batch, self.field).await);
        if from_rows >= BLOCK_ROWS {
            self.due.note_due(session_id);
        }
        if added.last_chunk_id == from {
            if let Some(cached) = cached {
                return Ok(cached);
            }
        }
        let keywords = match cached {
            Some(_) => {
                // Only the copy these rows follow: another search may have replaced it
                // meanwhile with one of another tag or length.
                let arc = self
                    .copies
                    .take_if(session_id, |c| c.tag == tag && c.last_chunk_id == from);
                match arc {
                    Some(arc) => {
                        let mut keywords = Arc::try_unwrap(arc).unwrap_or_else(|a| (*a).clone());
                        keywords.append(added);
                        keywords
                    }
                    None => return Box::pin(self.current(conn, session_id, tag)).await,
                }
            }
            None => added,
        };
        let keywords = Arc::new(keywords);
        self.copies.put(session_id, keywords.clone());
        Ok(keywords)
    }
}

/// Adds to `into` the chunks of `session_id`'s stored blocks made at `removals`, in
/// order, starting with the block after its last chunk, for as long as they follow one
/// another and read whole. A block that cannot be read or is not one a packer writes
/// ends the chain: the chunk rows after it are read instead.
async fn load_chain(
    conn: &crate::db::Conn,
    session_id: &str,
    field: Field,
    removals: i64,
    into: &mut SessionKeywords,
) {
    let rows = conn
        .query(
            "SELECT after_chunk_id, last_chunk_id, row_count, postings FROM keyword_blocks
             WHERE session_id = ?1 AND field = ?5 AND removals = ?2 AND format = ?3
               AND after_chunk_id >= ?4
             ORDER BY after_chunk_id",
            libsql::params![
                session_id,
                removals,
                FORMAT,
                into.last_chunk_id,
                field.stored()
            ],
        )
        .await;
    let Ok(mut rows) = rows else {
        return;
    };
    while let Ok(Some(row)) = rows.next().await {
        let read = (
            row.get::<i64>(0),
            row.get::<i64>(1),
            row.get::<i64>(2),
            row.get::<Vec<u8>>(3),
        );
        let (Ok(after), Ok(last), Ok(count), Ok(bytes)) = read else {
            break;
        };
        let Some(segment) = Segment::decode(&bytes) else {
            break;
        };
        let ids = segment.chunk_ids();
        let follows = after == into.last_chunk_id
            && usize::try_from(count) == Ok(segment.rows())
            && ids.first().is_some_and(|first| *first > after)
            && ids.last() == Some(&last);
        if !follows {
            break;
        }
        into.last_chunk_id = last;
        into.push_segment(segment);
    }
}

/// A chunk row as read for the index: id, text, context.
type ChunkRow = (i64, String, String);

fn chunk_row(row: &libsql::Row) -> Result<ChunkRow, libsql::Error> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?))
}

/// The terms of `rows` in `field`.
fn index_rows(rows: Vec<ChunkRow>, field: Field) -> Vec<(i64, DocTerms)> {
    let mut terms = Terms::default();
    rows.into_iter()
        .map(|(id, text, context)| (id, terms.doc(&text, &context, field)))
        .collect()
}

/// [`index_rows`], a few inline, more on a blocking thread (stemming a block's worth takes
/// tens of milliseconds, too long to hold an async worker).
async fn index_rows_off_worker(rows: Vec<ChunkRow>, field: Field) -> Vec<(i64, DocTerms)> {
    if rows.len() < INLINE_ROWS {
        return index_rows(rows, field);
    }
    joined(tokio::task::spawn_blocking(move || index_rows(rows, field))).await
}

/// A blocking task's result; its panic, a bug, goes on in the caller.
async fn joined<T>(task: tokio::task::JoinHandle<T>) -> T {
    task.await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

/// Chunk rows indexed on the async worker itself: a search's usual top-up.
const INLINE_ROWS: usize = 256;

/// The `k` chunks of the copies best matching `terms` by bm25 over them all, best first;
/// with `among`, the best of those chunks only (scored as among them all).
pub(super) fn best_matches(
    copies: &[Arc<SessionKeywords>],
    terms: &[u64],
    k: usize,
    context_weight: f64,
    among: Option<Arc<std::collections::HashSet<i64>>>,
) -> Vec<(i64, f64)> {
    let chunks: usize = copies.iter().map(|c| c.rows()).sum();
    let total_length: u64 = copies.iter().map(|c| c.total_length).sum();
    let holding: Vec<usize> = terms
        .iter()
        .map(|term| {
            copies
                .iter()
                .map(|c| {
                    let in_segments: usize = c.segments.iter().map(|s| s.count(*term)).sum();
                    let in_tail = c
                        .tail
                        .iter()
                        .filter(|(_, d)| d.terms.binary_search_by_key(term, |(t, _)| *t).is_ok())
                        .count();
                    in_segments + in_tail
                })
                .sum()
        })
        .collect();
    let bm25 = Bm25::new(&holding, chunks, total_length, context_weight);
    let mut top = match among {
        Some(among) => TopK::among(k, among),
        None => TopK::new(k),
    };
    let mut scratch = vec![0.0; BLOCK_ROWS];
    for copy in copies {
        for segment in &copy.segments {
            score_segment(segment, terms, &bm25, &mut scratch, &mut top);
        }
        for (chunk_id, doc) in &copy.tail {
            score_doc(*chunk_id, doc, terms, &bm25, &mut top);
        }
    }
    top.into_sorted()
}

impl Memory {
    /// The cache of the indexes of `field`.
    pub(super) fn keyword_cache(&self, field: Field) -> &KeywordCache {
        match field {
            Field::Words => &self.keywords,
            Field::StopWords => &self.stop_words,
        }
    }

    /// Packs `session_id`'s chunks into stored keyword blocks of its words (stop words
    /// aside), as many whole blocks as there are chunks past its last block (blocks made
    /// before a removal from the session, or by another format, are dropped and made
    /// again). Returns how many blocks it made.
    pub async fn pack_keywords(&self, key: &SessionKey) -> Result<usize> {
        self.pack_keyword_field(key.as_str(), Field::Words).await
    }

    /// Packs one field's blocks ([`Memory::pack_keywords`] for the words; the embedder
    /// packs a session's stop words when a search by them read a block's worth of rows).
    /// Each block's chunks are read and indexed outside any transaction; a short write
    /// transaction then checks that the session and its chain are as they were read and
    /// stores the block.
    pub(super) async fn pack_keyword_field(&self, session_id: &str, field: Field) -> Result<usize> {
        let mut made = 0;
        for _ in 0..MAX_PACK_PASSES {
            let conn = self.db.conn().await?;
            let Some(tag) = super::vectors::tag_of(&conn, session_id).await? else {
                return Ok(made);
            };
            let chain_end = "SELECT coalesce(max(last_chunk_id), 0) FROM keyword_blocks
                 WHERE session_id = ?1 AND field = ?4 AND removals = ?2 AND format = ?3";
            let chain_params = || libsql::params![session_id, tag.removals, FORMAT, field.stored()];
            let after: i64 = crate::db::query_scalar(&conn, chain_end, chain_params())
                .await?
                .unwrap_or(0);
            let mut rows = conn
                .query(
                    "SELECT chunk_id, text, context FROM chunks
                     WHERE session_id = ?1 AND chunk_id > ?2 ORDER BY chunk_id LIMIT ?3",
                    libsql::params![session_id, after, BLOCK_ROWS as i64],
                )
                .await?;
            let mut read = Vec::with_capacity(BLOCK_ROWS);
            while let Some(row) = rows.next().await? {
                read.push(chunk_row(&row)?);
            }
            drop(rows);
            let docs = index_rows_off_worker(read, field).await;
            let tx = conn.write_tx().await?;
            if super::vectors::tag_of(&tx, session_id).await? != Some(tag) {
                tx.rollback().await?;
                continue;
            }
            // Stale blocks of either field: a removal outdates both.
            tx.execute(
                "DELETE FROM keyword_blocks WHERE session_id = ?1
                 AND (removals <> ?2 OR format <> ?3)",
                libsql::params![session_id, tag.removals, FORMAT],
            )
            .await?;
            let Some(last) = docs
                .last()
                .map(|(id, _)| *id)
                .filter(|_| docs.len() == BLOCK_ROWS)
            else {
                tx.commit().await?;
                return Ok(made);
            };
            let now: Option<i64> = crate::db::query_scalar(&tx, chain_end, chain_params()).await?;
            if now.unwrap_or(0) != after {
                tx.rollback().await?;
                continue;
            }
            let segment = Segment::build(&docs);
            tx.execute(
                "INSERT INTO keyword_blocks (session_id, after_chunk_id, last_chunk_id,
                     removals, format, row_count, postings, field)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                libsql::params![
                    session_id,
                    after,
                    last,
                    tag.removals,
                    FORMAT,
                    segment.rows() as i64,
                    segment.encode(),
                    field.stored()
                ],
            )
            .await?;
            tx.commit().await?;
            made += 1;
        }
        Ok(made)
    }

    /// How `session_id`'s keyword index (of its words, stop words aside) is held in this
    /// process's cache, if it is.
    pub fn cached_keywords(&self, key: &SessionKey) -> Option<CachedKeywords> {
        self.keywords.cached(key.as_str())
    }

    /// As [`Memory::cached_keywords`], for the index of the session's stop words.
    pub fn cached_stop_words(&self, key: &SessionKey) -> Option<CachedKeywords> {
        self.stop_words.cached(key.as_str())
    }

    /// The keyword leg alone for one session, through the index: the `k` best chunk ids
    /// by bm25, best first. `None` when the query has no word. For benchmarks and tests.
    pub async fn keyword_leg(
        &self,
        key: &SessionKey,
        query: &str,
        k: usize,
    ) -> Result<Option<Vec<(i64, f64)>>> {
        let session_id = key.as_str();
        let Some((field, terms)) = Terms::default().query(query) else {
            return Ok(None);
        };
        let conn = self.db.conn().await?;
        let Some(tag) = super::vectors::tag_of(&conn, session_id).await? else {
            return Ok(Some(Vec::new()));
        };
        let copy = self
            .keyword_cache(field)
            .current(&conn, session_id, tag)
            .await?;
        Ok(Some(best_matches(
            &[copy],
            &terms,
            k,
            self.search.context_weight,
            None,
        )))
    }

    /// The same ranking as [`Memory::keyword_leg`] for each of `queries`, computed from
    /// scratch from every chunk row of the session (read once), no index, no cache: the
    /// reference the index is checked against.
    pub async fn keyword_leg_exhaustive(
        &self,
        key: &SessionKey,
        queries: &[&str],
        k: usize,
    ) -> Result<Vec<Option<Vec<(i64, f64)>>>> {
        let session_id = key.as_str();
        let mut terms = Terms::default();
        let conn = self.db.conn().await?;
        let mut rows = conn
            .query(
                "SELECT chunk_id, text, context FROM chunks WHERE session_id = ?1",
                [session_id],
            )
            .await?;
        let mut chunks: Vec<ChunkRow> = Vec::new();
        while let Some(row) = rows.next().await? {
            chunks.push(chunk_row(&row)?);
        }
        drop(rows);
        // Each field the queries look in, indexed once.
        let queries: Vec<Option<(Field, Vec<u64>)>> =
            queries.iter().map(|q| terms.query(q)).collect();
        let mut by_field: HashMap<Field, Vec<(i64, DocTerms)>> = HashMap::new();
        for (field, _) in queries.iter().flatten() {
            by_field
                .entry(*field)
                .or_insert_with(|| index_rows(chunks.clone(), *field));
        }
        let rank = |(field, query): (Field, Vec<u64>)| {
            let docs = &by_field[&field];
            let total: u64 = docs.iter().map(|(_, d)| u64::from(d.length)).sum();
            let holding: Vec<usize> = query
                .iter()
                .map(|t| {
                    docs.iter()
                        .filter(|(_, d)| d.terms.iter().any(|(u, _)| u == t))
                        .count()
                })
                .collect();
            let bm25 = Bm25::new(&holding, docs.len(), total, self.search.context_weight);
            let mut top = TopK::new(k);
            for (chunk_id, doc) in docs {
                score_doc(*chunk_id, doc, &query, &bm25, &mut top);
            }
            top.into_sorted()
        };
        Ok(queries.into_iter().map(|q| q.map(rank)).collect())
    }
}
