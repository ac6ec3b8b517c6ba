//! `[memory]`, `[search]` and `[embedding]`: what is stored and searched; split off for length.

use super::{fraction, invalid, range, MIB};
use crate::config::{Config, ConfigError};

pub(super) fn memory(config: &Config) -> Result<(), ConfigError> {
    let mem = &config.memory;
    range("memory.max_text_bytes", mem.max_text_bytes, 1..=16 * MIB)?;
    range("memory.chunk_chars", mem.chunk_chars, 32..=100_000)?;
    if mem.chunk_overlap_chars >= mem.chunk_chars / 2 {
        return invalid(
            "memory.chunk_overlap_chars",
            format!(
                "must be less than half of memory.chunk_chars ({}), got {}",
                mem.chunk_chars, mem.chunk_overlap_chars
            ),
        );
    }
    range("memory.sentence_vectors", mem.sentence_vectors, 0..=64)?;
    range("memory.recall_limit", mem.recall_limit, 1..=10_000)?;
    range(
        "memory.max_payload_bytes",
        mem.max_payload_bytes,
        1..=16 * MIB,
    )?;
    range(
        "memory.max_import_bytes",
        mem.max_import_bytes,
        1..=1024 * MIB,
    )?;
    range(
        "memory.max_batch_events",
        mem.max_batch_events,
        1..=1_000_000,
    )?;
    range(
        "memory.max_import_line_bytes",
        mem.max_import_line_bytes,
        1024..=1024 * MIB,
    )?;
    range(
        "memory.max_notes_per_user",
        mem.max_notes_per_user,
        1..=10_000_000,
    )?;
    range(
        "memory.max_state_value_bytes",
        mem.max_state_value_bytes,
        2..=16 * MIB,
    )?;
    range("memory.max_state_keys", mem.max_state_keys, 1..=1_000_000)?;
    range(
        "memory.deleted_note_retention_days",
        mem.deleted_note_retention_days,
        0..=36_500,
    )?;
    Ok(())
}

pub(super) fn search(config: &Config) -> Result<(), ConfigError> {
    let search = &config.search;
    range("search.max_top_k", search.max_top_k, 1..=1000)?;
    range(
        "search.default_top_k",
        search.default_top_k,
        1..=search.max_top_k,
    )?;
    fraction("search.vector_weight", search.vector_weight)?;
    fraction("search.keyword_weight", search.keyword_weight)?;
    fraction("search.context_weight", search.context_weight)?;
    fraction("search.neighbor_weight", search.neighbor_weight)?;
    range("search.speaker_weight", search.speaker_weight, 0.0..=10.0)?;
    range("search.time_weight", search.time_weight, 0.0..=10.0)?;
    if search.vector_weight + search.keyword_weight <= 0.0 {
        return invalid(
            "search.keyword_weight",
            "search.vector_weight and search.keyword_weight must not both be 0",
        );
    }
    // Its lower bound is another key's: say which, so raising `max_top_k` alone tells
    // what to raise with it.
    if search.candidates < search.max_top_k {
        return invalid(
            "search.candidates",
            format!(
                "must be at least search.max_top_k ({}), got {}",
                search.max_top_k, search.candidates
            ),
        );
    }
    range("search.candidates", search.candidates, 1..=100_000)?;
    range(
        "search.vector_cache_mib",
        search.vector_cache_mib,
        0..=1_048_576,
    )?;
    range(
        "search.keyword_cache_mib",
        search.keyword_cache_mib,
        0..=1_048_576,
    )?;
    // The second stage reads each candidate with a model: a few hundred is already
    // seconds a search.
    range(
        "search.rerank_candidates",
        search.rerank_candidates,
        1..=500,
    )?;
    fraction("search.rerank_weight", search.rerank_weight)?;
    range(
        "search.rerank_cache_mib",
        search.rerank_cache_mib,
        0..=65_536,
    )?;
    // Each seed is one more search.
    range("search.multi_hop_seeds", search.multi_hop_seeds, 0..=5)?;
    fraction("search.multi_hop_weight", search.multi_hop_weight)?;
    Ok(())
}

pub(super) fn embedding(config: &Config) -> Result<(), ConfigError> {
    let emb = &config.embedding;
    range("embedding.dimensions", emb.dimensions, 16..=4096)?;
    range("embedding.max_length", emb.max_length, 8..=512)?;
    range("embedding.batch_size", emb.batch_size, 1..=1024)?;
    range("embedding.threads", emb.threads, 0..=256)?;
    Ok(())
}
