//! The dashboard's two scripts, in the binary: `refresh.js` brings a page that changes on
//! its own up to date in place, `run-live.js` follows a run on its page. A page loads one
//! of them with the nonce its answer's policy names (see `views::Page`); every page works
//! without them.

use axum::http::header;
use axum::response::{IntoResponse, Response};

const REFRESH: &str = include_str!("refresh.js");
const RUN_LIVE: &str = include_str!("run-live.js");

fn script(source: &'static str) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "max-age=3600"),
        ],
        source,
    )
        .into_response()
}

pub async fn refresh() -> Response {
    script(REFRESH)
}

pub async fn run_live() -> Response {
    script(RUN_LIVE)
}
