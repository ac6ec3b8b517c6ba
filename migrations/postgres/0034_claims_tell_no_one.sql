-- A schedule's claim locks that schedule's row alone (`FOR UPDATE SKIP LOCKED`), not the
-- one write lock, so workers claim side by side (src/schedule/store/claim.rs). Its changes
-- only move an occurrence on, which no other worker needs to hear about: the claim marks
-- its transaction (`SET LOCAL nightshift.claiming = 'on'`) and this trigger passes it
-- over. Counting it would queue every claim behind the others on the counter's one row,
-- and wake every worker at each claim to look for work another had just taken.
CREATE OR REPLACE FUNCTION nightshift_schedules_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF current_setting('nightshift.claiming', true) = 'on' THEN
        RETURN NULL;
    END IF;
    UPDATE meta SET value = (CAST(value AS BIGINT) + 1)::text WHERE key = 'schedules_version';
    PERFORM pg_notify('nightshift_schedules', '');
    RETURN NULL;
END $$;
