//! Jitter: a schedule with `jitter` runs each occurrence a fixed offset in `[0, jitter)`
//! after its nominal time, so ten thousand "every day at 9am" schedules do not reach the
//! runtime in the same second. The offset comes from the schedule's id and the
//! occurrence's nominal time alone, so every worker and every restart agrees on it; the
//! nominal time stays the occurrence's identity (exactly-once is unchanged).

use super::Cadence;
use crate::input::InputError;

/// Longest jitter accepted: a day.
pub const MAX_JITTER_SECS: i64 = 86_400;

/// When the occurrence `nominal` of `schedule_id` is due, with `jitter_secs` of jitter.
pub fn due_at(schedule_id: &str, nominal: i64, jitter_secs: Option<i64>) -> i64 {
    let window = jitter_secs.unwrap_or(0).clamp(0, MAX_JITTER_SECS) * 1000;
    if window == 0 {
        return nominal;
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(schedule_id.as_bytes());
    hasher.update(&nominal.to_le_bytes());
    let bytes = hasher.finalize();
    let draw = u64::from_le_bytes(bytes.as_bytes()[..8].try_into().expect("8 bytes"));
    let offset = i64::try_from(draw % window as u64).unwrap_or(0);
    nominal.saturating_add(offset)
}

/// The shortest gap between the cadence's next occurrences after `now_ms` (`None` for a
/// one-shot): a jitter must be shorter, or occurrences would pass each other.
fn shortest_gap_secs(cadence: &Cadence, now_ms: i64) -> Option<i64> {
    if matches!(cadence, Cadence::Once { .. }) {
        return None;
    }
    let mut previous = cadence.next_after(now_ms)?;
    let mut gap: Option<i64> = None;
    for _ in 0..64 {
        let Some(next) = cadence.next_after(previous) else {
            break;
        };
        let secs = (next - previous) / 1000;
        gap = Some(gap.map_or(secs, |g| g.min(secs)));
        previous = next;
    }
    gap
}

/// A jitter must be at least a second, at most a day, and shorter than the gap between
/// the cadence's occurrences.
pub fn check(jitter_secs: Option<i64>, cadence: &Cadence, now_ms: i64) -> Result<(), InputError> {
    let Some(jitter) = jitter_secs else {
        return Ok(());
    };
    crate::input::check_range("jitter", jitter, 1..=MAX_JITTER_SECS)?;
    if let Some(gap) = shortest_gap_secs(cadence, now_ms) {
        // A day-long gap in local time loses an hour on a daylight-saving day, which the
        // occurrences looked at may not include: keep that hour free.
        let room = if gap > 2 * 3600 { gap - 3600 } else { gap };
        if jitter >= room {
            return Err(InputError::new(
                "jitter",
                format!(
                    "{jitter}s leaves no room between occurrences {gap}s apart (at most {}s)",
                    room - 1
                ),
            ));
        }
    }
    Ok(())
}

/// The configured default jitter for a schedule that sets none, when it fits its cadence.
pub fn with_default(
    jitter_secs: Option<i64>,
    default_secs: i64,
    cadence: &Cadence,
    now_ms: i64,
) -> Option<i64> {
    jitter_secs.or_else(|| {
        // A triggered schedule has no times to spread.
        if matches!(cadence, Cadence::Triggered { .. }) {
            return None;
        }
        let default = (default_secs > 0).then_some(default_secs)?;
        check(Some(default), cadence, now_ms).ok().map(|()| default)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn the_offset_is_inside_the_window_and_the_same_every_time(
            id in "sch-[a-z0-9]{1,20}",
            nominal in 0i64..253_402_300_799_000,
            jitter in proptest::option::of(any::<i64>()),
        ) {
            let due = due_at(&id, nominal, jitter);
            prop_assert_eq!(due, due_at(&id, nominal, jitter));
            let window = jitter.unwrap_or(0).clamp(0, MAX_JITTER_SECS) * 1000;
            prop_assert!(due >= nominal);
            prop_assert!(due - nominal < window.max(1));
        }
    }

    #[test]
    fn offsets_spread_over_the_window() {
        let offsets: Vec<i64> = (0..1000)
            .map(|i| due_at(&format!("sch-{i}"), 0, Some(300)))
            .collect();
        let early = offsets.iter().filter(|&&o| o < 150_000).count();
        assert!(
            (400..600).contains(&early),
            "{early} of 1000 in the first half"
        );
    }

    #[test]
    fn a_jitter_must_be_shorter_than_the_gap() {
        let hourly = Cadence::cron("0 * * * *", "UTC").unwrap();
        assert!(check(Some(3599), &hourly, 0).is_ok());
        assert!(check(Some(3600), &hourly, 0).is_err());
        assert!(check(Some(0), &hourly, 0).is_err());
        assert!(check(Some(i64::MAX), &hourly, 0).is_err());
        assert_eq!(
            with_default(None, 7200, &hourly, 0),
            None,
            "a default that does not fit"
        );
        assert_eq!(with_default(None, 300, &hourly, 0), Some(300));
        assert_eq!(with_default(Some(5), 300, &hourly, 0), Some(5));
    }
}
