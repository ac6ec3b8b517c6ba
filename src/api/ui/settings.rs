//! The viewer's own settings: the time zone the dashboard's instants are shown in on
//! hover (relative times need none). Kept in the login session, so each operator's
//! browser has its own, and it ends with the session.

use super::extract::UiForm;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use maud::html;
use serde::Deserialize;

use super::session::UiSession;
use super::views::{layout, Page, Script};
use super::{checked, failure, see_other};
use crate::api::ApiState;
use crate::tokens::ui_sessions::UiSessionError;

pub async fn page(State(state): State<ApiState>, session: UiSession) -> Response {
    view(&session, &session.now(&state), None).into_response()
}

#[derive(Deserialize)]
pub struct ZoneForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    zone: String,
}

pub async fn save(
    State(state): State<ApiState>,
    session: UiSession,
    headers: HeaderMap,
    UiForm(form): UiForm<ZoneForm>,
) -> Response {
    if let Err(refused) = checked(&state, &session, &headers, &form.csrf) {
        return refused.into_response();
    }
    match session.set_zone(&state, &form.zone).await {
        Ok(()) => see_other("/ui/settings"),
        Err(err @ UiSessionError::UnknownZone(_)) => (
            StatusCode::BAD_REQUEST,
            view(&session, &session.now(&state), Some(&err.to_string())),
        )
            .into_response(),
        Err(err) => failure(err),
    }
}

fn view(session: &UiSession, now: &super::moments::Now, error: Option<&str>) -> Page {
    let current = session.zone;
    layout(
        "Settings",
        Some(&session.csrf),
        Script::None,
        html! {
            @if let Some(error) = error { p.error role="alert" { (error) } }
            form method="post" action="/ui/settings" {
                input type="hidden" name="csrf" value=(session.csrf);
                label for="zone" { "Time zone" }
                select #zone name="zone" {
                    @for zone in zones() {
                        option value=(zone.name()) selected[zone == current] { (zone.name()) }
                    }
                }
                button type="submit" { "Save" }
            }
            p.hint {
                "Times on these pages read relative to now (\"in 12 min\", \"3 h ago\"); hover one for the exact instant, in this zone. Now: "
                (now.instant(now.ms)) ". Kept for this login only; a schedule's own times stay in its zone."
            }
        },
    )
}

/// Every zone this build knows, UTC first, then by name.
fn zones() -> impl Iterator<Item = chrono_tz::Tz> {
    let mut rest: Vec<chrono_tz::Tz> = chrono_tz::TZ_VARIANTS
        .iter()
        .copied()
        .filter(|z| *z != chrono_tz::Tz::UTC)
        .collect();
    rest.sort_by_key(|z| z.name());
    std::iter::once(chrono_tz::Tz::UTC).chain(rest)
}
