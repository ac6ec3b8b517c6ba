//! Which channel a schedule's messages go to: the channel it came from when that channel
//! is configured, else the user's default channel, else the log.

use std::collections::{BTreeMap, BTreeSet};

use super::outbox::NotifyPlan;
use crate::config::{Config, NotifyConfig};
use crate::schedule::sync::split_channel;
use crate::schedule::types::Schedule;

#[derive(Debug, Clone)]
pub struct Router {
    channels: BTreeSet<String>,
    user_defaults: BTreeMap<String, String>,
    notify: NotifyConfig,
}

impl Router {
    pub fn from_config(config: &Config) -> Self {
        Self {
            channels: config.channels.keys().cloned().collect(),
            user_defaults: config
                .users
                .iter()
                .filter_map(|(user, settings)| {
                    Some((user.clone(), settings.default_channel.clone()?))
                })
                .collect(),
            notify: config.notify.clone(),
        }
    }

    pub fn plan(&self, schedule: &Schedule) -> NotifyPlan {
        let origin = schedule
            .channel_id
            .as_ref()
            .filter(|id| self.channels.contains(*id))
            .map(|id| (id.clone(), schedule.channel_context_id.clone()));
        if origin.is_none() {
            if let Some(id) = &schedule.channel_id {
                tracing::warn!(schedule_id = %schedule.schedule_id, channel = %id, "schedule names a channel that is not configured; using the user's default");
            }
        }
        let (channel_id, channel_context_id) = origin
            .or_else(|| {
                self.user_defaults
                    .get(&schedule.user_id)
                    .map(|c| split_channel(c))
            })
            .unwrap_or_else(|| ("log".to_string(), None));
        NotifyPlan {
            channel_id,
            channel_context_id,
            marker: self.notify.marker.clone(),
            failure_notice_after: self.notify.failure_notice_after,
            ttl_ms: [
                self.notify.ttl_high_secs * 1000,
                self.notify.ttl_normal_secs * 1000,
                self.notify.ttl_low_secs * 1000,
            ],
        }
    }
}
