-- Each chunk of a conversation turn carries its turn's role (NULL for a note's chunks):
-- search tells a user's turn from an assistant's by the chunk alone, rather than reading
-- each candidate's event again (half of mapping a search's chunks to their turns).
ALTER TABLE chunks ADD COLUMN role TEXT;
UPDATE chunks c SET role = e.role
    FROM events e
    WHERE c.note_id IS NULL AND e.session_id = c.session_id AND e.sequence = c.sequence_start;
