//! `Portable`, the store export and import work on, and `PortableParts`, what it is built from.

use std::sync::Arc;

use crate::artifact::ArtifactStore;
use crate::db::clock::Clock;
use crate::db::Db;
use crate::memory::Memory;
use crate::notify::grants::ChannelGrants;
use crate::schedule::store::ScheduleStore;

/// What export and import work on: the database, the memory store (its limits, and the
/// index rebuilt after an import) and the artifact store (content read on export).
#[derive(Clone)]
pub struct Portable {
    pub(super) db: Db,
    pub(super) memory: Memory,
    pub(super) artifacts: ArtifactStore,
    /// What an imported schedule is checked by: the store's limits and chain rules, and
    /// the channels granted to its user.
    pub(super) schedules: ScheduleStore,
    pub(super) grants: ChannelGrants,
    pub(super) clock: Arc<dyn Clock>,
}

/// What [`Portable`] is made of.
pub struct PortableParts {
    pub db: Db,
    pub memory: Memory,
    pub artifacts: ArtifactStore,
    pub schedules: ScheduleStore,
    pub grants: ChannelGrants,
    pub clock: Arc<dyn Clock>,
}
