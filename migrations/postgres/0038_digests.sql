-- The runs of `notify = "digest"` schedules waiting for their day's digest: one line per
-- run, written in the transaction that records the run, due at the user's next
-- `digest_at`. The sender folds a schedule's due lines into one outbox message and deletes
-- them in one transaction. No reference to the run: a line outlives its run or schedule
-- being removed, so what happened is still told.
CREATE TABLE digest_items (
    run_id      TEXT PRIMARY KEY,
    schedule_id TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    -- `ID` or `ID:CONTEXT`, as the run's own message would have gone.
    channel     TEXT NOT NULL,
    due_at      BIGINT NOT NULL,
    item_json   TEXT NOT NULL,
    created_at  BIGINT NOT NULL
);

CREATE INDEX digest_items_due ON digest_items (due_at);

-- The outbox takes digests (kind 'digest').
ALTER TABLE outbox DROP CONSTRAINT outbox_kind_check;
ALTER TABLE outbox ADD CONSTRAINT outbox_kind_check
    CHECK (kind IN ('run', 'failing', 'paused', 'memory', 'approval', 'alert', 'digest'));
