-- A message the facts pass cannot read is tried again by later passes, and skipped (and
-- reported) after a few tries, so one message can never stop consolidation for good: the
-- sequence that failed and how many times in a row.
ALTER TABLE session_state ADD COLUMN facts_failed_sequence INTEGER NOT NULL DEFAULT 0;
ALTER TABLE session_state ADD COLUMN facts_failures INTEGER NOT NULL DEFAULT 0;
