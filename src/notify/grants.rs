//! Which channels a user's schedules may notify through: a channel must be configured (or
//! be the log), granted to a user acting for themselves (`[users.<id>] channels` or their
//! default channel), and a context must suit the channel's kind. Checked once here for
//! every door that stores a schedule: the API, MCP, the CLI and an import.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::access::Actor;
use crate::config::{ChannelConfig, Config, UserConfig};
use crate::input::{printable, InputError};
use crate::notify::channels::check_context;

/// The configured channels and each user's grants.
#[derive(Debug, Clone, Default)]
pub struct ChannelGrants {
    channels: Arc<BTreeMap<String, ChannelConfig>>,
    users: Arc<BTreeMap<String, UserConfig>>,
}

impl ChannelGrants {
    pub fn from_config(config: &Config) -> Self {
        Self {
            channels: Arc::new(config.channels.clone()),
            users: Arc::new(config.users.clone()),
        }
    }

    /// Checks that `actor` may have a schedule notify through `channel` (with `context`);
    /// `None` is the user's default, always allowed.
    pub fn check(
        &self,
        actor: &Actor,
        channel: Option<&str>,
        context: Option<&str>,
    ) -> Result<(), InputError> {
        let Some(id) = channel else {
            return Ok(());
        };
        let shown = printable(id);
        let settings = self.channels.get(id);
        if settings.is_none() && id != "log" {
            return Err(InputError::new(
                "channel",
                format!("no channel `{shown}` is configured"),
            ));
        }
        if let Actor::User(user) = actor {
            let granted = id == "log"
                || self.users.get(user).is_some_and(|g| {
                    g.channels.iter().any(|c| c == id)
                        || g.default_channel
                            .as_deref()
                            .is_some_and(|d| d.split(':').next() == Some(id))
                });
            if !granted {
                return Err(InputError::new(
                    "channel",
                    format!(
                        "channel `{shown}` is not granted to this user ([users.<id>] channels)"
                    ),
                ));
            }
        }
        if let (Some(settings), Some(context)) = (settings, context) {
            check_context(settings.kind, context)
                .map_err(|reason| InputError::new("channel", reason))?;
        }
        Ok(())
    }
}
