-- Tokens for the HTTP API and the MCP server: a user token acts as its user only, an admin
-- token as the operator. Only a hash of each secret is kept (the secret is shown once, at
-- creation); a revoked or expired token is refused.
CREATE TABLE api_tokens (
    token_id     TEXT PRIMARY KEY,
    name         TEXT,
    scope        TEXT NOT NULL CHECK (scope IN ('user', 'admin')),
    user_id      TEXT,
    secret_hash  TEXT NOT NULL UNIQUE,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    expires_at   INTEGER,
    revoked_at   INTEGER,
    CHECK ((scope = 'admin') = (user_id IS NULL))
);
