//! `[memory]`, `[search]` and `[embedding]`: how much is stored and how it is searched.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

text_enum!(
    /// What happens to a conversation event over `memory.max_text_bytes`: `refuse` it
    /// (the append fails, naming it), `truncate` it to its head and tail around a marker
    /// saying how much was cut, or do that and keep the whole text as an `artifact` of
    /// the user's in the event's session, named in the marker (see `memory::oversize`).
    Oversize { Refuse => "refuse", Truncate => "truncate", Artifact => "artifact" }
);

// Written out: `text_enum!` makes the enum and takes no further derive.
#[allow(clippy::derivable_impls)]
impl Default for Oversize {
    fn default() -> Self {
        Oversize::Refuse
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct MemoryConfig {
    /// Largest event or note accepted, in bytes of UTF-8.
    pub max_text_bytes: usize,
    /// An event over `max_text_bytes`: refused, kept as its head and tail, or that and
    /// its whole text as an artifact.
    pub oversize: Oversize,
    /// Largest chunk of the search index, in characters.
    pub chunk_chars: usize,
    /// Characters shared by consecutive chunks of one text.
    pub chunk_overlap_chars: usize,
    /// The most sentences of a user's chunk embedded on their own beside the whole chunk
    /// (the vector leg scores the chunk by the best of them; see `memory::sentences`);
    /// 0 embeds whole chunks only.
    pub sentence_vectors: usize,
    /// Events returned by `memory recall` when no `--limit` is given.
    pub recall_limit: usize,
    /// Largest `payload` an event may carry, in bytes of its JSON.
    pub max_payload_bytes: usize,
    /// Largest JSONL input one append reads, in bytes.
    pub max_import_bytes: usize,
    /// Most events one append may carry.
    pub max_batch_events: usize,
    /// Longest line of a JSONL input, in bytes.
    pub max_import_line_bytes: usize,
    /// Notes one user may have (superseded versions of a fact not counted).
    pub max_notes_per_user: i64,
    /// Largest state value, in bytes of its JSON.
    pub max_state_value_bytes: usize,
    /// Most keys one scope (a session, a user, the app, a run) may hold.
    pub max_state_keys: usize,
    /// Days a deleted note's versions are kept (restorable) before the expiry pass purges
    /// them; 0 keeps them until the user is purged.
    pub deleted_note_retention_days: i64,
}

impl Default for MemoryConfig {
    fn default() -> Self {
        Self {
            max_text_bytes: 65_536,
            oversize: Oversize::Refuse,
            chunk_chars: 640,
            chunk_overlap_chars: 96,
            sentence_vectors: 12,
            recall_limit: 50,
            max_payload_bytes: 65_536,
            max_import_bytes: 16 * 1024 * 1024,
            max_batch_events: 10_000,
            max_import_line_bytes: 1024 * 1024,
            max_notes_per_user: 10_000,
            max_state_value_bytes: 65_536,
            max_state_keys: 1_000,
            deleted_note_retention_days: 30,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct SearchConfig {
    pub default_top_k: usize,
    pub max_top_k: usize,
    /// Weight of the min-max normalised vector leg in the fused score.
    pub vector_weight: f64,
    /// Weight of the min-max normalised keyword (bm25) leg in the fused score.
    pub keyword_weight: f64,
    /// Weight of a chunk's context (the end of the event before it) against its own text
    /// in the keyword leg's bm25.
    pub context_weight: f64,
    /// Share of an event's fused score lent to the events next to it in its session
    /// (half that two steps away); 0 turns it off. Nothing is lent for a question in the
    /// first person in a conversation where an assistant's turn is among the candidates
    /// (see `memory::search`).
    pub neighbor_weight: f64,
    /// A hit said by a speaker its query names (an event's `name`) scores `1 +
    /// speaker_weight` times its fused score, and an assistant's turn `1 / (1 +
    /// speaker_weight)` times when the query is in the first person; 0 turns both off.
    pub speaker_weight: f64,
    /// A conversation hit said inside the time its query names ("last week", "in March",
    /// read in the user's zone) scores `1 + time_weight` times its fused score, and the
    /// turns said then are also searched on their own (`memory::window_read`). A time
    /// named by an event the user told of ("before I moved", `memory::anchors`) is
    /// preferred alike. 0 turns all three off.
    pub time_weight: f64,
    /// Candidates each leg contributes before fusion.
    pub candidates: usize,
    /// Memory for the per-session vector matrices kept between searches.
    pub vector_cache_mib: usize,
    /// Memory for the per-session keyword indexes kept between searches; as much again
    /// bounds the indexes of stop words (sessions searched by stop words alone).
    pub keyword_cache_mib: usize,
    /// The second stage that reorders the fused candidates by reading the query and each
    /// candidate together; `none` answers from the fusion.
    pub rerank: RerankMode,
    /// Fused candidates the second stage reads (the hits asked for, if more).
    pub rerank_candidates: usize,
    /// Weight of the second stage's min-max normalised score against the fused one's.
    pub rerank_weight: f64,
    /// Memory for the candidates' token embeddings the second stage keeps, in MiB.
    pub rerank_cache_mib: usize,
    /// Multi-hop: the first round's best hits that each seed a second round (0 = none).
    pub multi_hop_seeds: usize,
    /// Weight of the later rounds' mean normalised score added to the first round's.
    pub multi_hop_weight: f64,
}

text_enum!(
    /// The second stage of search.
    RerankMode {
        None => "none",
        LateInteraction => "late-interaction",
    }
);

impl Default for SearchConfig {
    fn default() -> Self {
        Self {
            default_top_k: 5,
            max_top_k: 20,
            vector_weight: 0.4,
            keyword_weight: 0.6,
            context_weight: 0.3,
            neighbor_weight: 0.2,
            speaker_weight: 2.0,
            time_weight: 1.0,
            candidates: 50,
            vector_cache_mib: 256,
            keyword_cache_mib: 256,
            rerank: RerankMode::None,
            rerank_candidates: 20,
            rerank_weight: 0.5,
            rerank_cache_mib: 64,
            multi_hop_seeds: 0,
            multi_hop_weight: 0.5,
        }
    }
}

#[derive(Debug, Clone, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EmbeddingConfig {
    /// `hash`: blake3 feature hashing of words and character trigrams, no model needed.
    /// `fastembed`: a local ONNX sentence-embedding model (see `scripts/fetch-model.sh`).
    pub backend: EmbeddingBackend,
    /// Dimensions of the `hash` backend's vectors.
    pub dimensions: usize,
    /// `fastembed`: folder holding model.onnx, tokenizer.json, config.json,
    /// special_tokens_map.json and tokenizer_config.json.
    pub model_dir: PathBuf,
    /// `fastembed`: path of the ONNX Runtime shared library (1.31), loaded at start.
    pub onnxruntime: PathBuf,
    /// `fastembed`: word pieces per text; longer texts are truncated, not rejected.
    pub max_length: usize,
    /// Chunks the background queue claims and embeds at a time (a user's chunk as itself
    /// and its sentences: see `memory.sentence_vectors`); also the texts per model call.
    pub batch_size: usize,
    /// `fastembed`: threads ONNX Runtime may use; 0 means one per core.
    pub threads: usize,
}

impl Default for EmbeddingConfig {
    fn default() -> Self {
        Self {
            backend: EmbeddingBackend::Hash,
            dimensions: 256,
            model_dir: PathBuf::from("models/all-MiniLM-L6-v2-int8"),
            onnxruntime: PathBuf::from("models/onnxruntime/libonnxruntime.so.1.31.1"),
            max_length: 256,
            batch_size: 32,
            threads: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum EmbeddingBackend {
    Hash,
    Fastembed,
}

impl EmbeddingBackend {
    pub fn as_str(self) -> &'static str {
        match self {
            EmbeddingBackend::Hash => "hash",
            EmbeddingBackend::Fastembed => "fastembed",
        }
    }
}
