//! Which channel a schedule's messages go to: the channel it came from when that channel
//! is configured, else the user's default channel, else the log.

use std::collections::{BTreeMap, BTreeSet};

use super::outbox::NotifyPlan;
use crate::config::{Config, NotifyConfig, UserConfig};
use crate::time_of_day::DailyTime;

/// `ID` or `ID:CONTEXT` (the context may itself contain colons, as `chat:thread` does).
pub fn split_channel(channel: &str) -> (String, Option<String>) {
    match channel.split_once(':') {
        Some((id, context)) => (id.to_string(), Some(context.to_string())),
        None => (channel.to_string(), None),
    }
}

/// Who a message is for and where it came from.
#[derive(Debug, Clone, Copy)]
pub struct Recipient<'a> {
    pub user_id: &'a str,
    /// For the log line when its channel is not configured.
    pub schedule_id: &'a str,
    pub channel_id: Option<&'a str>,
    pub channel_context_id: Option<&'a str>,
}

#[derive(Debug, Clone)]
pub struct Router {
    public_url: Option<String>,
    channels: BTreeSet<String>,
    user_defaults: BTreeMap<String, String>,
    /// When each configured user's digest goes out; others' at `[notify] digest_at` UTC.
    digest_times: BTreeMap<String, DailyTime>,
    notify: NotifyConfig,
}

impl Router {
    pub fn from_config(config: &Config) -> Self {
        Self {
            public_url: config
                .server
                .public_url
                .as_ref()
                .map(|u| u.trim_end_matches('/').to_string()),
            channels: config.channels.keys().cloned().collect(),
            user_defaults: config
                .users
                .iter()
                .filter_map(|(user, settings)| {
                    Some((user.clone(), settings.default_channel.clone()?))
                })
                .collect(),
            digest_times: config
                .users
                .iter()
                .map(|(user, settings)| {
                    (user.clone(), settings.digest_time(&config.notify.digest_at))
                })
                .collect(),
            notify: config.notify.clone(),
        }
    }

    /// The plan for a message to `channel` (`ID` or `ID:CONTEXT`) itself.
    pub fn plan_to(&self, channel: &str) -> NotifyPlan {
        let (channel_id, channel_context_id) = split_channel(channel);
        let mut plan = self.plan(&Recipient {
            user_id: "",
            schedule_id: "",
            channel_id: None,
            channel_context_id: None,
        });
        plan.channel_id = channel_id;
        plan.channel_context_id = channel_context_id;
        plan
    }

    pub fn plan(&self, to: &Recipient<'_>) -> NotifyPlan {
        let origin = to
            .channel_id
            .filter(|id| self.channels.contains(*id))
            .map(|id| (id.to_string(), to.channel_context_id.map(str::to_string)));
        if origin.is_none() {
            if let Some(id) = to.channel_id {
                tracing::warn!(schedule_id = %to.schedule_id, channel = %id, "schedule names a channel that is not configured; using the user's default");
            }
        }
        let (channel_id, channel_context_id) = origin
            .or_else(|| self.user_defaults.get(to.user_id).map(|c| split_channel(c)))
            .unwrap_or_else(|| ("log".to_string(), None));
        NotifyPlan {
            channel_id,
            channel_context_id,
            marker: self.notify.marker.clone(),
            failure_notice_after: self.notify.failure_notice_after,
            max_message_chars: self.notify.max_message_chars,
            public_url: self.public_url.clone(),
            ttl_ms: [
                self.notify.ttl_high_secs * 1000,
                self.notify.ttl_normal_secs * 1000,
                self.notify.ttl_low_secs * 1000,
            ],
            max_pending_per_channel: self.notify.max_pending_per_channel,
            digest_at: self
                .digest_times
                .get(to.user_id)
                .copied()
                .unwrap_or_else(|| UserConfig::default().digest_time(&self.notify.digest_at)),
        }
    }
}
