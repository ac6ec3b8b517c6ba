-- Who said an event, when the conversation has more than one voice per role (OpenAI's
-- message `name`): a group chat's members, the two people of a transcript. Search
-- prefers the turns of a speaker its query names (`search.speaker_weight`).
ALTER TABLE events ADD COLUMN name TEXT;
