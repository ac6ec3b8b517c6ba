-- Cancelling a run: who asked to stop a running run. The worker holding it stops the
-- runtime call and records it `cancelled`; a run found with this set after its worker
-- vanished is recorded `cancelled`, not tried again.
ALTER TABLE schedule_runs ADD COLUMN cancel_requested_by TEXT;
