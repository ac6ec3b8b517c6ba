-- Each chunk of a conversation turn carries its turn's role (NULL for a note's chunks):
-- search tells a user's turn from an assistant's by the chunk alone, rather than reading
-- each candidate's event again (half of mapping a search's chunks to their turns).
ALTER TABLE chunks ADD COLUMN role TEXT;
UPDATE chunks SET role = (
    SELECT e.role FROM events e
    WHERE e.session_id = chunks.session_id AND e.sequence = chunks.sequence_start
) WHERE note_id IS NULL;
