-- Alerts to a schedule's owner: a run not started this long after its time (`late`), this
-- many runs in a row failed (`failures`), no run succeeded for this long (`silent`). A
-- schedule's settings are `alerts_json`; an incident is a row of `schedule_alerts` while
-- it lasts, so it is told once when it opens and once when it ends, whichever worker
-- sees it first. `last_success_at` is what `silent` counts from.
ALTER TABLE schedules ADD COLUMN alerts_json TEXT;
ALTER TABLE schedules ADD COLUMN last_success_at BIGINT;
UPDATE schedules SET last_success_at = (SELECT max(finished_at) FROM schedule_runs r
    WHERE r.schedule_id = schedules.schedule_id AND r.status = 'succeeded');
CREATE TABLE schedule_alerts (
    schedule_id TEXT NOT NULL REFERENCES schedules (schedule_id) ON DELETE CASCADE,
    kind        TEXT NOT NULL CHECK (kind IN ('late', 'failures', 'silent')),
    opened_at   BIGINT NOT NULL,
    -- What the incident is about: the late occurrence's due time; the time silence is
    -- counted from.
    since       BIGINT NOT NULL,
    PRIMARY KEY (schedule_id, kind)
);

-- The outbox takes alerts and their recoveries (kind 'alert').
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('run', 'failing', 'paused', 'memory', 'approval', 'alert'));
