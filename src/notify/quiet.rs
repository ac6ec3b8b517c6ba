//! Who is in quiet hours: each user's and each channel's window (`[users.X]` and
//! `[channels.X] quiet_hours`), read once from the config, and which messages wait for
//! its end.

use std::collections::HashMap;

use super::outbox::{Message, Priority};
use crate::config::Config;
use crate::quiet_hours::QuietHours;

/// The users and the channels with quiet hours, by id.
#[derive(Debug, Clone, Default)]
pub struct QuietPolicy {
    users: HashMap<String, QuietHours>,
    channels: HashMap<String, QuietHours>,
}

impl QuietPolicy {
    pub fn from_config(config: &Config) -> Self {
        Self {
            users: config
                .users
                .iter()
                .filter_map(|(id, user)| Some((id.clone(), user.quiet_hours()?)))
                .collect(),
            channels: config
                .channels
                .iter()
                .filter_map(|(id, channel)| Some((id.clone(), channel.quiet_hours()?)))
                .collect(),
        }
    }

    /// Until when `message` waits at `now`: the end of its user's or its channel's quiet
    /// hours (the later, when both hold), unless it is urgent (high priority: a failed
    /// run, an approval asked for), a memory change (an event for a system to sync, not a
    /// person to read), or neither window holds.
    pub fn hold_until(&self, message: &Message, now: i64) -> Option<i64> {
        if message.priority == Priority::High.as_str() || message.kind == "memory" {
            return None;
        }
        let user = self.users.get(&message.user_id);
        let channel = self.channels.get(&message.channel_id);
        [user, channel]
            .into_iter()
            .flatten()
            .filter_map(|quiet| quiet.ends_after(now))
            .max()
    }
}
