-- The conversation turns a fact the facts pass learned was said in: the note it is kept
-- as, the turn's session and sequence, and when it was said. A fact said again adds a
-- row; a changed fact's new note starts its own (the old note keeps its rows, as its
-- history). Deleting the note or forgetting the session takes the rows.
CREATE TABLE fact_evidence (
    note_id    TEXT NOT NULL REFERENCES notes (note_id) ON DELETE CASCADE,
    user_id    TEXT NOT NULL,
    session_id TEXT NOT NULL REFERENCES sessions (session_id) ON DELETE CASCADE,
    sequence   BIGINT NOT NULL,
    said_at    BIGINT NOT NULL,
    PRIMARY KEY (note_id, session_id, sequence)
);
CREATE INDEX fact_evidence_by_session ON fact_evidence (session_id);
CREATE INDEX fact_evidence_by_user ON fact_evidence (user_id);
