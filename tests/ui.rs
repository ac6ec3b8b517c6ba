//! The dashboard over HTTP, as a browser would use it and as a hostile page would try:
//! admin tokens only, the cookie's flags, forms that need their token and this site,
//! stored text shown as text, and each action changing what the database holds.

mod common;

use common::api::TestApi;
use nightshift::access::Actor;
use nightshift::memory::NewNote;
use nightshift::spec::ScheduleSpec;
use reqwest::header::{COOKIE, LOCATION, ORIGIN, SET_COOKIE};
use reqwest::redirect::Policy;

struct Browser {
    client: reqwest::Client,
    base: String,
    cookie: String,
}

impl Browser {
    async fn login(api: &TestApi, token: &str) -> reqwest::Response {
        no_redirects()
            .post(format!("{}/ui/login", api.base))
            .form(&[("token", token)])
            .send()
            .await
            .unwrap()
    }

    async fn logged_in(api: &TestApi) -> Self {
        let admin = api.token(None).await;
        let response = Self::login(api, &admin).await;
        assert_eq!(response.status(), 303);
        Self {
            client: no_redirects(),
            base: api.base.clone(),
            cookie: format!("nightshift_ui={admin}"),
        }
    }

    async fn get(&self, path: &str) -> (u16, String) {
        let r = self
            .client
            .get(format!("{}{path}", self.base))
            .header(COOKIE, &self.cookie)
            .send()
            .await
            .unwrap();
        (r.status().as_u16(), r.text().await.unwrap())
    }

    async fn post(
        &self,
        path: &str,
        form: &[(&str, &str)],
        origin: Option<&str>,
    ) -> reqwest::Response {
        let mut request = self
            .client
            .post(format!("{}{path}", self.base))
            .header(COOKIE, &self.cookie)
            .form(form);
        if let Some(origin) = origin {
            request = request.header(ORIGIN, origin);
        }
        request.send().await.unwrap()
    }

    async fn csrf(&self) -> String {
        let (_, page) = self.get("/ui").await;
        let at = page.find("name=\"csrf\" value=\"").expect("a form token") + 19;
        page[at..at + 32].to_string()
    }
}

fn no_redirects() -> reqwest::Client {
    reqwest::Client::builder()
        .redirect(Policy::none())
        .build()
        .unwrap()
}

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
