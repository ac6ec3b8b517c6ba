-- The dashboard's logins. Logging in with an admin token starts a session: a fresh random
-- secret, held only in the browser's cookie; the database keeps its hash, the admin token
-- it came from and when it ends (twelve hours on). A session is refused once it has
-- expired, once its admin token is revoked or expired, and after logging out (its row is
-- deleted); the admin token's secret is never in the cookie.
CREATE TABLE ui_sessions (
    secret_hash TEXT PRIMARY KEY,
    token_id    TEXT NOT NULL REFERENCES api_tokens (token_id) ON DELETE CASCADE,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL
);
CREATE INDEX ui_sessions_by_token ON ui_sessions (token_id);
CREATE INDEX ui_sessions_by_expiry ON ui_sessions (expires_at);
