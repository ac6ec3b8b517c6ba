//! Adding and changing a schedule, the operations every door calls: the caller's spec (or
//! patch) resolved into a schedule, its channel checked against the configuration (a user
//! may notify only through the channels granted to them, each context checked for its
//! kind), then stored.

use super::App;
use crate::access::Actor;
use crate::input::InputError;
use crate::notify::router::split_channel;
use crate::schedule::bounds::parse_bound;
use crate::schedule::cadence::{parse_duration, parse_zone};
use crate::schedule::spec::{bound_error, to_new_schedule, upstream, CadenceSpec, ScheduleSpec};
use crate::schedule::store::Edited;
use crate::schedule::types::{NewSchedule, Schedule, Source};
use crate::schedule::{Cadence, Result, ScheduleError};
use crate::spec::{ClearField, SchedulePatch};

impl App {
    /// Resolves `spec` into the schedule it describes for `user_id`, and checks it as
    /// [`App::add_schedule`] would, without storing it.
    pub async fn resolve_schedule(
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
        let now = self.clock().now_ms();
        let mut new = to_new_schedule(
            spec,
            user_id,
            Source::Tool,
            now,
            &self.config.scheduler.default_timezone,
        )?;
        new.jitter_secs = crate::schedule::jitter::with_default(
            new.jitter_secs,
            self.config.scheduler.default_jitter_secs,
            &new.cadence,
            now,
        );
        self.check_channel(actor, &new)?;
        new.bounds.calendar_dates = self.schedules.calendar_dates(&new.bounds.calendars).await?;
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
        let new = self.resolve_schedule(actor, user_id, spec).await?;
        self.schedules.create(actor, &new).await
    }

    /// Changes a schedule in place (see [`ScheduleStore::edit`](crate::schedule::ScheduleStore::edit)):
    /// the fields `patch` gives replace the schedule's; a new cadence, or a new zone, gives
    /// it its next runs again. Checked as `add` checks, and nothing changes on an error.
    pub async fn edit_schedule(
        &self,
        actor: &Actor,
        schedule_id: &str,
        patch: &SchedulePatch,
    ) -> Result<Schedule> {
        if patch.is_empty() {
            return Err(InputError::new("patch", "give at least one field to change").into());
        }
        if patch.cadences_given() > 1 {
            return Err(InputError::new(
                "cadence",
                "give at most one of cron, every, at, when, triggered",
            )
            .into());
        }
        if patch.triggered == Some(false) {
            return Err(InputError::new(
                "triggered",
                "to give a triggered schedule times of its own, give a cadence (cron, every, at or when)",
            )
            .into());
        }
        for field in &patch.clear {
            let set = match field {
                ClearField::Name => patch.name.is_some(),
                ClearField::Channel => patch.channel.is_some(),
                ClearField::TimeoutSecs => patch.timeout_secs.is_some(),
                ClearField::MaxTurns => patch.max_turns.is_some(),
                ClearField::MaxCost => patch.max_cost.is_some(),
                ClearField::StartsAt => patch.starts_at.is_some(),
                ClearField::EndsAt => patch.ends_at.is_some(),
                ClearField::MaxRuns => patch.max_runs.is_some(),
                ClearField::Skip => patch.skip.is_some(),
                ClearField::Jitter => patch.jitter.is_some(),
                ClearField::CatchUpWindow => patch.catch_up_window.is_some(),
                ClearField::After => patch.after.is_some() || patch.on.is_some(),
                ClearField::Calendars => patch.calendars.is_some(),
                ClearField::Agent => patch.agent.is_some(),
                ClearField::Tools => patch.tools.is_some(),
                ClearField::Approve => patch.approve.is_some(),
                ClearField::AlertLate => patch.alert_late.is_some(),
                ClearField::AlertFailures => patch.alert_failures.is_some(),
                ClearField::AlertSilent => patch.alert_silent.is_some(),
            };
            if set {
                return Err(InputError::new(
                    "clear",
                    format!("`{field}` is both given and cleared"),
                )
                .into());
            }
        }
        let now = self.clock().now_ms();
        self.schedules
            .edit(actor, schedule_id, |current| {
                let edited = self.patched(current, patch, now)?;
                if patch.channel.is_some() {
                    self.check_channel(actor, &edited.new)?;
                }
                Ok(edited)
            })
            .await
    }

    /// `current` with `patch` applied.
    fn patched(&self, current: &Schedule, patch: &SchedulePatch, now: i64) -> Result<Edited> {
        let mut new = NewSchedule::from(current);
        let zone = current.cadence.zone();
        let field = |field: &'static str| move |source| ScheduleError::Cadence { field, source };
        // Words that describe a recurring cadence are read again in a new zone; a
        // one-shot keeps its instant ("in 2 hours" must not move).
        let words_again = patch.tz.is_some()
            && new.cadence_text.is_some()
            && !matches!(new.cadence, Cadence::Once { .. });
        let cadence_changed = if patch.cadences_given() == 1 || words_again {
            // A new cadence, or words read again in the new zone.
            let text = new.cadence_text.clone();
            let spec = CadenceSpec {
                triggered: patch.triggered == Some(true)
                    || (patch.cadences_given() == 0
                        && matches!(new.cadence, Cadence::Triggered { .. })),
                cron: patch.cron.as_deref(),
                every: patch.every.as_deref(),
                at: patch.at.as_deref(),
                when: patch.when.as_deref().or(if patch.cadences_given() == 0 {
                    text.as_deref()
                } else {
                    None
                }),
                tz: Some(patch.tz.as_deref().unwrap_or(zone.name())),
            };
            let (cadence, words) = spec.resolve(now, &self.config.scheduler.default_timezone)?;
            new.cadence = cadence;
            new.cadence_text = words;
            true
        } else if let Some(tz) = &patch.tz {
            new.cadence = new
                .cadence
                .in_zone(parse_zone(tz).map_err(field("tz"))?)
                .map_err(field("tz"))?;
            true
        } else {
            false
        };
        if let Some(name) = &patch.name {
            new.name = Some(name.clone());
        }
        if let Some(goal) = &patch.goal {
            new.goal = goal.clone();
        }
        if let Some(channel) = &patch.channel {
            let (id, context) = split_channel(channel);
            new.channel_id = Some(id);
            new.channel_context_id = context;
        }
        if let Some(notify) = patch.notify {
            new.notify = notify;
        }
        if let Some(overlap) = patch.overlap {
            new.overlap = overlap;
        }
        if let Some(catch_up) = patch.catch_up {
            new.catch_up = catch_up;
        }
        if let Some(n) = patch.max_attempts {
            new.max_attempts = n;
        }
        if patch.timeout_secs.is_some() {
            new.timeout_secs = patch.timeout_secs;
        }
        if patch.max_turns.is_some() {
            new.max_turns = patch.max_turns;
        }
        if patch.max_cost.is_some() {
            new.max_cost = patch.max_cost;
        }
        let tz = new.cadence.zone();
        if let Some(start) = &patch.starts_at {
            new.bounds.starts_at =
                Some(parse_bound(start, tz, false).map_err(bound_error("starts_at"))?);
        }
        if let Some(end) = &patch.ends_at {
            new.bounds.ends_at = Some(parse_bound(end, tz, true).map_err(bound_error("ends_at"))?);
        }
        if patch.max_runs.is_some() {
            new.bounds.max_runs = patch.max_runs;
        }
        if let Some(skip) = &patch.skip {
            new.bounds.skip = skip.clone();
        }
        if let Some(tools) = &patch.tools {
            new.tools = tools.clone();
        }
        if let Some(approve) = &patch.approve {
            new.approve = approve.clone();
        }
        if let Some(calendars) = &patch.calendars {
            new.bounds.calendars = calendars.clone();
        }
        if let Some(jitter) = &patch.jitter {
            new.jitter_secs = Some(parse_duration(jitter).map_err(bound_error("jitter"))?);
        }
        if patch.after.is_some() || patch.on.is_some() {
            let after = patch
                .after
                .as_deref()
                .or(current.after.as_ref().map(|a| a.schedule_id.as_str()));
            // A new upstream alone keeps the condition; a new condition alone keeps the
            // upstream.
            let on = patch.on.or(current.after.as_ref().map(|a| a.on));
            new.after = upstream(after, on)?;
        }
        if patch.agent.is_some() {
            new.agent_id = patch.agent.clone();
        }
        if let Some(window) = &patch.catch_up_window {
            new.catch_up_window_secs =
                Some(parse_duration(window).map_err(bound_error("catch_up_window"))?);
        }
        if let Some(late) = &patch.alert_late {
            new.alerts.late_secs = Some(parse_duration(late).map_err(bound_error("alert_late"))?);
        }
        if patch.alert_failures.is_some() {
            new.alerts.failures = patch.alert_failures;
        }
        if let Some(silent) = &patch.alert_silent {
            new.alerts.silent_secs =
                Some(parse_duration(silent).map_err(bound_error("alert_silent"))?);
        }
        for cleared in &patch.clear {
            match cleared {
                ClearField::Name => new.name = None,
                ClearField::Channel => {
                    new.channel_id = None;
                    new.channel_context_id = None;
                }
                ClearField::TimeoutSecs => new.timeout_secs = None,
                ClearField::MaxTurns => new.max_turns = None,
                ClearField::MaxCost => new.max_cost = None,
                ClearField::StartsAt => new.bounds.starts_at = None,
                ClearField::EndsAt => new.bounds.ends_at = None,
                ClearField::MaxRuns => new.bounds.max_runs = None,
                ClearField::Skip => new.bounds.skip.clear(),
                ClearField::Jitter => new.jitter_secs = None,
                ClearField::CatchUpWindow => new.catch_up_window_secs = None,
                ClearField::After => new.after = None,
                ClearField::Calendars => new.bounds.calendars.clear(),
                ClearField::Agent => new.agent_id = None,
                ClearField::Tools => new.tools.clear(),
                ClearField::Approve => new.approve.clear(),
                ClearField::AlertLate => new.alerts.late_secs = None,
                ClearField::AlertFailures => new.alerts.failures = None,
                ClearField::AlertSilent => new.alerts.silent_secs = None,
            }
        }
        // A schedule with no times has nothing to spread: a jitter it had (the configured
        // default, say) goes, unless this patch gives one, which is refused as it should.
        if matches!(new.cadence, Cadence::Triggered { .. }) && patch.jitter.is_none() {
            new.jitter_secs = None;
        }
        // New bounds or jitter move the next run as a new cadence does.
        let bounds_changed = new.bounds != current.bounds || new.jitter_secs != current.jitter_secs;
        Ok(Edited {
            new,
            cadence_changed: cadence_changed || bounds_changed,
        })
    }

    /// The channel a schedule names must be configured (or be the log), granted to a user
    /// acting for themselves, and its context must suit its kind.
    fn check_channel(&self, actor: &Actor, new: &NewSchedule) -> Result<()> {
        Ok(self.channel_grants().check(
            actor,
            new.channel_id.as_deref(),
            new.channel_context_id.as_deref(),
        )?)
    }

    /// The configured channels and each user's grants.
    pub fn channel_grants(&self) -> crate::notify::grants::ChannelGrants {
        crate::notify::grants::ChannelGrants::from_config(&self.config)
    }
}
