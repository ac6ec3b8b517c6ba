//! The overview's schedules as an operator narrows them: by status, by user, to those
//! agents made, the filters kept from page to page; the schedules agents made that wait
//! for their users to confirm them counted and a click away, and confirmed from there. A
//! bad filter is refused with a message naming it.

mod common;

use common::api::TestApi;
use common::browser::Browser;
use nightshift::access::Actor;
use nightshift::schedule::agent_policy::AgentSchedules;
use nightshift::schedule::store::{FollowUp, FollowUpOrigin, ScheduleFilter};
use nightshift::spec::ScheduleSpec;

async fn add(api: &TestApi, user: &str, name: &str) -> String {
    let spec = ScheduleSpec {
        name: Some(name.into()),
        goal: format!("do {name}"),
        every: Some("1h".into()),
        ..Default::default()
    };
    api.app
        .add_schedule(&Actor::Operator, user, &spec)
        .await
        .unwrap()
        .schedule_id
}

/// The names in the overview's schedules table, in order.
fn listed(page: &str) -> Vec<String> {
    let Some(table) = page.split("<table id=\"schedules\"").nth(1) else {
        return Vec::new();
    };
    let table = &table[..table.find("</table>").unwrap()];
    table
        .split("data-schedule=")
        .skip(1)
        .map(|row| {
            let name = row.split("\">").nth(2).unwrap();
            name[..name.find('<').unwrap()].to_string()
        })
        .collect()
}

#[tokio::test]
async fn the_overview_narrows_its_schedules_and_shows_what_agents_made_to_confirm() {
    let api = TestApi::start(|_| {}).await;
    let store = api.app.schedules();
    let parent = add(&api, "alice", "digest").await;
    add(&api, "bob", "bobs-report").await;
    let paused = add(&api, "alice", "old-cleanup").await;
    store
        .pause(&Actor::Operator, &paused, Some("holiday"))
        .await
        .unwrap();
    let now = api.app.clock().now_ms();
    let origin = |policy| FollowUpOrigin {
        user_id: "alice",
        schedule_id: &parent,
        run_id: "run-0123",
        policy,
        max_per_user: 10,
    };
    let follow_up = |name: &str| FollowUp {
        goal: format!("check {name}"),
        at: now + 86_400_000,
        name: Some(name.into()),
    };
    let waiting = store
        .create_follow_up(&origin(AgentSchedules::Confirm), &follow_up("to-confirm"))
        .await
        .unwrap();
    store
        .create_follow_up(&origin(AgentSchedules::Active), &follow_up("agent-active"))
        .await
        .unwrap();

    // The API's list, as an admin and as the user (whose own only).
    let admin = api.token(None).await;
    let reply = api
        .call(
            "GET",
            "/v1/schedules?status=paused&made_by_agent=true",
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(reply.status, 200);
    assert_eq!(reply.body["total"], 1);
    assert_eq!(reply.body["schedules"][0]["name"], "to-confirm");
    let bob = api.token(Some("bob")).await;
    let reply = api
        .call("GET", "/v1/schedules?made_by_agent=true", Some(&bob), None)
        .await;
    assert_eq!((reply.status, &reply.body["total"]), (200, &0.into()));
    let reply = api
        .call(
            "GET",
            "/v1/schedules?made_by_agent=maybe",
            Some(&admin),
            None,
        )
        .await;
    assert_eq!(reply.status, 400, "{}", reply.body);

    let browser = Browser::logged_in(&api).await;
    let (status, page) = browser.get("/ui").await;
    assert_eq!(status, 200);
    assert_eq!(listed(&page).len(), 5, "{page}");
    assert!(
        page.contains("<a href=\"/ui?status=paused&amp;made_by_agent=on\">1 schedule(s)</a>"),
        "{page}"
    );
    assert!(page.contains("made by an agent in <a href=\"/ui/runs/run-0123\">"));

    let (_, page) = browser.get("/ui?status=paused&made_by_agent=on").await;
    assert_eq!(listed(&page), ["to-confirm"]);
    assert!(
        page.contains("<option value=\"paused\" selected>"),
        "{page}"
    );
    assert!(page.contains("name=\"made_by_agent\" checked"), "{page}");
    let (_, page) = browser.get("/ui?made_by_agent=on&status=").await;
    let mut made = listed(&page);
    made.sort();
    assert_eq!(made, ["agent-active", "to-confirm"]);
    let (_, page) = browser.get("/ui?status=paused&user=alice").await;
    let mut paused_list = listed(&page);
    paused_list.sort();
    assert_eq!(paused_list, ["old-cleanup", "to-confirm"]);
    let (_, page) = browser.get("/ui?user=bob&status=&made_by_agent=").await;
    assert_eq!(listed(&page), ["bobs-report"]);
    let (_, page) = browser.get("/ui?made_by_agent=false").await;
    assert_eq!(listed(&page).len(), 5, "off is off");
    let (status, page) = browser.get("/ui?made_by_agent=maybe").await;
    assert_eq!(status, 400);
    assert!(page.contains("made_by_agent"), "{page}");
    let (_, page) = browser.get("/ui?user=carol").await;
    assert!(page.contains("No schedules match these filters."), "{page}");

    // Confirming (resuming) it from the dashboard leaves nothing to confirm.
    let csrf = browser.csrf().await;
    let resumed = browser
        .post(
            &format!("/ui/schedules/{}/resume", waiting.schedule_id),
            &[("csrf", &csrf)],
            None,
        )
        .await;
    assert_eq!(resumed.status(), 303);
    let (_, page) = browser.get("/ui").await;
    assert!(!page.contains("Made by agents, paused"), "{page}");
    let (_, page) = browser.get("/ui?status=paused&made_by_agent=on").await;
    assert!(listed(&page).is_empty());

    // Bad filters: refused, naming what was wrong.
    let (status, page) = browser.get("/ui?status=sleeping").await;
    assert_eq!(status, 400);
    assert!(page.contains("status"), "{page}");
    let (status, page) = browser.get("/ui?user=%1B%5B31m").await;
    assert_eq!(status, 400);
    assert!(!page.contains('\u{1b}'), "{page}");
}

#[tokio::test]
async fn filters_stay_with_the_pages() {
    let api = TestApi::start(|config| config.scheduler.max_per_user = 100).await;
    for i in 0..55 {
        add(&api, "alice", &format!("a-{i:02}")).await;
    }
    add(&api, "bob", "b-only").await;
    let browser = Browser::logged_in(&api).await;
    let (_, page) = browser.get("/ui?user=alice").await;
    assert_eq!(listed(&page).len(), 25);
    assert!(page.contains("page 1 of 3 (55 schedules)"), "{page}");
    assert!(
        page.contains("href=\"/ui?user=alice&amp;page=2\""),
        "{page}"
    );
    let (_, page) = browser.get("/ui?user=alice&page=3").await;
    assert_eq!(listed(&page).len(), 5);
    assert!(!page.contains("b-only"));
    // The library's filter, as the API's and the CLI's lists use it.
    let (found, total) = api
        .app
        .schedules()
        .list(
            &Actor::Operator,
            &ScheduleFilter {
                made_by_agent: true,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((found.len(), total), (0, 0));
}
