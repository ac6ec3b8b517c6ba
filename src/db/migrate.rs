//! Versioned schema migrations, embedded at build time. Each runs in its own transaction
//! and is recorded with a checksum; a database that was migrated by a different or newer
//! binary is refused instead of being guessed at.

use serde::Serialize;

use super::error::DbError;
use super::{clock, Db};

pub struct Migration {
    pub version: i64,
    pub name: &'static str,
    pub sql: &'static str,
}

/// Every migration this binary knows, in order.
pub const MIGRATIONS: &[Migration] = &[
    Migration {
        version: 1,
        name: "memory",
        sql: include_str!("../../migrations/0001_memory.sql"),
    },
    Migration {
        version: 2,
        name: "schedules",
        sql: include_str!("../../migrations/0002_schedules.sql"),
    },
    Migration {
        version: 3,
        name: "outbox",
        sql: include_str!("../../migrations/0003_outbox.sql"),
    },
    Migration {
        version: 4,
        name: "consolidation",
        sql: include_str!("../../migrations/0004_consolidation.sql"),
    },
    Migration {
        version: 5,
        name: "workers",
        sql: include_str!("../../migrations/0005_workers.sql"),
    },
    Migration {
        version: 6,
        name: "embed_queue",
        sql: include_str!("../../migrations/0006_embed_queue.sql"),
    },
    Migration {
        version: 7,
        name: "running_by_schedule",
        sql: include_str!("../../migrations/0007_running_by_schedule.sql"),
    },
    Migration {
        version: 8,
        name: "facts_retries",
        sql: include_str!("../../migrations/0008_facts_retries.sql"),
    },
    Migration {
        version: 9,
        name: "api_tokens",
        sql: include_str!("../../migrations/0009_api_tokens.sql"),
    },
    Migration {
        version: 10,
        name: "schedule_bounds",
        sql: include_str!("../../migrations/0010_schedule_bounds.sql"),
    },
    Migration {
        version: 11,
        name: "schedule_jitter",
        sql: include_str!("../../migrations/0011_schedule_jitter.sql"),
    },
    Migration {
        version: 12,
        name: "overlap_policies",
        sql: include_str!("../../migrations/0012_overlap_policies.sql"),
    },
    Migration {
        version: 13,
        name: "catch_up_window",
        sql: include_str!("../../migrations/0013_catch_up_window.sql"),
    },
    Migration {
        version: 14,
        name: "schedule_events",
        sql: include_str!("../../migrations/0014_schedule_events.sql"),
    },
    Migration {
        version: 15,
        name: "calendars",
        sql: include_str!("../../migrations/0015_calendars.sql"),
    },
    Migration {
        version: 16,
        name: "outbox_pending_by_channel",
        sql: include_str!("../../migrations/0016_outbox_pending_by_channel.sql"),
    },
    Migration {
        version: 17,
        name: "state",
        sql: include_str!("../../migrations/0017_state.sql"),
    },
    Migration {
        version: 18,
        name: "artifacts",
        sql: include_str!("../../migrations/0018_artifacts.sql"),
    },
    Migration {
        version: 19,
        name: "macros",
        sql: include_str!("../../migrations/0019_macros.sql"),
    },
    Migration {
        version: 20,
        name: "note_versions",
        sql: include_str!("../../migrations/0020_note_versions.sql"),
    },
    Migration {
        version: 21,
        name: "memory_changes",
        sql: include_str!("../../migrations/0021_memory_changes.sql"),
    },
    Migration {
        version: 22,
        name: "agent_scope",
        sql: include_str!("../../migrations/0022_agent_scope.sql"),
    },
    Migration {
        version: 23,
        name: "vector_blocks",
        sql: include_str!("../../migrations/0023_vector_blocks.sql"),
    },
    Migration {
        version: 24,
        name: "keyword_blocks",
        sql: include_str!("../../migrations/0024_keyword_blocks.sql"),
    },
    Migration {
        version: 25,
        name: "drop_chunks_fts",
        sql: include_str!("../../migrations/0025_drop_chunks_fts.sql"),
    },
    Migration {
        version: 26,
        name: "event_names",
        sql: include_str!("../../migrations/0026_event_names.sql"),
    },
    Migration {
        version: 27,
        name: "ui_sessions",
        sql: include_str!("../../migrations/0027_ui_sessions.sql"),
    },
    Migration {
        version: 28,
        name: "agent_schedules",
        sql: include_str!("../../migrations/0028_agent_schedules.sql"),
    },
    Migration {
        version: 29,
        name: "user_sessions",
        sql: include_str!("../../migrations/0029_user_sessions.sql"),
    },
    Migration {
        version: 30,
        name: "state_versions",
        sql: include_str!("../../migrations/0030_state_versions.sql"),
    },
    Migration {
        version: 31,
        name: "approvals",
        sql: include_str!("../../migrations/0031_approvals.sql"),
    },
    Migration {
        version: 32,
        name: "schedule_approve",
        sql: include_str!("../../migrations/0032_schedule_approve.sql"),
    },
    Migration {
        version: 33,
        name: "run_cancel",
        sql: include_str!("../../migrations/0033_run_cancel.sql"),
    },
    Migration {
        version: 34,
        name: "claims_tell_no_one",
        sql: include_str!("../../migrations/0034_claims_tell_no_one.sql"),
    },
    Migration {
        version: 35,
        name: "reruns",
        sql: include_str!("../../migrations/0035_reruns.sql"),
    },
    Migration {
        version: 36,
        name: "alerts",
        sql: include_str!("../../migrations/0036_alerts.sql"),
    },
    Migration {
        version: 37,
        name: "run_progress",
        sql: include_str!("../../migrations/0037_run_progress.sql"),
    },
    Migration {
        version: 38,
        name: "digests",
        sql: include_str!("../../migrations/0038_digests.sql"),
    },
    Migration {
        version: 39,
        name: "replay_memory_as_of",
        sql: include_str!("../../migrations/0039_replay_memory_as_of.sql"),
    },
    Migration {
        version: 40,
        name: "dashboard_history",
        sql: include_str!("../../migrations/0040_dashboard_history.sql"),
    },
    Migration {
        version: 41,
        name: "fact_evidence",
        sql: include_str!("../../migrations/0041_fact_evidence.sql"),
    },
    Migration {
        version: 42,
        name: "chunk_roles",
        sql: include_str!("../../migrations/0042_chunk_roles.sql"),
    },
];

/// Every migration this binary knows for PostgreSQL, in order. The engine came after
/// libSQL's first 33 migrations, so its first is the whole schema as of version 33; each
/// later one is written for both engines under the same number.
pub const POSTGRES_MIGRATIONS: &[Migration] = &[
    Migration {
        version: 33,
        name: "schema",
        sql: include_str!("../../migrations/postgres/0033_schema.sql"),
    },
    Migration {
        version: 34,
        name: "claims_tell_no_one",
        sql: include_str!("../../migrations/postgres/0034_claims_tell_no_one.sql"),
    },
    Migration {
        version: 35,
        name: "reruns",
        sql: include_str!("../../migrations/postgres/0035_reruns.sql"),
    },
    Migration {
        version: 36,
        name: "alerts",
        sql: include_str!("../../migrations/postgres/0036_alerts.sql"),
    },
    Migration {
        version: 37,
        name: "run_progress",
        sql: include_str!("../../migrations/postgres/0037_run_progress.sql"),
    },
    Migration {
        version: 38,
        name: "digests",
        sql: include_str!("../../migrations/postgres/0038_digests.sql"),
    },
    Migration {
        version: 39,
        name: "replay_memory_as_of",
        sql: include_str!("../../migrations/postgres/0039_replay_memory_as_of.sql"),
    },
    Migration {
        version: 40,
        name: "dashboard_history",
        sql: include_str!("../../migrations/postgres/0040_dashboard_history.sql"),
    },
    Migration {
        version: 41,
        name: "fact_evidence",
        sql: include_str!("../../migrations/postgres/0041_fact_evidence.sql"),
    },
    Migration {
        version: 42,
        name: "chunk_roles",
        sql: include_str!("../../migrations/postgres/0042_chunk_roles.sql"),
    },
];

/// The migrations of `db`'s engine.
fn migrations(db: &Db) -> &'static [Migration] {
    if db.is_postgres() {
        POSTGRES_MIGRATIONS
    } else {
        MIGRATIONS
    }
}

/// The schema version this binary writes (the same on both engines).
pub fn latest_version() -> i64 {
    MIGRATIONS.last().map_or(0, |m| m.version)
}

fn checksum(sql: &str) -> String {
    blake3::hash(sql.as_bytes()).to_hex().to_string()
}

#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct MigrationStatus {
    pub version: i64,
    pub name: String,
    /// When it was applied (UTC ms), or `None` while pending.
    pub applied_at: Option<i64>,
}

const CREATE_TABLE: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at INTEGER NOT NULL
)";

struct Applied {
    version: i64,
    name: String,
    checksum: String,
    applied_at: i64,
}

/// [`CREATE_TABLE`] on PostgreSQL, with 64-bit integers for the times.
const CREATE_TABLE_POSTGRES: &str = "CREATE TABLE IF NOT EXISTS schema_migrations (
    version    BIGINT PRIMARY KEY,
    name       TEXT NOT NULL,
    checksum   TEXT NOT NULL,
    applied_at BIGINT NOT NULL
)";

async fn applied(conn: &super::Conn) -> Result<Vec<Applied>, DbError> {
    let create = if conn.is_postgres() {
        CREATE_TABLE_POSTGRES
    } else {
        CREATE_TABLE
    };
    conn.execute(create, ()).await?;
    let mut rows = conn
        .query(
            "SELECT version, name, checksum, applied_at FROM schema_migrations ORDER BY version",
            (),
        )
        .await?;
    let mut out = Vec::new();
    while let Some(row) = rows.next().await? {
        out.push(Applied {
            version: row.get(0)?,
            name: row.get(1)?,
            checksum: row.get(2)?,
            applied_at: row.get(3)?,
        });
    }
    Ok(out)
}

/// Checks what is applied against what this binary knows; returns the pending ones.
fn verify(
    migrations: &'static [Migration],
    applied: &[Applied],
) -> Result<Vec<&'static Migration>, DbError> {
    let binary = latest_version();
    if let Some(newest) = applied.iter().map(|a| a.version).max() {
        if newest > binary {
            return Err(DbError::SchemaTooNew {
                database: newest,
                binary,
            });
        }
    }
    for done in applied {
        if let Some(known) = migrations.iter().find(|m| m.version == done.version) {
            let expected = checksum(known.sql);
            if done.checksum != expected {
                return Err(DbError::ChecksumMismatch {
                    version: done.version,
                    name: done.name.clone(),
                    applied: done.checksum.clone(),
                    expected,
                });
            }
        }
    }
    Ok(migrations
        .iter()
        .filter(|m| !applied.iter().any(|a| a.version == m.version))
        .collect())
}

/// Applies every pending migration, each in its own transaction. Returns how many ran.
pub async fn migrate(db: &Db) -> Result<usize, DbError> {
    migrate_to(db, latest_version()).await
}

/// Applies the pending migrations up to `version` (a test of an upgrade starts from an
/// older schema), each in its own transaction. Returns how many ran.
pub async fn migrate_to(db: &Db, version: i64) -> Result<usize, DbError> {
    let conn = db.conn().await?;
    let pending = verify(migrations(db), &applied(&conn).await?)?;
    let mut ran = 0;
    for migration in pending.into_iter().filter(|m| m.version <= version) {
        let tx = conn.write_tx().await?;
        // Another process may have applied it between our read and our lock.
        let already: Option<i64> = super::query_scalar(
            &tx,
            "SELECT version FROM schema_migrations WHERE version = ?1",
            [migration.version],
        )
        .await?;
        if already.is_some() {
            tx.rollback().await?;
            continue;
        }
        tx.execute_batch(migration.sql).await?;
        tx.execute(
            "INSERT INTO schema_migrations (version, name, checksum, applied_at) VALUES (?1, ?2, ?3, ?4)",
            libsql::params![migration.version, migration.name, checksum(migration.sql), clock::now_ms()],
        )
        .await?;
        tx.commit().await?;
        tracing::info!(
            version = migration.version,
            name = migration.name,
            "applied migration"
        );
        ran += 1;
    }
    Ok(ran)
}

/// Every known migration with when it was applied; fails like [`migrate`] on a database
/// this binary must not touch.
pub async fn status(db: &Db) -> Result<Vec<MigrationStatus>, DbError> {
    let conn = db.conn().await?;
    let applied = applied(&conn).await?;
    verify(migrations(db), &applied)?;
    Ok(migrations(db)
        .iter()
        .map(|m| MigrationStatus {
            version: m.version,
            name: m.name.to_string(),
            applied_at: applied
                .iter()
                .find(|a| a.version == m.version)
                .map(|a| a.applied_at),
        })
        .collect())
}

/// Fails unless the schema is exactly what this binary expects.
pub async fn ensure_current(db: &Db) -> Result<(), DbError> {
    let conn = db.conn().await?;
    let pending = verify(migrations(db), &applied(&conn).await?)?;
    if pending.is_empty() {
        Ok(())
    } else {
        Err(DbError::NotMigrated(pending.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrations_are_numbered_in_order() {
        for (i, m) in MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, i as i64 + 1, "{}", m.name);
        }
    }

    /// A migration added for libSQL without its PostgreSQL twin fails here: both engines
    /// reach the same version, one by one after the PostgreSQL schema's.
    #[test]
    fn both_engines_reach_the_same_version() {
        let first = POSTGRES_MIGRATIONS[0].version;
        for (i, m) in POSTGRES_MIGRATIONS.iter().enumerate() {
            assert_eq!(m.version, first + i as i64, "{}", m.name);
        }
        assert_eq!(
            POSTGRES_MIGRATIONS.last().map(|m| m.version),
            Some(latest_version())
        );
    }
}
