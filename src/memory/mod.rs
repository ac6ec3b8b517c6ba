//! Long-term memory: conversation sessions and their events, user-scoped notes, the derived
//! search index (chunks, their keyword and vector indexes), hybrid search and summary state.
//!
//! Sessions, events and notes are the source of truth. Everything in `chunks`,
//! `chunk_vectors`, `vector_blocks` and `keyword_blocks` is derived from them and can be
//! rebuilt.

mod agents;
mod anchors;
mod blocks;
mod changes;
mod chunking;
mod codes;
mod context;
mod dots;
mod embedding;
mod events;
mod evidence;
mod filters;
mod fts_query;
mod fusion;
mod growth;
mod hits;
mod hydrate;
mod in_list;
mod index;
mod keywords;
mod macros;
mod matrix;
mod multihop;
mod notes;
pub mod oversize;
#[cfg(test)]
mod plans;
mod postings;
mod profile;
mod rebuild;
mod rerank;
mod search;
mod sentences;
mod session_lru;
mod speakers;
mod summarize;
mod summary;
mod terms;
mod types;
mod upkeep;
mod users;
mod vectors;
mod versions;
pub mod when;
mod window_read;
mod writer;

/// Characters of the previous event a conversation chunk carries as its context.
pub use index::CONTEXT_CHARS;

use std::sync::Arc;

pub use changes::ChangeEvents;
pub use chunking::chunk_text;
pub use context::{Context, ContextItem, ContextRequest, Strategy, DEFAULT_BUDGET, MAX_BUDGET};
pub use embedding::{stored_embedding, EmbeddingStatus, StoredEmbedding};
pub(crate) use events::ensure_session;
pub use events::{JsonlError, MAX_RECALL};
pub use evidence::{FactEvidence, EVIDENCE_PER_FACT};
pub use filters::{parse_time, parse_time_opt, EventWindow, NoteFilter, NOTE_SOURCES};
pub use fts_query::keyword_expression;
pub use growth::{DayOfMemory, GROWTH_DAYS};
pub use hits::{HitSource, SearchHit, SearchRequest, SearchResponse, SearchResults};
pub use keywords::CachedKeywords;
pub use macros::{args_pattern, call_arguments, Macro, MacroList};
pub use matrix::VectorMatrix;
pub use notes::{tombstone_hash, MAX_TAGS, MAX_TAG_CHARS};
pub use profile::{ProfileFact, PROFILE_FACTS};
pub use rebuild::RebuildReport;
pub use rerank::{CandidateScorer, RerankStage};
pub use summarize::{
    estimate_tokens, ExtractiveSummarizer, SummarizeOutcome, Summarizer, SummaryPolicy,
};
pub use summary::{SummaryState, SummaryWrite};
pub use types::{
    AppendedEvents, Event, NewEvent, NewNote, Note, NoteDeleted, Role, SaveOutcome, Session,
    SessionForgotten, SessionKey, SessionKind,
};
pub use upkeep::FactsCursor;
pub use users::UserMemory;
pub use vectors::CachedVectors;
pub use versions::{NoteChange, NoteVersion, Origin};
pub use writer::Appended;

use crate::config::{MemoryConfig, SearchConfig};
use std::collections::HashMap;

use crate::db::clock::{Clock, SystemClock};
use crate::db::{Db, DbError};
use crate::embed::{EmbedError, Embedder};
use crate::error::{ErrorKind, Kind};
use crate::input::{self, InputError};

#[derive(Debug, thiserror::Error)]
pub enum MemoryError {
    #[error(transparent)]
    Input(#[from] InputError),
    #[error("no note `{0}` for this user")]
    NoteNotFound(String),
    #[error("no session `{0}`")]
    SessionNotFound(String),
    /// The operator named a session id without a user, and several users have one.
    #[error(
        "{users} users have a session `{session_id}`: name the user (--user on the command \
         line, ?user= with an admin token)"
    )]
    SessionAmbiguous { session_id: String, users: usize },
    #[error("note `{note_id}` has no version {version}")]
    VersionNotFound { note_id: String, version: i64 },
    #[error("the key `{key}` is now note `{note_id}`'s; change or delete that note first")]
    KeyTaken { key: String, note_id: String },
    #[error("session `{0}` is reserved for nightshift's own use")]
    ReservedSession(String),
    #[error(
        "user `{user_id}` already has {limit} notes (memory.max_notes_per_user); \
         update or delete one to save another"
    )]
    TooManyNotes { user_id: String, limit: i64 },
    #[error("write failed: {0}")]
    WriteFailed(String),
    /// An event over `memory.max_text_bytes` whose whole text the artifact store refused
    /// to keep (`oversize = "artifact"`): nothing was stored.
    #[error("an event of {size} bytes is over memory.max_text_bytes, and its whole text could not be kept as an artifact: {reason}")]
    WholeTextNotKept {
        size: usize,
        reason: String,
        kind: ErrorKind,
    },
    #[error(transparent)]
    Jsonl(#[from] JsonlError),
    /// What went wrong with the event of a JSONL input's line `line`, found once all its
    /// lines were read (its kind is the error's own: a limit is still a conflict).
    #[error("line {line}: {source}")]
    OnLine {
        line: usize,
        source: Box<MemoryError>,
    },
    #[error(transparent)]
    Embed(#[from] EmbedError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl MemoryError {
    /// Bad input in `what`, for `reason`.
    pub fn invalid(what: &str, reason: impl Into<String>) -> Self {
        MemoryError::Input(InputError::new(what, reason))
    }
}

impl Kind for MemoryError {
    fn kind(&self) -> ErrorKind {
        match self {
            MemoryError::Input(_)
            | MemoryError::ReservedSession(_)
            | MemoryError::SessionAmbiguous { .. }
            | MemoryError::Jsonl(_) => ErrorKind::BadInput,
            MemoryError::NoteNotFound(_)
            | MemoryError::SessionNotFound(_)
            | MemoryError::VersionNotFound { .. } => ErrorKind::NotFound,
            MemoryError::TooManyNotes { .. } | MemoryError::KeyTaken { .. } => ErrorKind::Conflict,
            MemoryError::WriteFailed(_) => ErrorKind::Internal,
            MemoryError::WholeTextNotKept { kind, .. } => *kind,
            MemoryError::OnLine { source, .. } => source.kind(),
            MemoryError::Embed(err) => err.kind(),
            MemoryError::Db(err) => err.kind(),
        }
    }
}

impl From<libsql::Error> for MemoryError {
    fn from(err: libsql::Error) -> Self {
        MemoryError::Db(DbError::Sql(err))
    }
}

pub type Result<T, E = MemoryError> = std::result::Result<T, E>;

/// The memory store. Cheap to clone; clones share the vector cache.
#[derive(Clone)]
pub struct Memory {
    db: Db,
    embedder: Arc<dyn Embedder>,
    limits: MemoryConfig,
    search: SearchConfig,
    vectors: Arc<vectors::VectorCache>,
    /// The sessions' keyword indexes of their words, stop words aside.
    keywords: Arc<keywords::KeywordCache>,
    /// The sessions' indexes of their stop words: for queries of stop words alone.
    stop_words: Arc<keywords::KeywordCache>,
    clock: Arc<dyn Clock>,
    appends: tokio::sync::mpsc::Sender<writer::AppendJob>,
    /// Wakes the background embedder when a write queued chunks.
    embed_wake: Arc<tokio::sync::Notify>,
    /// Chunks the background embedder claims and embeds at a time.
    embed_batch_size: usize,
    /// Who changes notes through this handle, recorded with each version.
    origin: Origin,
    /// Whose changes are recorded as change events.
    changes: ChangeEvents,
    /// The agent this handle acts for (see `agents`); `None`: the shared notes only.
    agent: Option<String>,
    /// Search's second stage, when one is set up (`search.rerank` decides if it runs).
    rerank: Option<Arc<rerank::RerankStage>>,
    /// Each user's zone (`[users.U] timezone`), in which a query's days are read.
    user_zones: Arc<HashMap<String, chrono_tz::Tz>>,
    /// Where `memory.oversize = "artifact"` keeps a cut turn's whole text.
    whole_texts: Option<Arc<dyn oversize::WholeTextKeeper>>,
}

impl Memory {
    /// Builds the store on a migrated database and, on a new database, records the
    /// configured embedding model as the one its vectors are of. Vectors of another model
    /// are never compared with this one's: until the daemon adopts the new model and
    /// re-embeds (or `nightshift index rebuild` does), search relies on its keyword leg.
    pub async fn new(
        db: Db,
        embedder: Arc<dyn Embedder>,
        limits: MemoryConfig,
        search: SearchConfig,
    ) -> Result<Self> {
        let vectors = Arc::new(vectors::VectorCache::new(
            search.vector_cache_mib * 1024 * 1024,
        ));
        let keyword_budget = search.keyword_cache_mib * 1024 * 1024;
        let keywords = Arc::new(keywords::KeywordCache::new(
            terms::Field::Words,
            keyword_budget,
        ));
        let stop_words = Arc::new(keywords::KeywordCache::new(
            terms::Field::StopWords,
            keyword_budget,
        ));
        let appends = writer::spawn(db.clone(), embedder.model_id().to_string());
        let memory = Self {
            appends,
            db,
            embedder,
            limits,
            search,
            vectors,
            keywords,
            stop_words,
            clock: Arc::new(SystemClock),
            embed_wake: Arc::new(tokio::sync::Notify::new()),
            embed_batch_size: 32,
            origin: Origin::Library,
            changes: ChangeEvents::default(),
            agent: None,
            rerank: None,
            user_zones: Arc::default(),
            whole_texts: None,
        };
        let recorded = memory.recorded_model().await?;
        match recorded {
            None => memory.record_model().await?,
            Some(model) if model != memory.embedder.model_id() => {
                tracing::warn!(
                    recorded = %model,
                    configured = memory.embedder.model_id(),
                    "stored vectors were made by another embedding model; search uses keywords \
                     only until `nightshift run` or `nightshift index rebuild` re-embeds"
                );
            }
            Some(_) => {}
        }
        Ok(memory)
    }

    /// The same store, embedding `batch_size` queued chunks at a time.
    pub fn with_embed_batch_size(mut self, batch_size: usize) -> Self {
        self.embed_batch_size = batch_size.max(1);
        self
    }

    /// The same store, stamping and comparing times with `clock`.
    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

    /// The same store, reading each user's queries' days in their zone (UTC for the
    /// users not in `zones`).
    pub fn with_user_zones(mut self, zones: HashMap<String, chrono_tz::Tz>) -> Self {
        self.user_zones = Arc::new(zones);
        self
    }

    /// The same store, keeping the whole text of a turn cut under `memory.oversize =
    /// "artifact"` in `keeper` (without one, such a turn is only cut).
    pub fn with_whole_text_keeper(mut self, keeper: Arc<dyn oversize::WholeTextKeeper>) -> Self {
        self.whole_texts = Some(keeper);
        self
    }

    /// The zone `user_id`'s days are read in.
    pub fn user_zone(&self, user_id: &str) -> chrono_tz::Tz {
        self.user_zones
            .get(user_id)
            .copied()
            .unwrap_or(chrono_tz::Tz::UTC)
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    pub fn db(&self) -> &Db {
        &self.db
    }

    /// The limits its writes are checked against.
    pub fn limits(&self) -> &MemoryConfig {
        &self.limits
    }

    pub fn embedder(&self) -> &Arc<dyn Embedder> {
        &self.embedder
    }

    /// The embedding model recorded in the database, if any.
    pub async fn recorded_model(&self) -> Result<Option<String>> {
        let conn = self.db.conn().await?;
        Ok(crate::db::query_scalar(
            &conn,
            "SELECT value FROM meta WHERE key = 'embedding_model'",
            (),
        )
        .await?)
    }

    /// Records the configured embedding model as the one that made the stored vectors,
    /// ending any re-embed (a rebuild has just embedded everything with it).
    pub(super) async fn record_model(&self) -> Result<()> {
        let conn = self.db.conn().await?;
        let tx = conn.write_tx().await?;
        tx.execute(
            "INSERT INTO meta (key, value) VALUES ('embedding_model', ?1), ('embedding_dimensions', ?2)
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            libsql::params![
                self.embedder.model_id(),
                self.embedder.dimensions().to_string()
            ],
        )
        .await?;
        tx.execute("DELETE FROM meta WHERE key = 'embedding_reembed'", ())
            .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Checks conversation content (a note's, an event's, a summary's) by the content rule
    /// (kept byte for byte, control characters and NUL included), within
    /// `memory.max_text_bytes`.
    fn check_content(&self, what: &'static str, text: &str) -> Result<()> {
        let max = self.limits.max_text_bytes;
        if text.len() > max {
            return Err(MemoryError::invalid(
                what,
                format!(
                    "is {} bytes, over the limit of {max} bytes (memory.max_text_bytes)",
                    text.len()
                ),
            ));
        }
        input::check_content(what, text, max)?;
        Ok(())
    }
}

/// An identifier (user, session, note key…) by the common rule.
fn check_id(what: &'static str, id: &str) -> Result<()> {
    input::check_id(what, id)?;
    Ok(())
}
