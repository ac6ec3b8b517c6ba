//! The dashboard's memory browser, as an operator uses it and as a hostile one would try:
//! one user's notes, sessions, state and artifacts and nobody else's, a note's versions
//! compared and restored (the restore recorded as the dashboard's), and bad ids answered
//! with a message that changes nothing.

mod common;

use common::api::TestApi;
use common::browser::Browser;
use nightshift::artifact::NewArtifact;
use nightshift::memory::{NewEvent, NewNote, Role};
use nightshift::state::StateAccess;
use serde_json::json;

/// Alice's memory (a shared note, a planner's note, a conversation with state, an
/// artifact) and bob's (a note, a session, an artifact): the ids of bob's session and
/// artifact, and alice's artifact's.
async fn two_users(api: &TestApi) -> (String, String) {
    let app = &api.app;
    let memory = app.memory();
    memory
        .save_note("alice", &NewNote::new("Alice drinks jasmine tea"))
        .await
        .unwrap();
    memory
        .as_agent(Some("planner"))
        .unwrap()
        .save_note("alice", &NewNote::new("Planner books the tea room at noon"))
        .await
        .unwrap();
    memory
        .save_note("bob", &NewNote::new("Bob's bank pin is 4321"))
        .await
        .unwrap();
    memory
        .append(
            "alice",
            "chat-1",
            &[
                NewEvent::new(Role::User, "Remind me about the <b>dentist</b>"),
                NewEvent::new(Role::Assistant, "long answer ".repeat(100)),
            ],
        )
        .await
        .unwrap();
    memory
        .append(
            "bob",
            "bob-chat",
            &[NewEvent::new(Role::User, "Bob's secret plan")],
        )
        .await
        .unwrap();
    app.state()
        .set(
            &StateAccess::user("alice", Some("chat-1".into())),
            "step",
            &json!("asked about the dentist"),
            None,
        )
        .await
        .unwrap();
    app.state()
        .set(
            &StateAccess::user("alice", None),
            "user:theme",
            &json!({"mode": "dark"}),
            None,
        )
        .await
        .unwrap();
    let artifact = |name: &str, content: &str| NewArtifact {
        name: name.into(),
        mime_type: "text/html".into(),
        content: content.as_bytes().to_vec(),
    };
    let alice = app
        .artifacts()
        .put(
            "alice",
            "chat-1",
            None,
            &artifact("report.html", "<script>alert(1)</script>"),
        )
        .await
        .unwrap();
    let bob = app
        .artifacts()
        .put("bob", "bob-chat", None, &artifact("bob.txt", "bob only"))
        .await
        .unwrap();
    (alice.artifact_id, bob.artifact_id)
}

#[tokio::test]
async fn the_memory_browser_shows_one_users_memory_and_nobody_elses() {
    let api = TestApi::start(|_| {}).await;
    let (alice_artifact, bob_artifact) = two_users(&api).await;
    let browser = Browser::logged_in(&api).await;

    let (status, page) = browser.get("/ui/memory").await;
    assert_eq!(status, 200);
    assert!(page.contains("href=\"/ui/memory/alice\""), "{page}");
    assert!(page.contains("href=\"/ui/memory/bob\""), "{page}");
    assert!(page.contains("2 user(s) with memory"), "{page}");
    // Alice: two notes (hers and her planner's) and one session.
    let row = page.split("/ui/memory/alice").nth(1).unwrap();
    let cells: Vec<&str> = row.split("<td>").skip(1).take(2).collect();
    assert!(
        cells[0].starts_with("2<") && cells[1].starts_with("1<"),
        "{row}"
    );
    let (status, to, _) = browser.redirected("/ui/memory?user=alice").await;
    assert_eq!(
        (status, to.as_str()),
        (303, "/ui/memory/alice"),
        "the form opens the page"
    );

    let (status, page) = browser.get("/ui/memory/alice").await;
    assert_eq!(status, 200);
    assert!(page.contains("Alice drinks jasmine tea"));
    assert!(
        !page.contains("Planner books"),
        "the shared notes only, unless asked"
    );
    assert!(page.contains("/ui/memory/alice/sessions/chat-1"));
    assert!(page.contains("user:theme") && page.contains("dark"));
    assert!(
        !page.contains("asked about the dentist"),
        "a session's state is on its page"
    );
    assert!(page.contains("report.html"));
    for bobs in ["Bob", "bob-chat", "bob.txt", bob_artifact.as_str()] {
        assert!(!page.contains(bobs), "{bobs} on alice's page");
    }
    let (_, page) = browser.get("/ui/memory/alice?agent=planner").await;
    assert!(page.contains("Planner books") && page.contains("Alice drinks"));

    // A search hit names each leg's score and opens its note or its session.
    for text in ["Alice grows green tea", "Alice sold her coffee grinder"] {
        api.app
            .memory()
            .save_note("alice", &NewNote::new(text))
            .await
            .unwrap();
    }
    let (_, page) = browser.get("/ui/search?user=alice&q=jasmine+tea").await;
    let hits: Vec<&str> = page.split("<li>").skip(1).collect();
    assert!(hits[0].contains("Alice drinks jasmine tea"), "{page}");
    assert!(hits[0].contains("(keywords 1.00, vectors "), "{page}");
    assert!(hits[0].contains("href=\"/ui/memory/alice/notes/"), "{page}");
    let green = hits
        .iter()
        .find(|h| h.contains("green tea"))
        .expect("{page}");
    assert!(green.contains("(keywords 0."), "one word of two: {green}");
    if let Some(coffee) = hits.iter().find(|h| h.contains("coffee")) {
        assert!(
            coffee.contains("(keywords —, "),
            "no word in common: {coffee}"
        );
    }
    let (_, page) = browser
        .get("/ui/search?user=alice&session=chat-1&q=dentist")
        .await;
    assert!(
        page.contains("href=\"/ui/memory/alice/sessions/chat-1\""),
        "{page}"
    );

    let (status, page) = browser.get("/ui/memory/alice/sessions/chat-1").await;
    assert_eq!(status, 200);
    assert!(
        page.contains("Remind me about the &lt;b&gt;dentist&lt;/b&gt;"),
        "{page}"
    );
    assert!(page.contains("asked about the dentist"));
    assert!(
        page.contains("<details>"),
        "a long event is cut, the whole a click away"
    );
    // Its first 300 characters, and on opening the other 900 (nothing shown twice).
    let head = format!("<span class=\"text\">{}</span>", "long answer ".repeat(25));
    let rest = format!("<div class=\"text\">{}</div>", "long answer ".repeat(75));
    assert!(page.contains(&head) && page.contains(&rest), "{page}");
    assert_eq!(page.matches("long answer").count(), 100, "{page}");

    let response = browser
        .client
        .get(format!(
            "{}/ui/memory/alice/artifacts/{alice_artifact}",
            api.base
        ))
        .header(reqwest::header::COOKIE, &browser.cookie)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let disposition = response.headers()["content-disposition"].to_str().unwrap();
    assert!(disposition.starts_with("attachment"), "{disposition}");
    let policy = response.headers()["content-security-policy"]
        .to_str()
        .unwrap();
    assert!(
        policy.starts_with("default-src 'none'") && policy.ends_with("; sandbox"),
        "{policy}"
    );
    assert_eq!(response.text().await.unwrap(), "<script>alert(1)</script>");

    // Bob's records under alice's name are not found, the same as records that do not
    // exist; nothing of them is shown.
    let bob_note = api.app.memory().notes("bob").await.unwrap()[0]
        .note_id
        .clone();
    for (bobs, missing, id) in [
        ("artifacts", bob_artifact.as_str(), "nope-artifact"),
        ("sessions", "bob-chat", "no-such-chat"),
        ("notes", bob_note.as_str(), "no-such-note"),
    ] {
        let (status, page) = browser
            .get(&format!("/ui/memory/alice/{bobs}/{missing}"))
            .await;
        assert_eq!(status, 404, "{bobs}");
        assert!(!page.contains("bob only") && !page.contains("secret plan"));
        assert!(!page.contains("bank pin"));
        let (status, nothing) = browser.get(&format!("/ui/memory/alice/{bobs}/{id}")).await;
        assert_eq!(status, 404, "{bobs}");
        assert_eq!(
            page.replace(missing, "ID"),
            nothing.replace(id, "ID"),
            "{bobs}"
        );
    }
    // Bad ids are named in the answer.
    for (path, status, named) in [
        ("/ui/memory/%0Aalice", 400, "user id"),
        ("/ui/memory?user=%20", 200, "2 user(s) with memory"),
        ("/ui/memory?user=a%00b", 400, "user id"),
        ("/ui/memory/alice/sessions/a%0Ab", 400, "session id"),
        ("/ui/memory/alice/notes/x%7F", 400, "note id"),
        (
            "/ui/memory/alice/sessions/memory:alice",
            400,
            "memory:alice",
        ),
    ] {
        let (got, page) = browser.get(path).await;
        assert_eq!(got, status, "{path}: {page}");
        assert!(page.contains(named), "{path}: {page}");
    }
    // Without a session, every page sends the browser to log in.
    let stranger = common::browser::no_redirects();
    for path in [
        "/ui/memory",
        "/ui/memory/alice",
        "/ui/memory/alice/sessions/chat-1",
        &format!("/ui/memory/alice/artifacts/{alice_artifact}"),
    ] {
        let response = stranger
            .get(format!("{}{path}", api.base))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 303, "{path}");
        assert_eq!(response.headers()["location"], "/ui/login", "{path}");
    }
}

#[tokio::test]
async fn a_notes_versions_are_compared_and_any_one_restored_from_the_dashboard() {
    let api = TestApi::start(|_| {}).await;
    let memory = api.app.memory();
    let saved = memory
        .save_note(
            "alice",
            &NewNote::new("Alice drinks jasmine tea every morning"),
        )
        .await
        .unwrap();
    let note = saved.note_id;
    memory
        .update_note("alice", &note, "Alice drinks green tea every evening", None)
        .await
        .unwrap();
    memory.delete_note("alice", &note).await.unwrap();
    let browser = Browser::logged_in(&api).await;
    let page_of = format!("/ui/memory/alice/notes/{note}");

    let (status, page) = browser.get(&page_of).await;
    assert_eq!(status, 200);
    assert!(page.contains("The note is deleted"), "{page}");
    let (status, page) = browser.get(&format!("{page_of}?from=1&to=2")).await;
    assert_eq!(status, 200);
    assert!(
        page.contains("Version 1 → 2: 2 word(s) taken out, 2 put in"),
        "{page}"
    );
    assert!(
        page.contains("<del title=\"taken out\">jasmine</del>"),
        "{page}"
    );
    assert!(page.contains("<ins title=\"put in\">green</ins>"), "{page}");
    assert!(
        page.contains("<ins title=\"put in\">evening</ins>"),
        "{page}"
    );
    let (_, page) = browser.get(&format!("{page_of}?to=1")).await;
    assert!(page.contains("is the first"), "{page}");
    for (query, named) in [
        ("from=abc", "from"),
        ("to=0", "to"),
        ("from=9", "no version 9"),
    ] {
        let (status, page) = browser.get(&format!("{page_of}?{query}")).await;
        assert_eq!(status, 400, "{query}");
        assert!(page.contains(named), "{query}: {page}");
    }
    // Another user's note is not found under alice, nor alice's under bob.
    let (status, _) = browser.get(&format!("/ui/memory/bob/notes/{note}")).await;
    assert_eq!(status, 404);
    let bobs = memory
        .save_note("bob", &NewNote::new("Bob's note"))
        .await
        .unwrap()
        .note_id;

    let restore = format!("{page_of}/restore");
    let csrf = browser.csrf().await;
    let versions = || async { memory.note_history("alice", &note).await.unwrap().len() };
    // Without the form token, from another site, or of a version that is not there:
    // refused, and nothing changes.
    for (form, origin, status) in [
        (vec![("version", "1")], None, 403),
        (
            vec![("version", "1"), ("csrf", csrf.as_str())],
            Some("https://evil.example"),
            403,
        ),
        (vec![("version", "7"), ("csrf", csrf.as_str())], None, 404),
        (vec![("version", "-1"), ("csrf", csrf.as_str())], None, 400),
        (vec![("csrf", csrf.as_str())], None, 400),
    ] {
        let response = browser.post(&restore, &form, origin).await;
        assert_eq!(response.status(), status, "{form:?}");
        assert_eq!(versions().await, 3, "{form:?} changed nothing");
    }
    let response = browser
        .post(&restore, &[("csrf", &csrf), ("version", " ")], None)
        .await;
    assert!(response
        .text()
        .await
        .unwrap()
        .contains("version: is missing"));
    // Alice's note restored under bob's address, or bob's under alice's: not found.
    for path in [
        format!("/ui/memory/bob/notes/{note}/restore"),
        format!("/ui/memory/alice/notes/{bobs}/restore"),
    ] {
        let response = browser
            .post(&path, &[("version", "1"), ("csrf", &csrf)], None)
            .await;
        assert_eq!(response.status(), 404, "{path}");
    }
    assert_eq!(versions().await, 3);
    let bob_versions = memory.note_history("bob", &bobs).await.unwrap();
    assert_eq!(bob_versions.len(), 1);
    let response = browser
        .post(&restore, &[("version", "1"), ("csrf", &csrf)], None)
        .await;
    assert_eq!(response.status(), 303);
    assert_eq!(response.headers()["location"].to_str().unwrap(), page_of);
    let restored = memory.note("alice", &note).await.unwrap();
    assert_eq!(restored.content, "Alice drinks jasmine tea every morning");
    let history = memory.note_history("alice", &note).await.unwrap();
    let newest = history.last().unwrap();
    assert_eq!(
        (
            newest.version,
            newest.change.as_str(),
            newest.changed_by.as_str()
        ),
        (4, "restored", "dashboard")
    );
    let (_, page) = browser.get(&page_of).await;
    assert!(page.contains("version 4 is the note now"), "{page}");
}
