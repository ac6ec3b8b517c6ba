//! The dashboard over HTTP, as a browser would use it and as a hostile page would try:
//! admin tokens only, the cookie's flags, sessions of their own (not the admin token,
//! ended by logging out, by time and with their token), forms that need their token and
//! this site, stored text shown as text, and each action changing what the database holds.

mod common;

use std::sync::Arc;

use common::api::TestApi;
use common::browser::{no_redirects, Browser};
use nightshift::access::Actor;
use nightshift::db::clock::ManualClock;
use nightshift::db::query_scalar;
use nightshift::memory::NewNote;
use nightshift::spec::ScheduleSpec;
use nightshift::tokens::NewToken;
use reqwest::header::{COOKIE, LOCATION, ORIGIN, SET_COOKIE};

#[tokio::test]
async fn only_an_admin_token_logs_in_and_the_cookie_is_kept_from_scripts_and_other_sites() {
    let api = TestApi::start(|_| {}).await;
    let page = no_redirects()
        .get(format!("{}/ui", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 303);
    assert_eq!(page.headers()[LOCATION], "/ui/login");

    let user = api.token(Some("alice")).await;
    let refused = Browser::login(&api, &user).await;
    assert_eq!(refused.status(), 403);
    assert!(refused.headers().get(SET_COOKIE).is_none());
    let unknown = Browser::login(&api, "nst_made_up").await;
    assert_eq!(unknown.status(), 401);
    assert!(unknown.headers().get(SET_COOKIE).is_none());

    let admin = api.token(None).await;
    let ok = Browser::login(&api, &admin).await;
    assert_eq!(ok.status(), 303);
    let cookie = ok.headers()[SET_COOKIE].to_str().unwrap().to_string();
    for flag in ["HttpOnly", "SameSite=Strict", "Path=/ui"] {
        assert!(cookie.contains(flag), "{cookie}");
    }
    // A login posted by another site's page is refused.
    let forged = no_redirects()
        .post(format!("{}/ui/login", api.base))
        .header(ORIGIN, "http://evil.example")
        .form(&[("token", admin.as_str())])
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 403);

    let browser = Browser::logged_in(&api).await;
    let page = browser
        .client
        .get(format!("{}/ui", api.base))
        .header(COOKIE, &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), 200);
    let csp = page.headers()["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("default-src 'none'") && csp.contains("frame-ancestors 'none'"));
    assert_eq!(page.headers()["x-frame-options"], "DENY");

    // Revoked: the next page logs the browser out.
    for token in api.app.tokens().list().await.unwrap() {
        api.app.tokens().revoke(&token.token_id).await.unwrap();
    }
    let after = browser
        .client
        .get(format!("{}/ui", api.base))
        .header(COOKIE, &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(after.status(), 303);
    assert!(after.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
}

#[tokio::test]
async fn actions_need_the_form_token_and_this_site_and_then_change_the_database() {
    let api = TestApi::start(|_| {}).await;
    let schedule = api
        .app
        .add_schedule(
            &Actor::Operator,
            "alice",
            &ScheduleSpec {
                goal: "<script>alert('goal')</script> summarise".into(),
                every: Some("1h".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let id = schedule.schedule_id.clone();
    let browser = Browser::logged_in(&api).await;

    let (status, page) = browser.get("/ui").await;
    assert_eq!(status, 200);
    assert!(
        page.contains("&lt;script&gt;alert('goal')&lt;/script&gt; summarise"),
        "{page}"
    );
    assert!(!page.contains("<script>"), "stored text is shown as text");

    let pause = format!("/ui/schedules/{id}/pause");
    let no_token = browser.post(&pause, &[], None).await;
    assert_eq!(no_token.status(), 403);
    let wrong_token = browser
        .post(
            &pause,
            &[("csrf", "0123456789abcdef0123456789abcdef")],
            None,
        )
        .await;
    assert_eq!(wrong_token.status(), 403);
    let csrf = browser.csrf().await;
    let other_site = browser
        .post(&pause, &[("csrf", &csrf)], Some("http://evil.example"))
        .await;
    assert_eq!(other_site.status(), 403);
    let still = api
        .app
        .schedules()
        .get(&Actor::Operator, &id)
        .await
        .unwrap();
    assert_eq!(still.status.as_str(), "active", "nothing changed");

    let paused = browser
        .post(&pause, &[("csrf", &csrf)], Some(&api.base))
        .await;
    assert_eq!(paused.status(), 303);
    let now = api
        .app
        .schedules()
        .get(&Actor::Operator, &id)
        .await
        .unwrap();
    assert_eq!(now.status.as_str(), "paused");
    let resumed = browser
        .post(
            &format!("/ui/schedules/{id}/resume"),
            &[("csrf", &csrf)],
            None,
        )
        .await;
    assert_eq!(resumed.status(), 303);
    let ran = browser
        .post(
            &format!("/ui/schedules/{id}/run-now"),
            &[("csrf", &csrf)],
            None,
        )
        .await;
    assert_eq!(ran.status(), 303);
    let unknown = browser
        .post(
            &format!("/ui/schedules/{id}/explode"),
            &[("csrf", &csrf)],
            None,
        )
        .await;
    assert_eq!(unknown.status(), 404);
    let missing = browser
        .post("/ui/schedules/sch-nope/pause", &[("csrf", &csrf)], None)
        .await;
    assert_eq!(missing.status(), 404);

    let (status, page) = browser.get(&format!("/ui/schedules/{id}")).await;
    assert_eq!(status, 200);
    assert!(page.contains("No runs yet."));

    // A dead letter, retried from the outbox page.
    let conn = api.app.db().conn().await.unwrap();
    conn.execute(
        "INSERT INTO outbox (message_id, idempotency_key, kind, user_id, channel_id, priority,
                             payload_json, status, attempts, next_attempt_at, expires_at,
                             last_error, created_at)
         VALUES ('msg-dead', 'k-dead', 'run', 'alice', 'hook', 'normal', '{}', 'dead', 12, 0, 0,
                 'connection refused', 0)",
        (),
    )
    .await
    .unwrap();
    let (_, page) = browser.get("/ui/outbox?status=dead").await;
    assert!(
        page.contains("msg-dead") && page.contains("connection refused"),
        "{page}"
    );
    let retried = browser
        .post("/ui/outbox/msg-dead/retry", &[("csrf", &csrf)], None)
        .await;
    assert_eq!(retried.status(), 303);
    let message = api.app.outbox().get("msg-dead").await.unwrap();
    assert_eq!(message.status, "pending");

    let logout = browser.post("/ui/logout", &[("csrf", &csrf)], None).await;
    assert_eq!(logout.status(), 303);
    assert!(logout.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));
}

#[tokio::test]
async fn search_shows_one_users_memory_and_bad_input_as_a_message() {
    let api = TestApi::start(|_| {}).await;
    let memory = api.app.memory();
    for (user, text) in [
        ("alice", "Alice drinks jasmine tea"),
        ("bob", "Bob drinks jasmine tea too"),
    ] {
        memory
            .save_note(
                user,
                &NewNote {
                    content: text.into(),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
    }
    let browser = Browser::logged_in(&api).await;
    let (status, page) = browser.get("/ui/search?user=alice&q=jasmine+tea").await;
    assert_eq!(status, 200);
    assert!(page.contains("Alice drinks jasmine tea"));
    assert!(!page.contains("Bob drinks"), "one user's memory at a time");
    let (status, page) = browser.get("/ui/search?user=%20alice&q=tea").await;
    assert_eq!(status, 200);
    assert!(page.contains("user id"), "{page}");
    // An agent's own note shows only when searching as that agent.
    memory
        .as_agent(Some("planner"))
        .unwrap()
        .save_note("alice", &NewNote::new("Planner books jasmine tea at noon"))
        .await
        .unwrap();
    let (_, page) = browser.get("/ui/search?user=alice&q=jasmine+tea").await;
    assert!(!page.contains("Planner books"), "shared notes only");
    let (_, page) = browser
        .get("/ui/search?user=alice&agent=planner&q=jasmine+tea")
        .await;
    assert!(page.contains("Planner books") && page.contains("Alice drinks"));
    let (status, page) = browser.get("/ui/search?user=alice&agent=%0A&q=tea").await;
    assert_eq!(status, 200);
    assert!(page.contains("agent id"), "{page}");
    let (status, _) = browser
        .get("/ui/search?user=alice&q=tea&top_k=99999999999999999999")
        .await;
    assert_eq!(status, 200, "unknown parameters are ignored");
    let (status, _) = browser.get("/ui?page=-5").await;
    assert_eq!(status, 200);
    let (status, _) = browser.get("/ui?page=99999999999999999999").await;
    assert_eq!(status, 400);
}

/// A new admin token: its id and its secret.
async fn admin_token(api: &TestApi, expires_in_secs: Option<i64>) -> (String, String) {
    let created = api
        .app
        .tokens()
        .create(&NewToken {
            user_id: None,
            name: None,
            expires_in_secs,
        })
        .await
        .unwrap();
    (created.info.token_id, created.secret)
}

/// Dashboard sessions stored, of one admin token or of all.
async fn sessions_stored(api: &TestApi, token_id: Option<&str>) -> i64 {
    let conn = api.app.db().conn().await.unwrap();
    query_scalar(
        &conn,
        "SELECT count(*) FROM ui_sessions WHERE ?1 IS NULL OR token_id = ?1",
        [token_id],
    )
    .await
    .unwrap()
    .unwrap()
}

/// A schedule of alice's, to act on from the dashboard.
async fn a_schedule(api: &TestApi) -> String {
    api.app
        .add_schedule(
            &Actor::Operator,
            "alice",
            &ScheduleSpec {
                goal: "summarise".into(),
                every: Some("1h".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .schedule_id
}

async fn status_of(api: &TestApi, schedule_id: &str) -> String {
    api.app
        .schedules()
        .get(&Actor::Operator, schedule_id)
        .await
        .unwrap()
        .status
        .as_str()
        .to_string()
}

const LOGGED_OUT: (u16, &str, bool) = (303, "/ui/login", true);

#[tokio::test]
async fn the_cookie_holds_a_session_secret_of_its_own_that_opens_only_the_dashboard() {
    let api = TestApi::start(|_| {}).await;
    let (token_id, admin) = admin_token(&api, None).await;
    let browser = Browser::logged_in_with(&api, &admin).await;
    let secret = browser.secret().to_string();
    assert_ne!(secret, admin, "the cookie is not the admin token");
    assert!(!secret.contains(&admin["nst_".len()..]), "{secret}");
    assert!(secret.starts_with("nsui_"), "{secret}");
    assert_eq!(browser.get("/ui").await.0, 200);

    // The session's secret is no bearer token: it opens no API route, admin or not.
    for path in ["/v1/admin/workers", "/v1/admin/status", "/v1/sessions"] {
        let refused = api.call("GET", path, Some(&secret), None).await;
        assert_eq!(refused.status, 401, "{path}");
    }
    assert_eq!(
        api.call("GET", "/v1/admin/workers", Some(&admin), None)
            .await
            .status,
        200
    );
    // Nor is the admin token a session: put in the cookie by hand, it opens nothing.
    let by_hand = Browser {
        client: no_redirects(),
        base: api.base.clone(),
        cookie: format!("nightshift_ui={admin}"),
    };
    assert_eq!(
        by_hand.redirected("/ui").await,
        (303, "/ui/login".into(), true)
    );

    // Stored as its hash, with the admin token it came from, for twelve hours.
    let conn = api.app.db().conn().await.unwrap();
    let (hash, from, lasts): (String, String, i64) = nightshift::db::query_first_row(
        &conn,
        "SELECT secret_hash, token_id, expires_at - created_at FROM ui_sessions",
        (),
        |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
    )
    .await
    .unwrap()
    .unwrap();
    assert_eq!(hash, blake3::hash(secret.as_bytes()).to_hex().to_string());
    assert_eq!(from, token_id);
    assert_eq!(lasts, 12 * 3600 * 1000);
    let cookie = Browser::login(&api, &admin).await;
    let set = cookie.headers()[SET_COOKIE].to_str().unwrap();
    assert!(set.contains("Max-Age=43200"), "{set}");
}

#[tokio::test]
async fn logging_out_deletes_the_session_so_its_old_cookie_opens_nothing() {
    let api = TestApi::start(|_| {}).await;
    let id = a_schedule(&api).await;
    let browser = Browser::logged_in(&api).await;
    let elsewhere = Browser::logged_in(&api).await;
    let csrf = browser.csrf().await;

    let logout = browser.post("/ui/logout", &[("csrf", &csrf)], None).await;
    assert_eq!(logout.status(), 303);
    assert_eq!(logout.headers()[LOCATION], "/ui/login");
    assert!(logout.headers()[SET_COOKIE]
        .to_str()
        .unwrap()
        .contains("Max-Age=0"));

    // The old cookie, replayed (a copy kept by a proxy log or another browser profile).
    for path in ["/ui", "/ui/outbox", "/ui/search?user=alice&q=tea"] {
        let (status, to, cleared) = browser.redirected(path).await;
        assert_eq!((status, to.as_str(), cleared), LOGGED_OUT, "{path}");
    }
    let pause = browser
        .post(
            &format!("/ui/schedules/{id}/pause"),
            &[("csrf", &csrf)],
            None,
        )
        .await;
    assert_eq!(pause.status(), 303);
    assert_eq!(pause.headers()[LOCATION], "/ui/login");
    assert_eq!(status_of(&api, &id).await, "active", "nothing changed");
    let again = browser.post("/ui/logout", &[("csrf", &csrf)], None).await;
    assert_eq!(again.headers()[LOCATION], "/ui/login");

    // Deleted on the server; another login is its own session, and stays.
    assert_eq!(sessions_stored(&api, None).await, 1);
    assert_eq!(elsewhere.get("/ui").await.0, 200);
}

#[tokio::test]
async fn revoking_an_admin_token_ends_every_session_it_started() {
    let api = TestApi::start(|_| {}).await;
    let (a_id, a) = admin_token(&api, None).await;
    let (b_id, b) = admin_token(&api, None).await;
    let first = Browser::logged_in_with(&api, &a).await;
    let second = Browser::logged_in_with(&api, &a).await;
    let of_b = Browser::logged_in_with(&api, &b).await;
    for browser in [&first, &second, &of_b] {
        assert!(browser.secret().starts_with("nsui_"), "{}", browser.cookie);
        assert_eq!(browser.get("/ui").await.0, 200);
    }
    assert_eq!(sessions_stored(&api, Some(&a_id)).await, 2);

    api.app.tokens().revoke(&a_id).await.unwrap();
    assert_eq!(sessions_stored(&api, Some(&a_id)).await, 0);
    for browser in [&first, &second] {
        let (status, to, cleared) = browser.redirected("/ui").await;
        assert_eq!((status, to.as_str(), cleared), LOGGED_OUT);
    }
    assert_eq!(
        of_b.get("/ui").await.0,
        200,
        "another token's session stays"
    );

    // Revoked by another process (its sessions' rows still there): refused all the same,
    // and the row goes as it is refused.
    let conn = api.app.db().conn().await.unwrap();
    conn.execute(
        "UPDATE api_tokens SET revoked_at = 1 WHERE token_id = ?1",
        [b_id.as_str()],
    )
    .await
    .unwrap();
    assert_eq!(sessions_stored(&api, Some(&b_id)).await, 1);
    let (status, to, cleared) = of_b.redirected("/ui").await;
    assert_eq!((status, to.as_str(), cleared), LOGGED_OUT);
    assert_eq!(sessions_stored(&api, Some(&b_id)).await, 0);
}

const START: i64 = 1_800_000_000_000;
const TWELVE_HOURS_MS: i64 = 12 * 3600 * 1000;

/// The API over an app whose every time is `clock`'s.
async fn api_on(clock: Arc<ManualClock>) -> TestApi {
    TestApi::start_on(clock, |_| {}).await
}

#[tokio::test]
async fn a_session_ends_after_twelve_hours_or_with_its_token_whichever_is_first() {
    let clock = ManualClock::starting_at(START);
    let api = api_on(clock.clone()).await;
    let (_, admin) = admin_token(&api, None).await;
    let browser = Browser::logged_in_with(&api, &admin).await;
    let forgotten = Browser::logged_in_with(&api, &admin).await;

    clock.advance_ms(TWELVE_HOURS_MS - 1000);
    assert_eq!(browser.get("/ui").await.0, 200);
    clock.advance_ms(1000);
    let (status, to, cleared) = browser.redirected("/ui").await;
    assert_eq!((status, to.as_str(), cleared), LOGGED_OUT);
    assert_eq!(
        sessions_stored(&api, None).await,
        1,
        "deleted as it was refused"
    );

    // The admin token outlives its sessions: it logs in again, and the login clears away
    // the sessions that expired unseen.
    let again = Browser::logged_in_with(&api, &admin).await;
    assert_eq!(again.get("/ui").await.0, 200);
    assert_eq!(sessions_stored(&api, None).await, 1);
    let (status, to, _) = forgotten.redirected("/ui").await;
    assert_eq!((status, to.as_str()), (303, "/ui/login"));

    // A token that expires within the twelve hours takes its session with it.
    let (short_id, short) = admin_token(&api, Some(3600)).await;
    let brief = Browser::logged_in_with(&api, &short).await;
    clock.advance_ms(3600 * 1000 - 1000);
    assert_eq!(brief.get("/ui").await.0, 200);
    clock.advance_ms(1000);
    let (status, to, cleared) = brief.redirected("/ui").await;
    assert_eq!((status, to.as_str(), cleared), LOGGED_OUT);
    assert_eq!(sessions_stored(&api, Some(&short_id)).await, 0);
    assert_eq!(again.get("/ui").await.0, 200);
}

#[tokio::test]
async fn each_login_has_its_own_form_token() {
    let api = TestApi::start(|_| {}).await;
    let id = a_schedule(&api).await;
    let (_, admin) = admin_token(&api, None).await;
    let one = Browser::logged_in_with(&api, &admin).await;
    let two = Browser::logged_in_with(&api, &admin).await;
    assert_ne!(one.cookie, two.cookie, "one secret per login");
    let (csrf_one, csrf_two) = (one.csrf().await, two.csrf().await);
    assert_ne!(csrf_one, csrf_two);
    assert_eq!(one.csrf().await, csrf_one, "steady within a login");

    // One login's form token does nothing in another.
    let pause = format!("/ui/schedules/{id}/pause");
    let crossed = two.post(&pause, &[("csrf", &csrf_one)], None).await;
    assert_eq!(crossed.status(), 403);
    assert_eq!(status_of(&api, &id).await, "active");
    let own = two.post(&pause, &[("csrf", &csrf_two)], None).await;
    assert_eq!(own.status(), 303);
    assert_eq!(status_of(&api, &id).await, "paused");

    // Logging in again after logging out gives a new one.
    let out = one.post("/ui/logout", &[("csrf", &csrf_one)], None).await;
    assert_eq!(out.status(), 303);
    let three = Browser::logged_in_with(&api, &admin).await;
    let csrf_three = three.csrf().await;
    assert!(csrf_three != csrf_one && csrf_three != csrf_two);
    assert_eq!(two.get("/ui").await.0, 200);
}

/// The approvals page lists every waiting call, the oldest (the nearest to running out)
/// too, and answers one with the form's token from this site only.
#[tokio::test]
async fn the_approvals_page_shows_every_waiting_call_and_answers_one() {
    let api = TestApi::start(|_| {}).await;
    let schedule = api
        .app
        .add_schedule(
            &Actor::Operator,
            "alice",
            &ScheduleSpec {
                goal: "tidy".into(),
                every: Some("1h".into()),
                ..Default::default()
            },
        )
        .await
        .unwrap();
    let conn = api.app.db().conn().await.unwrap();
    // 250 waiting calls, the first the oldest.
    for i in 0..250 {
        let run = format!("run-{i:03}");
        conn.execute(
            "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status)
             VALUES (?1, ?2, ?3, 'waiting')",
            libsql::params![run.as_str(), schedule.schedule_id.as_str(), i],
        )
        .await
        .unwrap();
        conn.execute(
            "INSERT INTO approvals (approval_id, run_id, schedule_id, user_id, tool_name,
             arguments, created_at, expires_at)
             VALUES (?1, ?2, ?3, 'alice', 'files__write', '{\"i\":1}', ?4, 9999999999999)",
            libsql::params![
                format!("apr-{i:03}"),
                run.as_str(),
                schedule.schedule_id.as_str(),
                1_000 + i
            ],
        )
        .await
        .unwrap();
    }
    let browser = Browser::logged_in(&api).await;
    let (status, page) = browser.get("/ui/approvals").await;
    assert_eq!(status, 200);
    assert!(page.contains("Waiting (250)"), "{page}");
    assert!(page.contains("apr-000"), "the oldest waiting call is shown");
    let csrf = browser.csrf().await;
    let refused = browser
        .post(
            "/ui/approvals/apr-000/approve",
            &[("csrf", csrf.as_str())],
            Some("http://evil.example"),
        )
        .await;
    assert_eq!(refused.status(), 403);
    let without_token = browser
        .post("/ui/approvals/apr-000/approve", &[], None)
        .await;
    assert_ne!(without_token.status(), 303);
    let denied = browser
        .post(
            "/ui/approvals/apr-000/deny",
            &[("csrf", csrf.as_str()), ("note", "not today")],
            None,
        )
        .await;
    assert_eq!(denied.status(), 303);
    let stored = api
        .app
        .approvals()
        .get(&Actor::Operator, "apr-000")
        .await
        .unwrap();
    assert_eq!(stored.state.as_str(), "denied");
    assert_eq!(stored.decided_by.as_deref(), Some("dashboard"));
    assert_eq!(stored.reason.as_deref(), Some("not today"));
    let (_, page) = browser.get("/ui/approvals").await;
    assert!(page.contains("Waiting (249)"), "{page}");
    assert!(page.contains("not today"));
}

/// An ended run's row has a Rerun button: it needs the form token like every action, and
/// queues the run once; a run still going or missing has none to press.
#[tokio::test]
async fn an_ended_run_is_rerun_from_its_schedules_page() {
    use nightshift::schedule::types::RunStatus;
    let api = TestApi::start(|_| {}).await;
    let id = a_schedule_triggered(&api).await;
    api.app
        .schedules()
        .trigger(&Actor::Operator, &id, Some("ticket"), None)
        .await
        .unwrap();
    let claims = common::runs::claim_events(&api.app, "w").await;
    common::runs::finish(&api.app, &claims[0], RunStatus::Failed, "").await;
    let run_id = claims[0].run_id.clone();
    let browser = Browser::logged_in(&api).await;

    let (status, page) = browser.get(&format!("/ui/schedules/{id}")).await;
    assert_eq!(status, 200);
    let rerun = format!("/ui/runs/{run_id}/rerun");
    assert!(page.contains(&rerun), "{page}");
    let no_token = browser.post(&rerun, &[], None).await;
    assert_eq!(no_token.status(), 403);
    assert!(api.app.schedules().due_events(10).await.unwrap().is_empty());
    let csrf = browser.csrf().await;
    let done = browser.post(&rerun, &[("csrf", &csrf)], None).await;
    assert_eq!(done.status(), 303);
    let queued = api.app.schedules().due_events(10).await.unwrap();
    assert_eq!(queued.len(), 1);
    assert_eq!(queued[0].parent_run_id.as_deref(), Some(run_id.as_str()));
    let missing = browser
        .post("/ui/runs/run-nope/rerun", &[("csrf", &csrf)], None)
        .await;
    assert_eq!(missing.status(), 404);
    // The rerun's run, once going, has Cancel and no Rerun; once ended, it says whose
    // rerun it is.
    let claims = common::runs::claim_events(&api.app, "w").await;
    let (_, page) = browser.get(&format!("/ui/schedules/{id}")).await;
    assert!(!page.contains(&format!("/ui/runs/{}/rerun", claims[0].run_id)));
    common::runs::finish(&api.app, &claims[0], RunStatus::Succeeded, "ok").await;
    let (_, page) = browser.get(&format!("/ui/schedules/{id}")).await;
    assert!(
        page.contains(&format!("rerun of <code>{run_id}</code>")),
        "{page}"
    );
    // From the run's page, a rerun that sees memory as the original saw it; its page
    // says as of when.
    let (_, page) = browser.get(&format!("/ui/runs/{run_id}")).await;
    let as_of = format!("/ui/runs/{run_id}/rerun-as-of");
    assert!(page.contains(&as_of), "{page}");
    let done = browser.post(&as_of, &[("csrf", &csrf)], None).await;
    assert_eq!(done.status(), 303);
    let claims = common::runs::claim_events(&api.app, "w").await;
    assert_eq!(claims.len(), 1);
    let original = api
        .app
        .schedules()
        .run(&Actor::Operator, &run_id)
        .await
        .unwrap();
    assert_eq!(claims[0].memory_as_of, original.started_at);
    let (_, page) = browser.get(&format!("/ui/runs/{}", claims[0].run_id)).await;
    assert!(page.contains("Memory as of"), "{page}");
}

/// Reads an event stream until `until` appears in it (or it ends); what it read.
async fn read_stream_until(response: &mut reqwest::Response, until: &str) -> String {
    let mut text = String::new();
    while !text.contains(until) {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(20), response.chunk())
            .await
            .expect("the stream went quiet")
            .unwrap();
        match chunk {
            Some(chunk) => text.push_str(std::str::from_utf8(&chunk).unwrap()),
            None => break,
        }
    }
    text
}

#[tokio::test]
async fn a_runs_page_shows_its_progress_and_follows_it_live_with_its_own_script_alone() {
    use nightshift::schedule::progress::ProgressKind;
    use nightshift::schedule::types::RunStatus;
    use serde_json::json;
    let api = TestApi::start(|_| {}).await;
    let id = a_schedule_triggered(&api).await;
    api.app
        .schedules()
        .trigger(&Actor::Operator, &id, Some("ticket"), None)
        .await
        .unwrap();
    let claims = common::runs::claim_events(&api.app, "w").await;
    let run_id = claims[0].run_id.clone();
    let store = api.app.schedules();
    for (kind, data) in [
        (
            ProgressKind::Status,
            json!({"status": "running", "attempt": 1}),
        ),
        (
            ProgressKind::Turn,
            json!({"turn": 1, "text": "<b>looking</b>", "tool_calls": ["memory_search"]}),
        ),
        (
            ProgressKind::ToolCall,
            json!({"name": "memory_search", "arguments": "{\"query\":\"printer\"}"}),
        ),
    ] {
        store.record_progress(&run_id, kind, &data).await.unwrap();
    }
    let browser = Browser::logged_in(&api).await;

    // The schedule's page links to the run's.
    let (_, schedule_page) = browser.get(&format!("/ui/schedules/{id}")).await;
    assert!(schedule_page.contains(&format!("href=\"/ui/runs/{run_id}\"")));
    let response = browser
        .client
        .get(format!("{}/ui/runs/{run_id}", api.base))
        .header(COOKIE, &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let policy = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    let page = response.text().await.unwrap();
    let nonce = nonce_of(&policy);
    assert!(policy.contains("connect-src 'self'"), "{policy}");
    assert!(
        page.contains(&format!("src=\"/ui/run-live.js\" nonce=\"{nonce}\"")),
        "{page}"
    );
    for seq in 1..=3 {
        assert!(page.contains(&format!("data-seq=\"{seq}\"")), "{page}");
    }
    assert!(page.contains("turn 1: &lt;b&gt;looking&lt;/b&gt; (calls memory_search)"));
    assert!(page.contains("memory_search({&quot;query&quot;:&quot;printer&quot;})"));
    assert!(page.contains(&format!("data-follow=\"/ui/runs/{run_id}/events?after=3\"")));
    let (status, script) = browser.get("/ui/run-live.js").await;
    assert_eq!(status, 200);
    assert!(script.contains("new EventSource(table.dataset.follow)"));

    // The page's stream: what came after the page, each event in words, then the end.
    let mut stream = browser
        .client
        .get(format!("{}/ui/runs/{run_id}/events?after=3", api.base))
        .header(COOKIE, &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 200);
    store
        .record_progress(
            &run_id,
            ProgressKind::ToolResult,
            &json!({"name": "memory_search", "result": "[]"}),
        )
        .await
        .unwrap();
    let text = read_stream_until(&mut stream, "id: 4").await;
    assert!(!text.contains("id: 3"), "{text}");
    common::runs::finish(&api.app, &claims[0], RunStatus::Succeeded, "printer fixed").await;
    let text = read_stream_until(&mut stream, "event: end").await;
    assert!(text.contains("id: 5"), "{text}");
    assert!(text.contains("ended succeeded: printer fixed"), "{text}");
    assert!(text.contains("\"status\":\"succeeded\""), "{text}");

    // A browser that reconnects after the end is told to stop; a bad id is refused; no
    // session, no stream.
    let after_end = browser
        .client
        .get(format!("{}/ui/runs/{run_id}/events", api.base))
        .header(COOKIE, &browser.cookie)
        .header("Last-Event-ID", "5")
        .send()
        .await
        .unwrap();
    assert_eq!(after_end.status(), 204);
    let (status, page) = browser
        .get(&format!("/ui/runs/{run_id}/events?after=x"))
        .await;
    assert_eq!(status, 400);
    assert!(page.contains("Last-Event-ID"), "{page}");
    let anonymous = no_redirects()
        .get(format!("{}/ui/runs/{run_id}/events", api.base))
        .send()
        .await
        .unwrap();
    assert_eq!(anonymous.status(), 303);
    let (status, _) = browser.get("/ui/runs/run-nope").await;
    assert_eq!(status, 404);

    // The ended run's page runs no script and says so.
    let (_, page) = browser.get(&format!("/ui/runs/{run_id}")).await;
    assert!(!page.contains("run-live.js"), "{page}");
    assert!(page.contains("The run ended."));
    assert!(page.contains("data-seq=\"4\""));
}

async fn a_schedule_triggered(api: &TestApi) -> String {
    api.app
        .add_schedule(
            &Actor::Operator,
            "alice",
            &ScheduleSpec {
                goal: "triage".into(),
                triggered: true,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .schedule_id
}

/// The script nonce a page's policy names.
fn nonce_of(policy: &str) -> String {
    let at = policy.find("script-src 'nonce-").expect("a script nonce") + 18;
    policy[at..].split('\'').next().unwrap().to_string()
}

async fn page_and_policy(browser: &Browser, path: &str) -> (String, String) {
    let response = browser
        .client
        .get(format!("{}{path}", browser.base))
        .header(COOKIE, &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    let policy = response.headers()["content-security-policy"]
        .to_str()
        .unwrap()
        .to_string();
    (response.text().await.unwrap(), policy)
}

#[tokio::test]
async fn pages_that_change_refresh_in_place_by_a_script_their_answer_alone_allows() {
    let api = TestApi::start(|_| {}).await;
    let id = a_schedule_triggered(&api).await;
    let browser = Browser::logged_in(&api).await;
    let mut nonces = Vec::new();
    for path in ["/ui", &format!("/ui/schedules/{id}"), "/ui"] {
        let (page, policy) = page_and_policy(&browser, path).await;
        // No page reloads itself under its reader any more.
        assert!(!page.contains("http-equiv=\"refresh\""), "{path}: {page}");
        let nonce = nonce_of(&policy);
        assert_eq!(nonce.len(), 32, "{policy}");
        assert!(
            page.contains(&format!(
                "<script src=\"/ui/refresh.js\" nonce=\"{nonce}\" defer>"
            )),
            "{path}: {page}"
        );
        assert!(page.contains("<main data-refresh=\"10\">"), "{path}");
        assert!(policy.contains("default-src 'none'") && policy.contains("connect-src 'self'"));
        nonces.push(nonce);
    }
    nonces.sort();
    nonces.dedup();
    assert_eq!(nonces.len(), 3, "a nonce serves one answer alone");
    // Pages that do not change on their own run nothing.
    for path in ["/ui/outbox", "/ui/search", "/ui/approvals"] {
        let (page, policy) = page_and_policy(&browser, path).await;
        assert!(!policy.contains("script-src"), "{path}: {policy}");
        assert!(!page.contains("<script"), "{path}");
    }
    let (status, script) = browser.get("/ui/refresh.js").await;
    assert_eq!(status, 200);
    assert!(script.contains("querySelector(\"main[data-refresh]\")"));
}

/// A run of `schedule` at `scheduled_for` that ended as `status`, stored as a worker
/// would leave it.
async fn a_run(api: &TestApi, schedule: &str, run_id: &str, scheduled_for: i64, status: &str) {
    let conn = api.app.db().conn().await.unwrap();
    let error = (status == "failed").then_some("the printer caught fire");
    let summary = (status == "succeeded").then_some("all well");
    conn.execute(
        "INSERT INTO schedule_runs (run_id, schedule_id, scheduled_for, status, started_at,
         finished_at, error, output_summary)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        libsql::params![
            run_id,
            schedule,
            scheduled_for,
            status,
            scheduled_for,
            scheduled_for + 1000,
            error,
            summary
        ],
    )
    .await
    .unwrap();
}

#[tokio::test]
async fn the_runs_page_answers_what_failed_last_night_by_filters_and_pages() {
    use nightshift::schedule::store::RunFilter;
    const DAY: i64 = 86_400_000;
    let night = 1_795_000_000_000; // 2026-11-18
    let api = TestApi::start(|_| {}).await;
    let alices = a_schedule_triggered(&api).await;
    let bobs = api
        .app
        .add_schedule(
            &Actor::Operator,
            "bob",
            &ScheduleSpec {
                goal: "report".into(),
                triggered: true,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .schedule_id;
    a_run(&api, &alices, "run-a-old", night - 3 * DAY, "failed").await;
    a_run(&api, &alices, "run-a-ok", night, "succeeded").await;
    a_run(&api, &alices, "run-a-bad", night + 1000, "failed").await;
    a_run(&api, &bobs, "run-b-bad", night + 2000, "failed").await;
    let browser = Browser::logged_in(&api).await;

    let rows = |page: &str| -> Vec<String> {
        page.match_indices("data-run=\"")
            .map(|(at, _)| page[at + 10..].split('"').next().unwrap().to_string())
            .collect()
    };
    let (status, page) = browser.get("/ui/runs").await;
    assert_eq!(status, 200);
    assert_eq!(
        rows(&page),
        ["run-b-bad", "run-a-bad", "run-a-ok", "run-a-old"]
    );
    assert!(page.contains("4 run(s)"));
    assert!(page.contains("href=\"/ui/runs/run-a-bad\""));

    // What failed last night, anyone's; then only alice's.
    let since = "2026-11-18";
    let (_, page) = browser
        .get(&format!(
            "/ui/runs?status=failed&since={since}&until={since}"
        ))
        .await;
    assert_eq!(rows(&page), ["run-b-bad", "run-a-bad"], "{page}");
    let (_, page) = browser
        .get(&format!("/ui/runs?status=failed&user=alice&since={since}"))
        .await;
    assert_eq!(rows(&page), ["run-a-bad"]);
    let (_, page) = browser.get(&format!("/ui/runs?schedule={bobs}")).await;
    assert_eq!(rows(&page), ["run-b-bad"]);
    assert!(page.contains("the printer caught fire"));

    // A bad filter is refused naming it, with the form to mend it; nothing is listed.
    for (query, field) in [
        ("status=exploded", "status"),
        ("since=yesterday-ish", "since"),
        ("user=a%0Ab", "user"),
    ] {
        let (status, page) = browser.get(&format!("/ui/runs?{query}")).await;
        assert_eq!(status, 400, "{query}");
        assert!(
            page.contains(&format!("invalid {field}")),
            "{query}: {page}"
        );
        assert!(page.contains("id=\"run-filters\""));
        assert!(rows(&page).is_empty());
    }

    // Pages of 50, newest first, the filters kept from page to page.
    for n in 0..55 {
        a_run(
            &api,
            &alices,
            &format!("run-p{n:02}"),
            night + 10 * DAY + n,
            "failed",
        )
        .await;
    }
    let (_, first) = browser.get("/ui/runs?status=failed&user=alice").await;
    assert_eq!(rows(&first).len(), 50);
    assert_eq!(rows(&first)[0], "run-p54");
    assert!(first.contains("href=\"/ui/runs?status=failed&amp;user=alice&amp;page=2\""));
    let (_, second) = browser
        .get("/ui/runs?status=failed&user=alice&page=2")
        .await;
    assert_eq!(
        rows(&second),
        [
            "run-p04",
            "run-p03",
            "run-p02",
            "run-p01",
            "run-p00",
            "run-a-bad",
            "run-a-old"
        ]
    );

    // A user's list is theirs alone: naming another user lists nothing of theirs.
    let store = api.app.schedules();
    let mut filter = RunFilter::parse(None, Some("bob"), None, None, None).unwrap();
    let (theirs, total) = store
        .list_runs(&Actor::User("alice".into()), &filter)
        .await
        .unwrap();
    assert!(theirs.is_empty() && total == 0);
    filter.user_id = None;
    let (own, total) = store
        .list_runs(&Actor::User("bob".into()), &filter)
        .await
        .unwrap();
    assert_eq!((own.len(), total), (1, 1));
    filter.limit = 0;
    assert!(store.list_runs(&Actor::Operator, &filter).await.is_err());

    // The API's door to the same list: a user's token lists theirs alone.
    let alice = api.token(Some("alice")).await;
    let admin = api.token(None).await;
    let path = format!("/v1/runs?status=failed&since={since}&until={since}");
    let mine = api.call("GET", &path, Some(&alice), None).await;
    assert_eq!(mine.status, 200);
    assert_eq!(mine.body["total"], 1);
    assert_eq!(mine.body["runs"][0]["run_id"], "run-a-bad");
    let everyone = api.call("GET", &path, Some(&admin), None).await;
    assert_eq!(everyone.body["total"], 2);
    let bobs_for_admin = api
        .call("GET", &format!("{path}&user=bob"), Some(&admin), None)
        .await;
    assert_eq!(bobs_for_admin.body["runs"][0]["run_id"], "run-b-bad");
    assert_eq!(bobs_for_admin.body["total"], 1);
    for bad in [
        "limit=201",
        "limit=0",
        "offset=-1",
        "status=exploded",
        "since=soon",
    ] {
        let refused = api
            .call("GET", &format!("/v1/runs?{bad}"), Some(&alice), None)
            .await;
        assert_eq!(refused.status, 400, "{bad}: {}", refused.body);
    }
}

#[tokio::test]
async fn the_overview_shows_each_schedules_last_run_its_week_and_times_relative_to_now() {
    const DAY: i64 = 86_400_000;
    let now = 1_800_000_000_000; // 2027-01-15T08:00:00Z
    let clock = ManualClock::starting_at(now);
    let api = api_on(clock.clone()).await;
    let id = a_schedule_triggered(&api).await;
    let quiet = api
        .app
        .add_schedule(
            &Actor::Operator,
            "alice",
            &ScheduleSpec {
                goal: "never ran".into(),
                triggered: true,
                ..Default::default()
            },
        )
        .await
        .unwrap()
        .schedule_id;
    a_run(&api, &id, "run-1", now - 3 * DAY, "succeeded").await;
    a_run(&api, &id, "run-2", now - 2 * DAY, "failed").await;
    a_run(&api, &id, "run-3", now - 3 * 3_600_000, "succeeded").await;
    // Older than a week: not counted.
    a_run(&api, &id, "run-0", now - 9 * DAY, "failed").await;
    let conn = api.app.db().conn().await.unwrap();
    conn.execute(
        "UPDATE schedules SET last_run_status = 'succeeded', last_run_at = ?2
         WHERE schedule_id = ?1",
        libsql::params![id.as_str(), now - 3 * 3_600_000],
    )
    .await
    .unwrap();
    let browser = Browser::logged_in(&api).await;
    let (_, page) = browser.get("/ui").await;
    let row = |schedule: &str| {
        let at = page
            .find(&format!("data-schedule=\"{schedule}\""))
            .expect("the schedule's row");
        page[at..at + page[at..].find("</tr>").unwrap()].to_string()
    };
    let ran = row(&id);
    assert!(ran.contains("2 of 3 ok (66 %)"), "{ran}");
    assert!(ran.contains("class=\"badge s-succeeded\""), "{ran}");
    assert!(
        ran.contains(
            "datetime=\"2027-01-15T05:00:00Z\" title=\"2027-01-15 05:00:00 UTC\">3 h ago</time>"
        ),
        "{ran}"
    );
    assert!(ran.contains("took 1 s"), "{ran}");
    let never = row(&quiet);
    assert!(
        never.contains("not yet") && never.contains("no runs"),
        "{never}"
    );
}

/// The overview's chart of runs per hour by status: drawn as SVG with its figures in
/// words, the same figures as a table, a week on asking, and a span it does not know
/// refused.
#[tokio::test]
async fn the_overview_charts_the_runs_of_each_hour_by_status() {
    use nightshift::schedule::types::RunStatus;
    let api = TestApi::start(|_| {}).await;
    let schedule_id = a_schedule_triggered(&api).await;
    for status in [
        RunStatus::Succeeded,
        RunStatus::Failed,
        RunStatus::Succeeded,
    ] {
        api.app
            .schedules()
            .trigger(&Actor::Operator, &schedule_id, None, None)
            .await
            .unwrap();
        let claims = common::runs::claim_events(&api.app, "w").await;
        common::runs::finish(&api.app, &claims[0], status, "").await;
    }
    let browser = Browser::logged_in(&api).await;

    let (status, page) = browser.get("/ui").await;
    assert_eq!(status, 200);
    assert!(page.contains(r#"<svg class="chart""#), "{page}");
    assert!(page.contains(r#"role="img""#), "{page}");
    assert!(
        page.contains("over the last 24 hours: 3 runs, 1 failed"),
        "{page}"
    );
    assert!(page.contains("2 succeeded, 1 failed"), "{page}");
    let table = &page[page.find(r#"id="runs-per-hour""#).unwrap()..];
    assert!(
        table.contains("<td>2</td><td>1</td><td>0</td><td>0</td><td>0</td>"),
        "{table}"
    );

    let (status, week) = browser.get("/ui?range=7d").await;
    assert_eq!(status, 200);
    assert!(
        week.contains("over the last 7 days: 3 runs, 1 failed"),
        "{week}"
    );
    let (status, _) = browser.get("/ui?range=1y").await;
    assert_eq!(status, 400);
}

/// The overview's lateness chart: each hour's p50 and p99 of how late its runs started,
/// read to the step of the scale that holds them, in the table as in the drawing.
#[tokio::test]
async fn the_overview_charts_how_late_runs_started() {
    use nightshift::schedule::types::RunStatus;
    let clock = ManualClock::starting_at(1_800_000_000_000);
    let api = TestApi::start_on(clock.clone(), |_| {}).await;
    let schedule_id = a_schedule_triggered(&api).await;
    // Started 2 s and then 40 s after they were due.
    for late_ms in [2_000, 40_000] {
        api.app
            .schedules()
            .trigger(&Actor::Operator, &schedule_id, None, None)
            .await
            .unwrap();
        clock.advance_ms(late_ms);
        let claims = common::runs::claim_events(&api.app, "w").await;
        common::runs::finish(&api.app, &claims[0], RunStatus::Succeeded, "").await;
    }
    let browser = Browser::logged_in(&api).await;
    let (status, page) = browser.get("/ui").await;
    assert_eq!(status, 200);
    assert!(page.contains("2 runs, p50 ≤ 2.5 s, p99 ≤ 1 min"), "{page}");
    let table = &page[page.find(r#"id="lateness""#).unwrap()..];
    assert!(
        table.contains("<td>2</td><td>≤ 2.5 s</td><td>≤ 1 min</td>"),
        "{table}"
    );
}
