//! Times and durations as a person reads them on the dashboard: relative to now ("in 12
//! min", "3 h ago"), with the exact instant on hover in the viewer's zone (kept in their
//! session; UTC until they choose one), and in the `datetime` attribute as the views
//! render it (in the schedule's zone, or UTC) for whatever reads the page.

use chrono::DateTime;
use chrono_tz::Tz;
use maud::{html, Markup};

/// The moment a page is drawn, and the zone its viewer reads instants in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Now {
    /// Unix ms.
    pub ms: i64,
    pub zone: Tz,
}

impl Now {
    /// UTC's view of `ms`.
    #[cfg(test)]
    pub fn utc(ms: i64) -> Self {
        Now { ms, zone: Tz::UTC }
    }

    /// `ms` as an instant in the viewer's zone: `2026-11-27 09:00:00 CET (Europe/Paris)`,
    /// or `… UTC`.
    pub fn instant(&self, ms: i64) -> String {
        let Some(at) = DateTime::from_timestamp_millis(ms) else {
            return ms.to_string();
        };
        let local = at.with_timezone(&self.zone);
        let shown = local.format("%Y-%m-%d %H:%M:%S %Z").to_string();
        if self.zone == Tz::UTC {
            shown
        } else {
            format!("{shown} ({})", self.zone.name())
        }
    }
}

/// `ms` relative to `now`, in the largest unit that fits: seconds, minutes, hours, days.
pub fn relative(ms: i64, now: i64) -> String {
    let delta = i128::from(ms) - i128::from(now);
    let secs = delta.unsigned_abs() / 1000;
    if secs == 0 {
        return "now".to_string();
    }
    let amount = match secs {
        0..60 => format!("{secs} s"),
        60..3_600 => format!("{} min", secs / 60),
        3_600..172_800 => format!("{} h", secs / 3_600),
        _ => format!("{} d", secs / 86_400),
    };
    if delta > 0 {
        format!("in {amount}")
    } else {
        format!("{amount} ago")
    }
}

/// A length of time: "850 ms", "12 s", "3 min 5 s", "2 h 4 min", "3 d 2 h".
pub fn duration(ms: i64) -> String {
    let ms = ms.max(0);
    let secs = ms / 1000;
    match secs {
        0 => format!("{ms} ms"),
        1..60 => format!("{secs} s"),
        60..3_600 => format!("{} min {} s", secs / 60, secs % 60),
        3_600..86_400 => format!("{} h {} min", secs / 3_600, secs % 3_600 / 60),
        _ => format!("{} d {} h", secs / 86_400, secs % 86_400 / 3_600),
    }
}

/// An instant the views rendered as RFC 3339 (`at`), shown relative to `now` with the
/// exact instant in the viewer's zone on hover; shown as it is when it does not read as
/// one.
pub fn moment(at: &str, now: Now) -> Markup {
    match DateTime::parse_from_rfc3339(at) {
        Ok(instant) => {
            let ms = instant.timestamp_millis();
            html! { time datetime=(at) title=(now.instant(ms)) { (relative(ms, now.ms)) } }
        }
        Err(_) => html! { (at) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn every_pair_of_instants_reads_with_its_direction(ms in any::<i64>(), now in any::<i64>()) {
            let text = relative(ms, now);
            let secs = (i128::from(ms) - i128::from(now)) / 1000;
            prop_assert_eq!(text.starts_with("in "), secs > 0, "{}", text);
            prop_assert_eq!(text.ends_with(" ago"), secs < 0, "{}", text);
            prop_assert_eq!(text == "now", secs == 0, "{}", text);
        }

        #[test]
        fn every_length_reads_in_its_largest_unit(ms in any::<i64>()) {
            let text = duration(ms);
            prop_assert!(!text.is_empty() && !text.contains('-'), "{}", text);
        }
    }

    #[test]
    fn units_change_where_a_reader_expects() {
        let now = 1_800_000_000_000;
        assert_eq!(relative(now + 12 * 60_000, now), "in 12 min");
        assert_eq!(relative(now - 3 * 3_600_000 - 5, now), "3 h ago");
        assert_eq!(relative(now - 59_999, now), "59 s ago");
        assert_eq!(relative(now + 3 * 86_400_000, now), "in 3 d");
        assert_eq!(duration(850), "850 ms");
        assert_eq!(duration(185_000), "3 min 5 s");
        let markup = moment("2027-01-15T09:00:00+01:00", Now::utc(1_800_000_000_000)).into_string();
        assert!(
            markup.contains("datetime=\"2027-01-15T09:00:00+01:00\""),
            "{markup}"
        );
        assert!(
            markup.contains("title=\"2027-01-15 08:00:00 UTC\""),
            "{markup}"
        );
        assert_eq!(moment("soon", Now::utc(0)).into_string(), "soon");
    }

    #[test]
    fn the_hover_shows_the_viewers_zone_by_name() {
        let lisbon_summer = Now {
            ms: 0,
            zone: Tz::Europe__Lisbon,
        };
        // 2027-07-01T12:00:00Z: Lisbon keeps summer time then.
        assert_eq!(
            lisbon_summer.instant(1_814_443_200_000),
            "2027-07-01 13:00:00 WEST (Europe/Lisbon)"
        );
        let markup = moment("2027-07-01T14:00:00+02:00", lisbon_summer).into_string();
        assert!(
            markup.contains("title=\"2027-07-01 13:00:00 WEST (Europe/Lisbon)\""),
            "{markup}"
        );
    }

    proptest! {
        #[test]
        fn every_instant_reads_in_every_zone(ms in any::<i64>(), zone in prop::sample::select(chrono_tz::TZ_VARIANTS.to_vec())) {
            let shown = Now { ms: 0, zone }.instant(ms);
            prop_assert!(!shown.is_empty());
        }
    }
}
