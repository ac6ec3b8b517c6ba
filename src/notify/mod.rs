//! Notifications: a finished run is told to its user on the channel the schedule came
//! from, through a durable outbox, so nothing is lost or sent twice across restarts or
//! channel outages.

pub mod changes;
pub mod channels;
pub mod digest;
pub mod grants;
pub mod outbox;
pub(crate) mod policy;
pub mod quiet;
pub mod router;
pub mod sender;
