//! Hybrid search: hostile query text, both legs, freshness of the in-memory vectors, and
//! an index rebuild that changes nothing a user can see.

mod common;

use common::{config_in, count, fresh, keyword_integrity, memory_with, search_request as request};
use nightshift::app::open_memory;
use nightshift::memory::{HitSource, NewEvent, NewNote, Role, SearchRequest};

#[tokio::test]
async fn any_text_a_user_types_is_a_safe_query() {
    let (_dir, memory) = fresh().await;
    memory
        .save_note(
            "u",
            &NewNote::new("Deploy \"prod\" at 5pm (not staging) - NEAR the end"),
        )
        .await
        .unwrap();
    let hostile = [
        "\"",
        "\"\"",
        "prod\"",
        "*",
        "deploy*",
        "-staging",
        "NEAR(deploy prod)",
        "deploy AND",
        "OR",
        "NOT prod",
        "(",
        ")",
        "{text}: deploy",
        "text:deploy",
        "scope:x",
        "^deploy",
        "deploy + prod",
        "'; DROP TABLE notes; --",
        "💥 deploy",
        "rank:1",
        "a:b:c",
    ];
    for query in hostile {
        let result = memory.search(&request("u", query, None)).await;
        assert!(result.is_ok(), "{query:?}: {result:?}");
    }
    // A NUL is not text a query may hold: bad input, named, not a database error.
    assert!(matches!(
        memory.search(&request("u", "\u{0}", None)).await,
        Err(nightshift::memory::MemoryError::Input(_))
    ));
    let hits = memory
        .search(&request("u", "NEAR(deploy \"prod\")", None))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(count(&memory, "SELECT count(*) FROM notes").await, 1);
}

#[tokio::test]
async fn keyword_and_vector_legs_both_find_and_rank() {
    let (_dir, memory) = fresh().await;
    memory
        .save_note(
            "u",
            &NewNote::new("The staging database password rotates monthly"),
        )
        .await
        .unwrap();
    memory
        .save_note("u", &NewNote::new("Lunch with Priya on Thursdays"))
        .await
        .unwrap();
    memory
        .append(
            "u",
            "chat",
            &[NewEvent::new(
                Role::User,
                "we deployed the payments service today",
            )],
        )
        .await
        .unwrap();
    // A shared word piece: "deployment" ~ "deployed" through stems and trigrams.
    let hits = memory
        .search(&request("u", "payments deployment", Some("chat")))
        .await
        .unwrap();
    assert_eq!(hits[0].source, HitSource::Conversation);
    assert_eq!(hits[0].session_id.as_deref(), Some("chat"));
    assert_eq!(hits[0].sequence, Some(1));
    assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    // Without the session only notes are searched.
    let hits = memory
        .search(&request("u", "payments deployment", None))
        .await
        .unwrap();
    assert!(hits.iter().all(|h| h.source == HitSource::Note));
}

#[tokio::test]
async fn vector_leg_never_returns_another_users_rows() {
    let (_dir, memory) = fresh().await;
    for i in 0..50 {
        memory
            .save_note(
                "crowd",
                &NewNote::new(format!("espresso machine maintenance log {i}")),
            )
            .await
            .unwrap();
    }
    memory
        .save_note("me", &NewNote::new("my espresso grinder setting is 12"))
        .await
        .unwrap();
    let hits = memory
        .search(&request("me", "espresso machine maintenance", None))
        .await
        .unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].text, "my espresso grinder setting is 12");
}

/// A user whose sessions hold nearly every chunk, and another user whose few chunks match
/// the query better than any of theirs: `filler` events, then `zebras` (the first user's
/// matches, each saying "zebra" twice), then the other user's `strong` ("zebra" three
/// times). Keyword weight only, so a hit scores above 0 only through the keyword leg.
async fn zebra_crowd(
    dir: &tempfile::TempDir,
    filler: usize,
    zebras: &[&str],
    strong: usize,
) -> nightshift::memory::Memory {
    let mut config = config_in(dir);
    config.search.max_top_k = 5;
    config.search.candidates = 5;
    config.search.vector_weight = 0.0;
    config.search.keyword_weight = 1.0;
    config.search.neighbor_weight = 0.0;
    let memory = open_memory(&config).await.unwrap();
    let mut mine: Vec<NewEvent> = (0..filler)
        .map(|i| NewEvent::new(Role::User, format!("ordinary day number {i} at the office")))
        .collect();
    mine.extend(zebras.iter().map(|t| NewEvent::new(Role::User, *t)));
    memory.append("me", "me-chat", &mine).await.unwrap();
    let theirs: Vec<NewEvent> = (0..strong)
        .map(|i| NewEvent::new(Role::User, format!("zebra zebra zebra {i}")))
        .collect();
    memory.append("them", "them-chat", &theirs).await.unwrap();
    memory.embed_pending(&|_, _| {}).await.unwrap();
    memory
}

fn zebra_request(top_k: usize) -> SearchRequest {
    SearchRequest {
        top_k: Some(top_k),
        ..request("me", "zebra", Some("me-chat"))
    }
}

#[tokio::test]
async fn a_user_holding_nearly_every_chunk_gets_their_best_keyword_matches_only() {
    let dir = tempfile::TempDir::new().unwrap();
    // Seven matches in all: fewer than the 10 best asked for, so every one is seen.
    let zebras = [
        "a zebra zebra at the zoo",
        "zebra zebra crossing",
        "one zebra in a much longer sentence about the zoo and the city",
    ];
    let memory = zebra_crowd(&dir, 300, &zebras, 4).await;
    let hits = memory.search(&zebra_request(2)).await.unwrap();
    let mut texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    texts.sort();
    assert_eq!(texts, ["a zebra zebra at the zoo", "zebra zebra crossing"]);
    assert!(hits.iter().all(|h| h.score > 0.0), "{hits:?}");
    assert!(hits
        .iter()
        .all(|h| h.session_id.as_deref() == Some("me-chat")));
}

#[tokio::test]
async fn another_users_better_matches_do_not_crowd_out_a_dominant_users_own() {
    // The other user's 20 chunks fill the 10 best matches overall, so the user's own must
    // be looked for within their sessions.
    let dir = tempfile::TempDir::new().unwrap();
    let zebras = [
        "zebra zebra one",
        "zebra zebra two",
        "zebra zebra three",
        "a single zebra among many other words in a long sentence here",
    ];
    let memory = zebra_crowd(&dir, 400, &zebras, 20).await;
    let hits = memory.search(&zebra_request(3)).await.unwrap();
    let mut texts: Vec<&str> = hits.iter().map(|h| h.text.as_str()).collect();
    texts.sort();
    assert_eq!(
        texts,
        ["zebra zebra one", "zebra zebra three", "zebra zebra two"]
    );
    assert!(hits.iter().all(|h| h.score > 0.0), "{hits:?}");
}

#[tokio::test]
async fn search_sees_writes_and_deletes_made_after_it_cached_vectors() {
    let (_dir, memory) = fresh().await;
    let first = memory
        .save_note("u", &NewNote::new("ferry timetable to the island"))
        .await
        .unwrap();
    assert_eq!(
        memory
            .search(&request("u", "ferry", None))
            .await
            .unwrap()
            .len(),
        1
    );
    let second = memory
        .save_note("u", &NewNote::new("ferry tickets are in the drawer"))
        .await
        .unwrap();
    let hits = memory.search(&request("u", "ferry", None)).await.unwrap();
    assert_eq!(hits.len(), 2);
    memory.delete_note("u", &first.note_id).await.unwrap();
    let hits = memory.search(&request("u", "ferry", None)).await.unwrap();
    assert_eq!(hits.len(), 1);
    assert_eq!(hits[0].note_id.as_deref(), Some(second.note_id.as_str()));
    // A second process (another handle on the same file) sees the same.
    let other = common::memory_in(&_dir).await;
    assert_eq!(
        other
            .search(&request("u", "ferry", None))
            .await
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test]
async fn expired_notes_are_not_returned() {
    let (_dir, memory) = fresh().await;
    let note = memory
        .save_note("u", &NewNote::new("temporary gate code 9911"))
        .await
        .unwrap();
    let conn = memory.db().conn().await.unwrap();
    conn.execute(
        "UPDATE notes SET expires_at = 1 WHERE note_id = ?1",
        [note.note_id.as_str()],
    )
    .await
    .unwrap();
    assert!(memory
        .search(&request("u", "gate code", None))
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn rebuild_gives_the_same_results_and_search_never_goes_empty() {
    let (_dir, memory) = fresh().await;
    for i in 0..20 {
        memory
            .save_note(
                "u",
                &NewNote::new(format!(
                    "note {i} about the orchard and apple trees row {}",
                    i % 4
                )),
            )
            .await
            .unwrap();
        memory
            .append(
                "u",
                "chat",
                &[NewEvent::new(
                    Role::User,
                    format!("message {i}: pruning apple trees in row {}", i % 3),
                )],
            )
            .await
            .unwrap();
    }
    // Compare like with like: both legs before, as after the rebuild.
    memory.embed_pending(&|_, _| {}).await.unwrap();
    let queries = ["apple trees", "orchard row 2", "pruning", "message 7"];
    let mut before = Vec::new();
    for q in queries {
        before.push(memory.search(&request("u", q, Some("chat"))).await.unwrap());
    }
    let chunks_before = count(&memory, "SELECT count(*) FROM chunks").await;

    // Search keeps answering while the rebuild runs.
    let searcher = {
        let memory = memory.clone();
        tokio::spawn(async move {
            let mut min_hits = usize::MAX;
            for _ in 0..30 {
                let hits = memory
                    .search(&request("u", "apple trees", Some("chat")))
                    .await
                    .unwrap();
                min_hits = min_hits.min(hits.len());
                tokio::task::yield_now().await;
            }
            min_hits
        })
    };
    let seen = std::sync::Mutex::new(Vec::new());
    let report = memory
        .rebuild_index(&|done, total| seen.lock().unwrap().push((done, total)))
        .await
        .unwrap();
    assert!(
        searcher.await.unwrap() > 0,
        "search went empty during the rebuild"
    );
    assert_eq!(report.events, 20);
    assert_eq!(report.notes, 20);
    assert_eq!(report.sessions, 2);
    assert_eq!(seen.lock().unwrap().last(), Some(&(2, 2)));
    assert_eq!(
        count(&memory, "SELECT count(*) FROM chunks").await,
        chunks_before
    );
    keyword_integrity(&memory).await;

    for (q, expected) in queries.iter().zip(before) {
        let after = memory.search(&request("u", q, Some("chat"))).await.unwrap();
        let ids = |hits: &[nightshift::memory::SearchHit]| {
            hits.iter()
                .map(|h| {
                    (
                        h.note_id.clone(),
                        h.sequence,
                        (h.score * 1e6).round() as i64,
                    )
                })
                .collect::<Vec<_>>()
        };
        assert_eq!(ids(&after), ids(&expected), "{q}");
    }
}

/// With `search.candidates` at its largest, a search whose legs return more chunks than a
/// statement takes parameters (32,766) still answers, and with the best of them.
#[tokio::test]
async fn the_most_candidates_allowed_are_read_in_slices() {
    let dir = tempfile::TempDir::new().unwrap();
    let mut config = config_in(&dir);
    config.search.candidates = 100_000;
    let memory = open_memory(&config).await.unwrap();
    for batch in 0..35 {
        let events: Vec<NewEvent> = (0..1_000)
            .map(|i| NewEvent::new(Role::User, format!("tea note {batch} {i}")))
            .collect();
        memory.append("u", "chat", &events).await.unwrap();
    }
    memory
        .append(
            "u",
            "chat",
            &[NewEvent::new(Role::User, "tea tea tea oolong tea")],
        )
        .await
        .unwrap();
    let hits = memory
        .search(&request("u", "oolong tea", Some("chat")))
        .await
        .unwrap();
    assert_eq!(hits.len(), 10);
    assert_eq!(hits[0].text, "tea tea tea oolong tea");
}

/// `turns` three turns apart, so that none is another's context or neighbour.
fn apart(turns: &[&NewEvent]) -> Vec<NewEvent> {
    let mut out = Vec::new();
    for (i, turn) in turns.iter().enumerate() {
        let mut filler = NewEvent::new(Role::User, format!("Unrelated {i}: bread and tax"));
        filler.created_at = turn.created_at;
        out.extend([(*turn).clone(), filler.clone(), filler.clone(), filler]);
    }
    out
}

/// "What did I say about the dentist last week?", asked on Wednesday 2026-06-17: with
/// `time_weight` 0 the older turn that matches the words better comes first; with a
/// weight, the one said the week before. Nothing is filtered out.
#[tokio::test]
async fn time_words_in_a_query_prefer_what_was_said_then() {
    const DAY: i64 = 86_400_000;
    let asked_at = 1_781_708_400_000; // 2026-06-17T15:00:00Z
    let mut older = NewEvent::new(Role::User, "Called the dentist about the dentist bill");
    older.created_at = Some(asked_at - 30 * DAY);
    let mut last_week = NewEvent::new(Role::User, "Booked the dentist for a filling");
    last_week.created_at = Some(asked_at - 7 * DAY);
    // The weakest match, so that min-max normalisation does not zero the others.
    let mut oldest = NewEvent::new(
        Role::User,
        "A long month: meetings, errands, rain, a leaflet from a dentist, the car.",
    );
    oldest.created_at = Some(asked_at - 60 * DAY);
    let mut first = Vec::new();
    for weight in [0.0, 5.0] {
        let (_dir, memory) = memory_with(|c| c.search.time_weight = weight).await;
        let turns = apart(&[&oldest, &older, &last_week]);
        memory.append("u", "chat", &turns).await.unwrap();
        let mut asked = request(
            "u",
            "what did I say about the dentist last week?",
            Some("chat"),
        );
        asked.asked_at = Some(asked_at);
        let hits = memory.search(&asked).await.unwrap();
        assert_eq!(
            hits.iter().filter(|h| h.text.contains("dentist")).count(),
            3,
            "preferred, never filtered"
        );
        first.push(hits[0].at);
    }
    assert_eq!(first, [asked_at - 30 * DAY, asked_at - 7 * DAY]);
    // An instant outside 1970..=9999 is refused, naming it.
    let (_dir, memory) = memory_with(|_| {}).await;
    for bad in [-1, i64::MIN, i64::MAX, 253_402_300_800_000] {
        let mut asked = request("u", "what did I say last week", None);
        asked.asked_at = Some(bad);
        let err = memory.search(&asked).await.unwrap_err();
        assert!(err.to_string().contains("asked_at"), "{bad}: {err}");
    }
}

/// "What did I say about the garden last week?" when last week's turn names the garden
/// once in passing and eight older turns are all about it: with as few candidates as
/// hits, a leg's best over the whole conversation are all older, and only asking the
/// turns said last week alone finds it (`time_weight` 0 turns that off). Yesterday's
/// small talk, which never names the garden, does not push the garden out of the first
/// places when the question is about yesterday; a time in which nothing was said changes
/// nothing.
#[tokio::test]
async fn a_turn_said_in_the_querys_time_is_found_though_older_turns_match_better() {
    const DAY: i64 = 86_400_000;
    let asked_at = 1_781_708_400_000; // Wednesday 2026-06-17T15:00:00Z
    let garden = |text: &str| text.contains("garden");
    let mut said = Vec::new();
    for i in 0..8 {
        let mut turn = NewEvent::new(
            Role::User,
            format!("The garden again ({i}): garden beds, garden tomatoes, the garden hose"),
        );
        turn.created_at = Some(asked_at - (120 + i) * DAY);
        said.push(turn);
    }
    let mut last_week = NewEvent::new(
        Role::User,
        "A long stretch of meetings, rain and errands; the bins, the post, the car, and the \
         gate of the garden squeaks again.",
    );
    last_week.created_at = Some(asked_at - 7 * DAY);
    said.push(last_week.clone());
    for chat in [
        "Rain again today",
        "The post came late",
        "Errands and the car wash",
    ] {
        let mut small_talk = NewEvent::new(Role::User, chat);
        small_talk.created_at = Some(asked_at - DAY);
        said.push(small_talk);
    }
    let turns = apart(&said.iter().collect::<Vec<_>>());
    let ask = async |time_weight: f64, query: &str| {
        let (_dir, memory) = memory_with(|c| {
            c.search.max_top_k = 5;
            c.search.default_top_k = 5;
            c.search.candidates = 5;
            c.search.neighbor_weight = 0.0;
            c.search.time_weight = time_weight;
        })
        .await;
        memory.append("u", "chat", &turns).await.unwrap();
        let mut asked = request("u", query, Some("chat"));
        asked.asked_at = Some(asked_at);
        asked.top_k = Some(5);
        let hits = memory.search(&asked).await.unwrap();
        hits.into_iter().map(|h| (h.at, h.text)).collect::<Vec<_>>()
    };
    let query = "what did I say about the garden last week?";
    let last_week_at = last_week.created_at.unwrap();
    let without = ask(0.0, query).await;
    assert_eq!(without.len(), 5);
    assert!(
        without.iter().all(|(at, _)| *at != last_week_at),
        "not among the candidates by the words alone: {without:?}"
    );
    let with = ask(1.0, query).await;
    assert!(
        with.iter().any(|(at, _)| *at == last_week_at),
        "found when the turns said then are asked alone: {with:?}"
    );

    let yesterday = "what did I say about the garden yesterday?";
    let with = ask(1.0, yesterday).await;
    assert_eq!(with[0], ask(0.0, yesterday).await[0], "{with:?}");
    assert!(
        with.iter().filter(|(_, text)| garden(text)).count() >= 4,
        "{with:?}"
    );
    // Nothing was said three days ago: the same hits as without a time.
    let then = "what did I say about the garden three days ago?";
    assert_eq!(ask(1.0, then).await, ask(0.0, then).await);
}

/// A day is the user's own (`[users.U] timezone`): "yesterday" asked at 02:00 in Auckland
/// (14:00 the day before in UTC) is Auckland's yesterday. Two turns match alike; the one
/// said on the user's yesterday comes first.
#[tokio::test]
async fn time_words_are_read_in_the_users_zone() {
    const HOUR: i64 = 3_600_000;
    let asked_at = 1_781_704_800_000; // 2026-06-17T14:00:00Z = 2026-06-18T02:00 NZST
    let mut auckland_yesterday = NewEvent::new(Role::User, "Fed the cat at noon");
    auckland_yesterday.created_at = Some(asked_at - 14 * HOUR); // 06-17 00:00 UTC
    let mut utc_yesterday = NewEvent::new(Role::User, "Fed the cat at dawn");
    utc_yesterday.created_at = Some(asked_at - 30 * HOUR); // 06-16 08:00 UTC
    let mut weakest = NewEvent::new(Role::User, "Errands, rain, bins, post, a cat, the car");
    weakest.created_at = Some(asked_at - 30 * 24 * HOUR);
    let zones = [
        (None, utc_yesterday.created_at),
        (Some("Pacific/Auckland"), auckland_yesterday.created_at),
    ];
    for (zone, expected) in zones {
        let (_dir, memory) = memory_with(|c| {
            if let Some(zone) = zone {
                let user = nightshift::config::UserConfig {
                    timezone: Some(zone.to_string()),
                    ..Default::default()
                };
                c.users.insert("u".into(), user);
            }
        })
        .await;
        let turns = apart(&[&weakest, &utc_yesterday, &auckland_yesterday]);
        memory.append("u", "chat", &turns).await.unwrap();
        let mut asked = request("u", "when did I feed the cat yesterday", Some("chat"));
        asked.asked_at = Some(asked_at);
        let hits = memory.search(&asked).await.unwrap();
        assert_eq!(Some(hits[0].at), expected, "{zone:?}");
    }
}

/// One long turn whose every chunk matches is one candidate, not many: with as many
/// candidates as hits, the short turns that also match are still found. (No neighbour
/// spreading here: only which turns are candidates is measured.)
#[tokio::test]
async fn a_long_turns_many_chunks_do_not_crowd_out_short_turns() {
    let (_dir, memory) = memory_with(|c| {
        c.search.max_top_k = 5;
        c.search.default_top_k = 5;
        c.search.candidates = 5;
        c.search.neighbor_weight = 0.0;
    })
    .await;
    let mut turns = vec![NewEvent::new(
        Role::Assistant,
        (0..200)
            .map(|i| format!("kayak paddle {i} kayak lake kayak river kayak. "))
            .collect::<String>(),
    )];
    let filler = |i: usize| NewEvent::new(Role::User, format!("Unrelated turn {i}: bread, tax"));
    for (i, place) in ["lake", "coast", "fjord"].iter().enumerate() {
        turns.extend([filler(i), filler(i), filler(i)]);
        turns.push(NewEvent::new(
            Role::User,
            format!("I took the kayak to the {place}"),
        ));
    }
    // Weaker matches, each buried in a longer turn.
    for i in 0..6 {
        turns.extend([filler(i), filler(i), filler(i)]);
        turns.push(NewEvent::new(
            Role::User,
            format!("Day {i}: errands, rain, bins, the post, the car, the garden, a kayak shop"),
        ));
    }
    memory.append("u", "chat", &turns).await.unwrap();
    let mut asked = request("u", "kayak", Some("chat"));
    asked.top_k = Some(5);
    let hits = memory.search(&asked).await.unwrap();
    let texts: Vec<&str> = hits.iter().map(|h| &h.text[..20]).collect();
    let short = texts
        .iter()
        .filter(|t| t.starts_with("I took the kayak"))
        .count();
    assert_eq!(short, 3, "{texts:?}");
}

/// An order question ("what did I first say …") gets its best hits oldest first; any
/// other question, best first.
#[tokio::test]
async fn an_order_question_is_answered_in_time_order() {
    let (_dir, memory) = fresh().await;
    const DAY: i64 = 86_400_000;
    let start = 1_790_000_000_000;
    let said = |day: i64, text: &str| NewEvent {
        created_at: Some(start + day * DAY),
        ..NewEvent::new(Role::User, text)
    };
    // The latest says the most about the diet: best first, it leads.
    let turns = [
        said(0, "I started a keto diet"),
        said(1, "Weather was grey all day, bins out"),
        said(5, "The keto diet is hard, I may switch diet"),
        said(
            9,
            "Diet update: the vegetarian diet beat the keto diet, diet done",
        ),
    ];
    memory.append("u", "chat", &turns).await.unwrap();
    let times = |hits: &[nightshift::memory::SearchHit]| -> Vec<i64> {
        hits.iter().map(|h| (h.at - start) / DAY).collect()
    };
    let best_first = memory
        .search(&request("u", "keto diet", Some("chat")))
        .await
        .unwrap();
    assert_eq!(times(&best_first)[0], 9, "{:?}", times(&best_first));
    let in_order = memory
        .search(&request(
            "u",
            "what did I first say about the keto diet",
            Some("chat"),
        ))
        .await
        .unwrap();
    let days = times(&in_order);
    assert!(days.len() >= 3, "{days:?}");
    assert!(days.windows(2).all(|w| w[0] <= w[1]), "{days:?}");
    assert_eq!(days[0], 0, "{days:?}");
}
