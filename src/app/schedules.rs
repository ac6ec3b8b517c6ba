//! Adding a schedule, the operation every door calls: the caller's spec resolved into a
//! schedule, its channel checked against the configuration (a user may notify only through
//! the channels granted to them, each context checked for its kind), then stored.

use super::App;
use crate::access::Actor;
use crate::input::InputError;
use crate::notify::channels::check_context;
use crate::schedule::spec::{to_new_schedule, ScheduleSpec};
use crate::schedule::types::{NewSchedule, Schedule, Source};
use crate::schedule::Result;

impl App {
    /// Resolves `spec` into the schedule it describes for `user_id`, and checks it as
    /// [`App::add_schedule`] would, without storing it.
    pub fn resolve_schedule(
        &self,
        actor: &Actor,
        user_id: &str,
        spec: &ScheduleSpec,
    ) -> Result<NewSchedule> {
        if !actor.may_act_for(user_id) {
            return Err(
                InputError::new("user", "a user may add schedules only for themselves").into(),
            );
        }
        let new = to_new_schedule(
            spec,
            user_id,
            Source::Tool,
            self.clock().now_ms(),
            &self.config.scheduler.default_timezone,
        )?;
        self.check_channel(actor, &new)?;
        crate::schedule::validate::check_new(&new, self.clock().now_ms(), self.schedules.limits())?;
        Ok(new)
    }

    /// Adds a schedule for `user_id` (a user actor: only themselves).
    pub async fn add_schedule(
        &self,
        actor: &Actor,
        user_id: &str,
        spec: &ScheduleSpec,
    ) -> Result<Schedule> {
        let new = self.resolve_schedule(actor, user_id, spec)?;
        self.schedules.create(actor, &new).await
    }

    /// The channel a schedule names must be configured (or be the log), granted to a user
    /// acting for themselves, and its context must suit its kind.
    fn check_channel(&self, actor: &Actor, new: &NewSchedule) -> Result<()> {
        let Some(id) = new.channel_id.as_deref() else {
            return Ok(());
        };
        let printable = crate::input::printable(id);
        let settings = self.config.channels.get(id);
        if settings.is_none() && id != "log" {
            return Err(InputError::new(
                "channel",
                format!("no channel `{printable}` is configured"),
            )
            .into());
        }
        if let Actor::User(user) = actor {
            let grants = self.config.users.get(user);
            let granted = id == "log"
                || grants.is_some_and(|g| {
                    g.channels.iter().any(|c| c == id)
                        || g.default_channel
                            .as_deref()
                            .is_some_and(|d| d.split(':').next() == Some(id))
                });
            if !granted {
                return Err(InputError::new(
                    "channel",
                    format!(
                        "channel `{printable}` is not granted to this user ([users.<id>] channels)"
                    ),
                )
                .into());
            }
        }
        if let (Some(settings), Some(context)) = (settings, new.channel_context_id.as_deref()) {
            check_context(settings.kind, context)
                .map_err(|reason| InputError::new("channel", reason))?;
        }
        Ok(())
    }
}
