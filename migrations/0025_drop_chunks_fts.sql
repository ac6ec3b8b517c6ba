-- The keyword index (src/memory/keywords.rs) now holds stop words too (keyword_blocks
-- format 2), so FTS5's copy of every chunk's words has no reader left: it goes, with its
-- triggers, and an append writes a dozen pages fewer. `chunks.scope` only fed FTS5; new
-- chunks leave it empty. Blocks of the older format are dropped: the embedder makes them
-- again when idle, and until then a search reads the chunk rows.
DROP TRIGGER chunks_fts_insert;
DROP TRIGGER chunks_fts_delete;
DROP TRIGGER chunks_fts_update;
DROP TABLE chunks_fts;
DELETE FROM keyword_blocks WHERE format < 2;
