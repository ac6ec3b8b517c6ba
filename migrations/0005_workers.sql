-- The worker registry: each `nightshift run` registers itself and heartbeats; a worker
-- stopped with SIGTERM unregisters. A worker whose heartbeat is older than the lease is
-- gone, and its leases are taken over.
CREATE TABLE workers (
    worker_id    TEXT PRIMARY KEY,
    host         TEXT NOT NULL,
    pid          INTEGER NOT NULL,
    version      TEXT NOT NULL,
    started_at   INTEGER NOT NULL,
    heartbeat_at INTEGER NOT NULL
);
