-- The messages waiting on one channel, counted without reading the others': a new message
-- checks its channel against notify.max_pending_per_channel inside the transaction that
-- records its run.
CREATE INDEX outbox_pending_by_channel ON outbox (channel_id) WHERE status = 'pending';
