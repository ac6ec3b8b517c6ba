//! What can go wrong with a schedule, by kind.

use super::CadenceError;
use crate::db::DbError;
use crate::error::{ErrorKind, Kind};
use crate::input::InputError;
use crate::memory::MemoryError;

#[derive(Debug, thiserror::Error)]
pub enum ScheduleError {
    /// No such schedule, or not the caller's.
    #[error("no schedule `{}`", crate::input::shown_id(.0))]
    NotFound(String),
    /// No such run, or not the caller's.
    #[error("no run `{}`", crate::input::shown_id(.0))]
    RunNotFound(String),
    #[error(transparent)]
    Input(#[from] InputError),
    /// A cadence that cannot be used, with the field it came from.
    #[error("invalid {field}: {source}")]
    Cadence {
        field: &'static str,
        source: CadenceError,
    },
    /// Valid, but not in the schedule's present state.
    #[error("{0}")]
    State(String),
    #[error("user `{user_id}` already has {limit} schedules (scheduler.max_per_user)")]
    TooMany { user_id: String, limit: i64 },
    /// A `[[schedules]]` entry of the config file that cannot be used: `key` is its path
    /// (`schedules[1].cron`).
    #[error("invalid config value `{key}` (schedule `{name}`): {reason}")]
    Config {
        key: String,
        name: String,
        reason: String,
    },
    #[error("cannot store the run's transcript: {0}")]
    Transcript(MemoryError),
    #[error(transparent)]
    Db(#[from] DbError),
}

impl From<libsql::Error> for ScheduleError {
    fn from(err: libsql::Error) -> Self {
        ScheduleError::Db(DbError::Sql(err))
    }
}

impl Kind for ScheduleError {
    fn kind(&self) -> ErrorKind {
        match self {
            ScheduleError::NotFound(_) | ScheduleError::RunNotFound(_) => ErrorKind::NotFound,
            ScheduleError::Input(_) | ScheduleError::Cadence { .. } => ErrorKind::BadInput,
            ScheduleError::State(_) | ScheduleError::TooMany { .. } => ErrorKind::Conflict,
            ScheduleError::Config { .. } => ErrorKind::Config,
            ScheduleError::Transcript(err) => err.kind(),
            ScheduleError::Db(err) => err.kind(),
        }
    }
}

pub type Result<T, E = ScheduleError> = std::result::Result<T, E>;
