//! Who is looking at the dashboard: a session started by logging in with an admin token
//! (see [`crate::tokens::ui_sessions`]). The cookie holds the session's own random secret,
//! never the admin token; the page's scripts cannot read it (`HttpOnly`) and the browser
//! sends it only from the dashboard's own pages (`SameSite=Strict`). Every form that
//! changes something also carries a token derived from the session's secret (so it is new
//! with each login), and a request from another origin is refused outright, so a page
//! elsewhere cannot make the browser act for the operator.

use axum::extract::FromRequestParts;
use axum::http::header::{COOKIE, HOST, ORIGIN, SET_COOKIE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};

use super::moments::Now;
use crate::api::ApiState;
use crate::tokens::ui_sessions::{UiSessionError, SESSION_SECS};

pub const COOKIE_NAME: &str = "nightshift_ui";

/// A logged-in operator.
pub struct UiSession {
    /// The form token every change must carry.
    pub csrf: String,
    /// The session's secret, from the cookie (to end it).
    secret: String,
    /// The zone the viewer reads instants in (UTC until they choose one).
    pub zone: chrono_tz::Tz,
}

impl UiSession {
    /// Whether the session is still open (not logged out, not expired, its token usable):
    /// an open event stream asks now and then.
    pub async fn still_open(&self, state: &ApiState) -> bool {
        state
            .app
            .tokens()
            .ui_sessions()
            .open(&self.secret)
            .await
            .is_ok()
    }

    /// This moment, as the viewer reads instants.
    pub fn now(&self, state: &ApiState) -> Now {
        self.now_at(state.app.clock().now_ms())
    }

    /// `ms`, as the viewer reads instants.
    pub fn now_at(&self, ms: i64) -> Now {
        Now {
            ms,
            zone: self.zone,
        }
    }

    /// Keeps `zone` (an IANA name; blank for UTC) as the viewer's.
    pub async fn set_zone(&self, state: &ApiState, zone: &str) -> Result<(), UiSessionError> {
        state
            .app
            .tokens()
            .ui_sessions()
            .set_time_zone(&self.secret, zone)
            .await
    }

    /// Logs out: the session is deleted on the server, so its cookie opens nothing again.
    pub async fn end(&self, state: &ApiState) -> Result<(), UiSessionError> {
        state.app.tokens().ui_sessions().end(&self.secret).await
    }
}

/// The form token for a session's secret: only a page that can read the dashboard's own
/// pages (where it is written) can know it.
pub fn csrf_for(secret: &str) -> String {
    let key = blake3::derive_key("nightshift dashboard form token v1", secret.as_bytes());
    hex::encode(&key[..16])
}

fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(key, _)| *key == name)
        .map(|(_, value)| value)
}

/// The cookie that logs the browser in with a session's secret (or, with `None`, out).
pub fn session_cookie(secret: Option<&str>, secure: bool) -> HeaderValue {
    let (value, age) = match secret {
        Some(secret) => (secret, SESSION_SECS),
        None => ("", 0),
    };
    let secure = if secure { "; Secure" } else { "" };
    HeaderValue::from_str(&format!(
        "{COOKIE_NAME}={value}; Path=/ui; HttpOnly; SameSite=Strict; Max-Age={age}{secure}"
    ))
    .unwrap_or_else(|_| HeaderValue::from_static("nightshift_ui=; Path=/ui; Max-Age=0"))
}

/// Whether the browser reaches the server over TLS (directly, or as `public_url` says).
pub fn secure(state: &ApiState) -> bool {
    let server = &state.app.config().server;
    server.tls_cert_file.is_some()
        || server
            .public_url
            .as_deref()
            .is_some_and(|url| url.starts_with("https://"))
}

/// A change refused before it was looked at: the page says why, with 403.
#[derive(Debug)]
pub struct Refused(&'static str);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        (StatusCode::FORBIDDEN, super::views::error(self.0)).into_response()
    }
}

/// Refuses a request another site's page made: one whose `Origin` is neither this
/// server's (the `Host` it was sent to) nor `public_url`'s (the address users reach it by,
/// through a proxy that may send another `Host`), or that the browser marks as cross-site.
pub fn same_origin(headers: &HeaderMap, public_url: Option<&str>) -> Result<(), Refused> {
    let refused = Refused("Refused: the request came from another site.");
    if headers
        .get("sec-fetch-site")
        .is_some_and(|v| v.as_bytes() == b"cross-site")
    {
        return Err(refused);
    }
    if let Some(origin) = headers.get(ORIGIN).and_then(|v| v.to_str().ok()) {
        let host = headers
            .get(HOST)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("");
        let origin_host = origin
            .strip_prefix("http://")
            .or_else(|| origin.strip_prefix("https://"))
            .unwrap_or("");
        let public = public_url.is_some_and(|url| origin == origin_of(url));
        if !public && (origin_host.is_empty() || origin_host != host) {
            return Err(refused);
        }
    }
    Ok(())
}

/// The origin (`scheme://host[:port]`) of a URL: what a browser sends as `Origin` for a
/// page there.
fn origin_of(url: &str) -> &str {
    let url = url.trim_end_matches('/');
    let after_scheme = url.find("://").map_or(0, |i| i + 3);
    match url[after_scheme..].find('/') {
        Some(path) => &url[..after_scheme + path],
        None => url,
    }
}

/// Checks a form's token against the session's, in constant time.
pub fn check_csrf(session: &UiSession, sent: &str) -> Result<(), Refused> {
    if sent.len() == session.csrf.len()
        && sent
            .bytes()
            .zip(session.csrf.bytes())
            .fold(0u8, |acc, (a, b)| acc | (a ^ b))
            == 0
    {
        Ok(())
    } else {
        Err(Refused(
            "Refused: the form is stale or not from this dashboard; reload the page.",
        ))
    }
}

fn to_login(clear: bool, secure: bool) -> Response {
    let mut response = Redirect::to("/ui/login").into_response();
    if clear {
        response
            .headers_mut()
            .insert(SET_COOKIE, session_cookie(None, secure));
    }
    response
}

impl FromRequestParts<ApiState> for UiSession {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, state: &ApiState) -> Result<Self, Response> {
        let secure = secure(state);
        let Some(secret) = cookie(&parts.headers, COOKIE_NAME).filter(|s| !s.is_empty()) else {
            return Err(to_login(false, secure));
        };
        match state.app.tokens().ui_sessions().open(secret).await {
            Ok(found) => {
                state
                    .rate
                    .check(&found.token_id)
                    .map_err(IntoResponse::into_response)?;
                Ok(UiSession {
                    csrf: csrf_for(secret),
                    secret: secret.to_string(),
                    zone: found.time_zone.unwrap_or(chrono_tz::Tz::UTC),
                })
            }
            // Unknown, expired, logged out, or its admin token revoked or expired: log the
            // browser out.
            Err(UiSessionError::Ended) => Err(to_login(true, secure)),
            // The database failing (busy, unreachable) says nothing about the login: the
            // operator keeps it and sees the error.
            Err(other) => Err(super::failure(other)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cookie_is_found_among_others_and_only_by_its_name() {
        let mut headers = HeaderMap::new();
        headers.insert(
            COOKIE,
            HeaderValue::from_static("a=1; nightshift_ui=nsui_x; b=2"),
        );
        assert_eq!(cookie(&headers, COOKIE_NAME), Some("nsui_x"));
        headers.insert(COOKIE, HeaderValue::from_static("xnightshift_ui=nst_y"));
        assert_eq!(cookie(&headers, COOKIE_NAME), None);
    }

    #[test]
    fn cross_site_requests_are_refused() {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("127.0.0.1:7431"));
        assert!(
            same_origin(&headers, None).is_ok(),
            "no Origin: a form post from the page"
        );
        headers.insert(ORIGIN, HeaderValue::from_static("http://127.0.0.1:7431"));
        assert!(same_origin(&headers, None).is_ok());
        headers.insert(ORIGIN, HeaderValue::from_static("http://evil.example"));
        assert!(same_origin(&headers, None).is_err());
        headers.insert(ORIGIN, HeaderValue::from_static("null"));
        assert!(same_origin(&headers, None).is_err());
        headers.remove(ORIGIN);
        headers.insert("sec-fetch-site", HeaderValue::from_static("cross-site"));
        assert!(same_origin(&headers, None).is_err());
    }

    #[test]
    fn behind_a_proxy_the_public_address_is_this_sites() {
        let mut headers = HeaderMap::new();
        headers.insert(HOST, HeaderValue::from_static("127.0.0.1:7431"));
        headers.insert(ORIGIN, HeaderValue::from_static("https://ns.example.com"));
        assert!(same_origin(&headers, None).is_err());
        for public in [
            "https://ns.example.com",
            "https://ns.example.com/",
            "https://ns.example.com/nightshift",
        ] {
            assert!(same_origin(&headers, Some(public)).is_ok(), "{public}");
        }
        for other in [
            "http://ns.example.com",
            "https://ns.example.com:8443",
            "https://example.com",
        ] {
            assert!(same_origin(&headers, Some(other)).is_err(), "{other}");
        }
    }

    #[test]
    fn a_form_token_is_the_sessions_own() {
        let session = UiSession {
            csrf: csrf_for("nsui_secret"),
            secret: "nsui_secret".into(),
            zone: chrono_tz::Tz::UTC,
        };
        assert!(check_csrf(&session, &csrf_for("nsui_secret")).is_ok());
        assert!(check_csrf(&session, &csrf_for("nsui_other")).is_err());
        assert!(check_csrf(&session, "").is_err());
    }
}
