//! From what a caller asks for ([`ScheduleSpec`]: the CLI's flags, a config entry, an API
//! body) to a schedule to store: the cadence resolved from whichever way it was given,
//! every error naming the field it came from.

use chrono_tz::Tz;

use super::bounds::{parse_bound, Bounds};
use super::cadence::{parse_duration, parse_instant, parse_zone, Cadence, CadenceError};
use super::types::{Alerts, NewSchedule, Source, Upstream};
use super::{Result, ScheduleError};
use crate::input::printable;
use crate::notify::router::split_channel;
use crate::spec::ChainOn;
pub use crate::spec::ScheduleSpec;

/// The ways a caller says when; exactly one of `cron`, `every`, `at`, `when`,
/// `triggered` is given.
#[derive(Debug, Clone, Copy, Default)]
pub struct CadenceSpec<'a> {
    pub cron: Option<&'a str>,
    pub tz: Option<&'a str>,
    pub every: Option<&'a str>,
    pub at: Option<&'a str>,
    pub when: Option<&'a str>,
    /// No times of its own.
    pub triggered: bool,
}

impl<'a> CadenceSpec<'a> {
    pub fn of(spec: &'a ScheduleSpec) -> Self {
        Self {
            cron: spec.cron.as_deref(),
            tz: spec.tz.as_deref(),
            every: spec.every.as_deref(),
            at: spec.at.as_deref(),
            when: spec.when.as_deref(),
            // A schedule that follows another needs no cadence of its own.
            triggered: spec.triggered || (spec.after.is_some() && spec.cadences_given() == 0),
        }
    }

    /// The cadence and, for natural language, the caller's own words.
    pub fn resolve(&self, now_ms: i64, default_tz: &str) -> Result<(Cadence, Option<String>)> {
        let field = |field: &'static str| move |source| ScheduleError::Cadence { field, source };
        let tz_name = self.tz.unwrap_or(default_tz);
        let tz: Tz = parse_zone(tz_name).map_err(field("tz"))?;
        if self.triggered {
            if [self.cron, self.every, self.at, self.when]
                .iter()
                .any(Option::is_some)
            {
                return Err(ScheduleError::Input(crate::input::InputError::new(
                    "triggered",
                    "a triggered schedule has no cadence: give no cron, every, at or when",
                )));
            }
            return Ok((
                Cadence::Triggered {
                    tz: tz.name().to_string(),
                },
                None,
            ));
        }
        match (self.cron, self.every, self.at, self.when) {
            (Some(expr), None, None, None) => {
                Ok((Cadence::cron(expr, tz.name()).map_err(field("cron"))?, None))
            }
            (None, Some(every), None, None) => {
                let every_secs = parse_duration(every).map_err(field("every"))?;
                let cadence = Cadence::every(every_secs, now_ms, tz).ok_or_else(|| {
                    ScheduleError::Cadence {
                        field: "every",
                        source: super::CadenceError::DurationTooLong(printable(every).into_owned()),
                    }
                })?;
                Ok((cadence, None))
            }
            (None, None, Some(at), None) => {
                let at = parse_instant(at, tz).map_err(field("at"))?;
                Ok((Cadence::once(at, tz), None))
            }
            (None, None, None, Some(text)) => Ok((
                super::natural::parse(text, now_ms, tz).map_err(field("when"))?,
                Some(text.trim().to_string()),
            )),
            _ => Err(ScheduleError::Input(crate::input::InputError::new(
                "cadence",
                "give exactly one of cron, every, at, when (or triggered, or after)",
            ))),
        }
    }
}

/// The schedule a spec describes, for `user_id`, made by `source`. Resolves the cadence
/// against `now_ms` (relative phrases, an interval's first run); the checks that depend
/// on limits are [`super::validate`]'s.
pub fn to_new_schedule(
    spec: &ScheduleSpec,
    user_id: &str,
    source: Source,
    now_ms: i64,
    default_tz: &str,
) -> Result<NewSchedule> {
    let (cadence, cadence_text) = CadenceSpec::of(spec).resolve(now_ms, default_tz)?;
    let mut new = NewSchedule::new(user_id, spec.goal.clone(), cadence);
    new.name = spec.name.clone();
    new.cadence_text = cadence_text;
    new.source = source;
    if let Some(channel) = &spec.channel {
        let (id, context) = split_channel(channel);
        new.channel_id = Some(id);
        new.channel_context_id = context;
    }
    if let Some(notify) = spec.notify {
        new.notify = notify;
    }
    if let Some(overlap) = spec.overlap {
        new.overlap = overlap;
    }
    if let Some(catch_up) = spec.catch_up {
        new.catch_up = catch_up;
    }
    if let Some(n) = spec.max_attempts {
        new.max_attempts = n;
    }
    new.timeout_secs = spec.timeout_secs;
    new.max_turns = spec.max_turns;
    new.max_cost = spec.max_cost;
    new.agent_id = spec.agent.clone();
    new.tools = spec.tools.clone();
    new.approve = spec.approve.clone();
    new.alerts = Alerts {
        late_secs: spec
            .alert_late
            .as_deref()
            .map(|d| parse_duration(d).map_err(bound_error("alert_late")))
            .transpose()?,
        failures: spec.alert_failures,
        silent_secs: spec
            .alert_silent
            .as_deref()
            .map(|d| parse_duration(d).map_err(bound_error("alert_silent")))
            .transpose()?,
    };
    let tz = new.cadence.zone();
    new.bounds = Bounds {
        starts_at: spec
            .starts_at
            .as_deref()
            .map(|t| parse_bound(t, tz, false).map_err(bound_error("starts_at")))
            .transpose()?,
        ends_at: spec
            .ends_at
            .as_deref()
            .map(|t| parse_bound(t, tz, true).map_err(bound_error("ends_at")))
            .transpose()?,
        max_runs: spec.max_runs,
        skip: spec.skip.clone(),
        calendars: spec.calendars.clone(),
        // Read from the configuration by the caller, which has it.
        calendar_dates: Vec::new(),
    };
    new.jitter_secs = spec
        .jitter
        .as_deref()
        .map(|j| parse_duration(j).map_err(bound_error("jitter")))
        .transpose()?;
    new.catch_up_window_secs = spec
        .catch_up_window
        .as_deref()
        .map(|w| parse_duration(w).map_err(bound_error("catch_up_window")))
        .transpose()?;
    new.after = upstream(spec.after.as_deref(), spec.on)?;
    Ok(new)
}

/// A bound that cannot be read, named.
pub fn bound_error(field: &'static str) -> impl Fn(CadenceError) -> ScheduleError {
    move |source| ScheduleError::Cadence { field, source }
}

/// The schedule a new one follows, from `after` and `on` (default `succeeded`). Whether
/// it exists, is the same user's and forms no cycle is the store's check, in the
/// transaction that stores the schedule.
pub fn upstream(after: Option<&str>, on: Option<ChainOn>) -> Result<Option<Upstream>> {
    match (after, on) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err(ScheduleError::Input(crate::input::InputError::new(
            "on",
            "`on` says which runs of the schedule given by `after` start this one: give `after` too",
        ))),
        (Some(id), on) => {
            crate::input::check_text("after", id, crate::input::MAX_ID_BYTES, crate::input::Lines::One)?;
            Ok(Some(Upstream {
                schedule_id: id.trim().to_string(),
                on: on.unwrap_or(ChainOn::Succeeded),
                status: None,
            }))
        }
    }
}
