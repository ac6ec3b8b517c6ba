-- Sessions belong to their user: the same session id under two users is two sessions.
-- Every column that names a session (`session_id` everywhere, and the `scope_id` of
-- session state) now holds the session's key: its user's id, U+001F (a control character,
-- which no user or session id may hold), then the session's id; see `SessionKey`. The
-- rows already there move to the keys of the users that own them: each session is copied
-- under its key (its vector_removals kept, so stored index blocks stay valid), every row
-- naming it is moved there, and the session under its old id is deleted, by then with
-- nothing left to cascade to. Only plain statements: no pragma, whatever the server.

-- Copying a session is not making a new one, and moving chunks rewrites nothing.
DROP TRIGGER sessions_count_from_anywhere;
DROP TRIGGER chunks_rewritten;

INSERT INTO sessions (session_id, user_id, kind, title, created_at, updated_at, last_sequence,
                      vector_removals)
    SELECT user_id || char(31) || session_id, user_id, kind, title, created_at, updated_at,
           last_sequence, vector_removals
    FROM sessions WHERE instr(session_id, char(31)) = 0;

UPDATE events
    SET session_id = (SELECT s.user_id FROM sessions s WHERE s.session_id = events.session_id)
                     || char(31) || session_id
    WHERE instr(session_id, char(31)) = 0 AND session_id IN (SELECT session_id FROM sessions);
UPDATE session_state
    SET session_id = (SELECT s.user_id FROM sessions s
                      WHERE s.session_id = session_state.session_id) || char(31) || session_id
    WHERE instr(session_id, char(31)) = 0 AND session_id IN (SELECT session_id FROM sessions);
UPDATE chunks
    SET session_id = (SELECT s.user_id FROM sessions s WHERE s.session_id = chunks.session_id)
                     || char(31) || session_id
    WHERE instr(session_id, char(31)) = 0 AND session_id IN (SELECT session_id FROM sessions);
UPDATE chunk_vectors
    SET session_id = (SELECT s.user_id FROM sessions s
                      WHERE s.session_id = chunk_vectors.session_id) || char(31) || session_id
    WHERE instr(session_id, char(31)) = 0 AND session_id IN (SELECT session_id FROM sessions);
UPDATE vector_blocks
    SET session_id = (SELECT s.user_id FROM sessions s
                      WHERE s.session_id = vector_blocks.session_id) || char(31) || session_id
    WHERE instr(session_id, char(31)) = 0 AND session_id IN (SELECT session_id FROM sessions);
UPDATE keyword_blocks
    SET session_id = (SELECT s.user_id FROM sessions s
                      WHERE s.session_id = keyword_blocks.session_id) || char(31) || session_id
    WHERE instr(session_id, char(31)) = 0 AND session_id IN (SELECT session_id FROM sessions);
UPDATE artifacts
    SET session_id = (SELECT s.user_id FROM sessions s WHERE s.session_id = artifacts.session_id)
                     || char(31) || session_id
    WHERE instr(session_id, char(31)) = 0 AND session_id IN (SELECT session_id FROM sessions);
-- A session's state is scoped by the session: its scope_id is its session_id.
UPDATE state_entries
    SET session_id = (SELECT s.user_id FROM sessions s
                      WHERE s.session_id = state_entries.session_id) || char(31) || session_id,
        scope_id = (SELECT s.user_id FROM sessions s
                    WHERE s.session_id = state_entries.session_id) || char(31) || session_id
    WHERE scope = 'session' AND instr(session_id, char(31)) = 0
      AND session_id IN (SELECT session_id FROM sessions);
UPDATE macro_cursors
    SET session_id = user_id || char(31) || session_id
    WHERE instr(session_id, char(31)) = 0;

DELETE FROM sessions WHERE instr(session_id, char(31)) = 0;

CREATE TRIGGER chunks_rewritten AFTER UPDATE OF text, context, session_id ON chunks BEGIN
    UPDATE sessions SET vector_removals = vector_removals + 1
        WHERE session_id IN (old.session_id, new.session_id);
END;
CREATE TRIGGER sessions_count_from_anywhere AFTER INSERT ON sessions BEGIN
    UPDATE sessions SET vector_removals = abs(random() % 4611686018427387904)
        WHERE session_id = new.session_id;
END;

-- The operator may name a session by its id alone (whoever's it is): found by the id
-- within the key.
CREATE INDEX sessions_by_id ON sessions (substr(session_id, length(user_id) + 2));
