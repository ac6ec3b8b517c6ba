//! Properties of memory's input paths over their whole domain (issue 26, item 3):
//!
//! - the FTS query builder (as-of search over note versions): any text gives an FTS5
//!   expression that libSQL runs (or none), and search answers it or refuses it by the
//!   input rule, never with an SQL error; a stored word is found by its own expression
//!   and by search (the keyword index);
//! - the chunker: any text, any sizes: the chunks are pieces of the (whitespace-normalised)
//!   text at character boundaries, within the size, that cover it in order, neighbours
//!   sharing at most the configured overlap (exactly it in a text without spaces);
//! - the JSONL import: any bytes are a clean import or an error naming a line (or the
//!   whole input), and an error stores nothing;
//! - sessions of two users under one id (issue 44, item 3): for any two users and any
//!   id, neither reaches the other's through append, recall, summary, search or context,
//!   the other's id is answered as one nobody uses, and forgetting is one user's alone;
//! - the corpus in `tests/corpus/fts.txt` and `tests/corpus/jsonl/` replayed.
//!
//! Each runs on a real database file in a temp dir. Budget and regressions: see
//! `tests/props/mod.rs` (`PROPTEST_CASES`; failures kept in
//! `tests/proptest-regressions/properties_memory.txt`).

#[path = "props/mod.rs"]
mod props;

use std::sync::atomic::{AtomicUsize, Ordering};

use nightshift::config::Config;
use nightshift::db::query_scalar;
use nightshift::memory::{
    chunk_text, keyword_expression, ContextRequest, Memory, MemoryError, NewEvent, NewNote, Role,
    SearchRequest, SessionKey, SessionKind,
};
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use tempfile::TempDir;

const REGRESSIONS: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/proptest-regressions/properties_memory.txt"
);

fn config(short: u32, weight: u32) -> ProptestConfig {
    props::config(short, weight, REGRESSIONS)
}

/// A memory store on a new database file, with its runtime.
struct Fixture {
    rt: tokio::runtime::Runtime,
    memory: Memory,
    _dir: TempDir,
}

impl Fixture {
    fn new(tweak: impl FnOnce(&mut Config)) -> Self {
        let dir = TempDir::new().unwrap();
        let mut config = Config::default();
        config.database.path = dir.path().join("nightshift.db").display().to_string();
        tweak(&mut config);
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let memory = rt
            .block_on(nightshift::app::open_memory(&config))
            .expect("open memory");
        Self {
            rt,
            memory,
            _dir: dir,
        }
    }

    fn count(
        &self,
        sql: &str,
        params: impl libsql::params::IntoParams + Send,
    ) -> Result<i64, String> {
        self.rt.block_on(async {
            let conn = self.memory.db().conn().await.map_err(|e| e.to_string())?;
            query_scalar::<i64>(&conn, sql, params)
                .await
                .map(|n| n.unwrap_or(0))
                .map_err(|e| e.to_string())
        })
    }
}

fn fail(message: String) -> TestCaseError {
    TestCaseError::fail(message)
}

// ---------------------------------------------------------------------------------------
// FTS queries
// ---------------------------------------------------------------------------------------

/// FTS5 syntax and SQL, odd scripts and characters that tokenizers disagree on.
const FTS_NASTIES: &[&str] = &[
    "\"",
    "\"\"",
    "\"\"\"",
    "*",
    "^",
    "NEAR",
    "NEAR(",
    "NEAR(a b, 3)",
    "NEAR/3",
    "AND",
    "OR",
    "NOT",
    "and",
    "or",
    "not",
    "(",
    ")",
    "()",
    "{",
    "}",
    "{text context}:",
    "col:",
    "text:",
    "scope:",
    "context:",
    "-",
    "+",
    "'",
    "\\",
    "\0",
    "\u{1F600}",
    "👩‍👩‍👧",
    "e\u{301}",
    "\u{301}",
    "\u{202e}",
    "\u{200f}שלום",
    "مرحبا",
    "\u{feff}",
    "Ⓐ",
    "ⓐ1",
    "ǅ",
    "İ",
    "ß",
    "ﬁ",
    "%",
    "_",
    ";",
    "--",
    "/*",
    "*/",
    "rowid",
    "chunks_fts",
    "\u{10ffff}",
    "Ⅷ",
    "٣",
    "३",
    "ａｂｃ",
    "x\u{0}y",
    "\u{fffd}",
    "\u{e000}",
    "1e10",
    "-0",
    "'); DROP TABLE chunks; --",
    "MATCH",
    "bm25(",
    "a:b:c",
    "\"a\" \"b\"",
    "^\"a\"",
    "a*b",
    "\u{1b}[2J",
    "\r\n",
    "\u{85}",
    "\u{2028}",
    "\u{3000}",
    "the",
    "is",
    "who",
];

fn fts_atom() -> BoxedStrategy<String> {
    prop_oneof![
        5 => select(FTS_NASTIES).prop_map(str::to_string),
        3 => "[a-zA-Z0-9]{1,10}",
        2 => "\\PC{1,6}",
        1 => any::<String>(),
        1 => (select(vec!['x', 'é', '語', '😀', '"', '*', '1']), 1usize..6000)
            .prop_map(|(c, n)| std::iter::repeat_n(c, n).collect()),
    ]
    .boxed()
}

fn fts_query() -> BoxedStrategy<String> {
    prop_oneof![
        8 => prop::collection::vec(
            (fts_atom(), select(vec![" ", " ", "", "  ", "\t", "\n", ":", "\"", "*", ","])),
            0..16,
        )
        .prop_map(|parts| parts.into_iter().map(|(a, s)| a + s).collect()),
        1 => any::<String>(),
    ]
    .boxed()
}

/// The documented rule for a query (docs/architecture.md, "What input may be"): at most
/// 4096 bytes, no control character but newlines and tabs, not blank.
fn query_refused(q: &str) -> bool {
    q.len() > 4096
        || q.chars()
            .any(|c| c.is_control() && !matches!(c, '\n' | '\r' | '\t'))
        || q.trim().is_empty()
}

/// Runs `query` both ways: its expression straight through `MATCH` on the note versions
/// (as an as-of search does), and a search as every front door makes it. An SQL error
/// either way fails.
fn fts_case(f: &Fixture, user: &str, query: &str) -> Result<(), String> {
    if let Some(expression) = keyword_expression(query) {
        if expression.is_empty() {
            return Err(format!("{query:?}: an empty expression instead of none"));
        }
        f.count(
            "SELECT count(*) FROM note_versions_fts WHERE note_versions_fts MATCH ?1",
            [expression.as_str()],
        )
        .map_err(|e| format!("{query:?} -> {expression:?}: {e}"))?;
    }
    // Every other query also searches a conversation.
    let request = SearchRequest {
        user_id: user.to_string(),
        query: query.to_string(),
        session_id: (query.len() % 2 == 1).then(|| FTS_SESSION.to_string()),
        ..SearchRequest::default()
    };
    let result = f.rt.block_on(f.memory.search(&request));
    match (result, query_refused(query)) {
        (Ok(_), false) => Ok(()),
        (Err(MemoryError::Input(e)), true) if e.field == "query" => Ok(()),
        (Ok(_), true) => Err(format!(
            "{query:?}: searched, but the input rule refuses it"
        )),
        (Err(e), _) => Err(format!("{query:?}: {e:?}")),
    }
}

/// Notes whose words the queries above hit: operators, scripts, marks, emoji.
const NOTE_TEXTS: &[&str] = &[
    "Alice drinks oolong tea near the window and not coffee",
    "NEAR AND OR NOT are words here, with \"quotes\" and * stars ^ carets",
    "café crème, naïve résumé, Ⅷ Ⓐ ǅ İstanbul straße ﬁle",
    "日本語のテキスト and 中文 and 한국어",
    "שלום עולם and مرحبا بالعالم with \u{202e}reversed\u{202c} text",
    "emoji 😀 👩‍👩‍👧 and combining e\u{301} a\u{300}\u{301}\u{302}",
    "digits ٣ ३ １２３ 1e10 -0 0x1F",
    "col: text: scope: context: {text context}: rowid chunks_fts",
];

const FTS_SESSION: &str = "fts-chat";

fn fts_fixture() -> Fixture {
    let f = Fixture::new(|_| {});
    for text in NOTE_TEXTS {
        f.rt.block_on(f.memory.save_note("fts", &NewNote::new(*text)))
            .expect("save a note");
    }
    let events: Vec<NewEvent> = NOTE_TEXTS
        .iter()
        .map(|t| NewEvent::new(Role::User, *t))
        .collect();
    f.rt.block_on(f.memory.append("fts", FTS_SESSION, &events))
        .expect("append events");
    f
}

/// Any query: a valid FTS5 expression or none; search answers or refuses by the input
/// rule, never an SQL error.
#[test]
fn fts_any_query_runs_or_is_refused_by_the_input_rule() {
    let f = fts_fixture();
    props::check("fts_any_query", config(128, 4), fts_query(), |query| {
        fts_case(&f, "fts", &query).map_err(fail)
    });
}

/// A word stored in a note is found by the expression built from it (the tokens the
/// builder keeps and the ones FTS5 indexed agree), and by search.
#[test]
fn fts_a_stored_word_is_found_by_its_expression() {
    let f = Fixture::new(|_| {});
    let next = AtomicUsize::new(0);
    let word = prop_oneof![
        "[a-z]{1,8}[0-9]{1,3}",
        "[0-9]{1,6}",
        "\\p{L}{1,6}[0-9]",
        "[A-Z][a-zé]{0,6}[0-9]",
    ];
    let strategy = (word, "[a-z ]{0,30}", fts_query());
    props::check(
        "fts_stored_word",
        config(48, 8),
        strategy,
        |(word, around, noise)| {
            let user = format!("finder-{}", next.fetch_add(1, Ordering::Relaxed));
            // Stored as typed and searched as typed: FTS5 folds both sides alike.
            let text = format!("{around} {word} {around}");
            f.rt.block_on(f.memory.save_note(&user, &NewNote::new(text.clone())))
                .map_err(|e| fail(format!("save {text:?}: {e}")))?;
            let expression = keyword_expression(&word)
                .ok_or_else(|| fail(format!("{word:?}: no expression")))?;
            let found = f
                .count(
                    "SELECT count(*) FROM note_versions_fts
                 JOIN note_versions v ON v.version_id = note_versions_fts.rowid
                 WHERE note_versions_fts MATCH ?1 AND v.user_id = ?2",
                    [expression.as_str(), user.as_str()],
                )
                .map_err(|e| fail(format!("{word:?}: {e}")))?;
            prop_assert!(
                found >= 1,
                "{:?} in {:?}: not found by {:?}",
                word,
                text,
                expression
            );
            // With noise after it, search still finds the note.
            let query = format!("{word} {noise}");
            if !query_refused(&query) {
                let hits =
                    f.rt.block_on(f.memory.search(&SearchRequest {
                        user_id: user.clone(),
                        query: query.clone(),
                        ..SearchRequest::default()
                    }))
                    .map_err(|e| fail(format!("{query:?}: {e}")))?;
                prop_assert!(
                    hits.iter().any(|h| h.text == text),
                    "{:?}: the note {:?} is not among {:?}",
                    query,
                    text,
                    hits
                );
            }
            Ok(())
        },
    );
}

/// Found by `fts_a_stored_word_is_found_by_its_expression` and fixed: the builder once
/// lowercased each word with Rust's (current) Unicode tables while FTS5's unicode61
/// tokenizer folds with Unicode 6.1's, so a word with a capital of a script given case
/// later (Osage, Cherokee, Georgian Mtavruli, Old Hungarian, Adlam) was searched in a form
/// never indexed. Words now reach FTS5 as typed, which folds them as it folded the text.
/// The keyword index folds the stored text and the query with the same tables: the same
/// words are found through it.
#[test]
fn both_keyword_indexes_fold_case_alike_on_both_sides() {
    let f = Fixture::new(|_| {});
    let mut missed = Vec::new();
    for word in [
        "\u{104B0}0",
        "\u{13A0}\u{13A1}1",
        "\u{1C90}\u{1C91}2",
        "\u{10C80}3",
        "\u{1E900}4",
        "Zürich5",
        "ΣΊΣΥΦΟΣ6",
    ] {
        f.rt.block_on(
            f.memory
                .save_note("case", &NewNote::new(format!("note {word}"))),
        )
        .unwrap();
        let expression = keyword_expression(word).unwrap();
        let found = f
            .count(
                "SELECT count(*) FROM note_versions_fts WHERE note_versions_fts MATCH ?1",
                [expression.as_str()],
            )
            .unwrap();
        if found == 0 {
            missed.push(format!("{word:?} (searched as {expression})"));
        }
        let notes = SessionKey::new("case", &SessionKind::notes_session("case", None));
        let leg =
            f.rt.block_on(f.memory.keyword_leg(&notes, word, 10))
                .unwrap();
        if leg.is_none_or(|hits| hits.is_empty()) {
            missed.push(format!("{word:?} (through the keyword index)"));
        }
    }
    assert!(missed.is_empty(), "not found: {}", missed.join(", "));
}

// ---------------------------------------------------------------------------------------
// The chunker
// ---------------------------------------------------------------------------------------

/// Whitespace collapsed to single spaces, trimmed (what the chunker promises to cut).
fn normalized(text: &str) -> Vec<char> {
    text.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .collect()
}

/// Where each chunk sits in `n`: the spans chunking the same text with every non-space
/// character made distinct give (the cuts depend on where spaces are and on lengths), or
/// `None` when a chunk is not that piece of the text.
fn spans_by_tagging(
    n: &[char],
    chunks: &[String],
    max: usize,
    overlap: usize,
) -> Option<Vec<usize>> {
    // Plane-15 private-use characters: never whitespace, one per position.
    let tagged: String = n
        .iter()
        .enumerate()
        .map(|(i, c)| {
            if *c == ' ' {
                ' '
            } else {
                char::from_u32(0xF0000 + i as u32).unwrap()
            }
        })
        .collect();
    let tagged_chunks = chunk_text(&tagged, max, overlap);
    if tagged_chunks.len() != chunks.len() {
        return None;
    }
    tagged_chunks
        .iter()
        .zip(chunks)
        .map(|(t, c)| {
            let start = t.chars().next()? as usize - 0xF0000;
            let piece: String = n.get(start..start + c.chars().count())?.iter().collect();
            (piece == *c).then_some(start)
        })
        .collect()
}

/// Checks chunks against the text: each a non-empty piece of the normalised text within
/// `max` characters, no surrounding space; in order, each starting no earlier than the one
/// before and at most one space after its end; together from the first character to the
/// last; neighbours sharing at most `overlap` characters (exactly `overlap`, or all but one
/// character of the chunk when that is less, in a text without spaces).
fn check_chunks(text: &str, max: usize, overlap: usize, chunks: &[String]) -> Result<(), String> {
    let n = normalized(text);
    if max == 0 || n.is_empty() {
        // Nothing fits in zero characters; nothing to cut in blank text.
        return if chunks.is_empty() {
            Ok(())
        } else {
            Err(format!("chunks of nothing: {chunks:?}"))
        };
    }
    if chunks.is_empty() {
        return Err("no chunks".into());
    }
    for c in chunks {
        let len = c.chars().count();
        if len == 0 || len > max || c.trim() != c {
            return Err(format!("chunk {c:?}: {len} chars (max {max}) or untrimmed"));
        }
    }
    if n.len() <= max {
        let whole: String = n.iter().collect();
        return if chunks == [whole.clone()] {
            Ok(())
        } else {
            Err(format!("short text not one chunk: {chunks:?}"))
        };
    }
    let starts = spans_by_tagging(&n, chunks, max, overlap)
        .ok_or_else(|| "a chunk is not the piece of the text chunking finds for it".to_string())?;
    let lens: Vec<usize> = chunks.iter().map(|c| c.chars().count()).collect();
    if starts[0] != 0 {
        return Err(format!("the first chunk starts at {}", starts[0]));
    }
    let last = chunks.len() - 1;
    if starts[last] + lens[last] != n.len() {
        return Err(format!(
            "the last chunk ends at {}, the text at {}",
            starts[last] + lens[last],
            n.len()
        ));
    }
    let spaceless = !n.contains(&' ');
    for i in 1..chunks.len() {
        let (p, end, q) = (starts[i - 1], starts[i - 1] + lens[i - 1], starts[i]);
        if q < p {
            return Err(format!(
                "chunk {i} starts at {q}, before chunk {} at {p}",
                i - 1
            ));
        }
        if q > end + 1 || (q == end + 1 && n[end] != ' ') {
            return Err(format!(
                "a gap between chunk {} (ends {end}) and chunk {i} (starts {q})",
                i - 1
            ));
        }
        let shared = end.saturating_sub(q);
        if shared > overlap {
            return Err(format!(
                "chunks {} and {i} share {shared} chars, over {overlap}",
                i - 1
            ));
        }
        if spaceless && shared != overlap.min(lens[i - 1] - 1) {
            return Err(format!(
                "chunks {} and {i} share {shared} chars, not {overlap}",
                i - 1
            ));
        }
    }
    Ok(())
}

/// The checker itself catches a lost chunk and a chunk that is not the text.
#[test]
fn chunk_checker_has_teeth() {
    let text: String = (0..200).map(|i| format!("w{i} ")).collect();
    let chunks = chunk_text(&text, 40, 10);
    assert!(check_chunks(&text, 40, 10, &chunks).is_ok());
    let mut lost = chunks.clone();
    lost.remove(3);
    assert!(check_chunks(&text, 40, 10, &lost).is_err());
    let mut changed = chunks.clone();
    changed[2] = changed[2].replace('w', "v");
    assert!(check_chunks(&text, 40, 10, &changed).is_err());
}

/// Text: anything, or words of any script between any whitespace, or long words.
fn chunk_input() -> BoxedStrategy<String> {
    let word = prop_oneof![
        4 => "[a-z]{1,12}",
        2 => "\\PC{1,8}",
        1 => "x{40,700}",
        1 => "[語😀é]{1,300}",
    ];
    let gap = select(vec![
        " ",
        " ",
        " ",
        "  ",
        "\n",
        "\t",
        "\u{a0}",
        "\u{3000}",
        "\r\n",
        " \u{2028} ",
    ]);
    prop_oneof![
        1 => any::<String>(),
        4 => prop::collection::vec((word, gap), 0..200)
            .prop_map(|parts| parts.into_iter().map(|(w, g)| w + g).collect()),
        1 => (1usize..3000).prop_map(|n| "ab".repeat(n)),
    ]
    .boxed()
}

proptest! {
    #![proptest_config(config(128, 1))]

    /// Any text, any sizes (zero, one, overlap at or past the size).
    #[test]
    fn chunks_cover_the_text_within_size_and_overlap(
        text in chunk_input(),
        max in prop_oneof![0usize..=8, 1usize..=300, 32usize..=2000],
        overlap in prop_oneof![0usize..=8, 0usize..=400],
    ) {
        let chunks = chunk_text(&text, max, overlap);
        let checked = check_chunks(&text, max, overlap, &chunks);
        prop_assert!(checked.is_ok(), "max {} overlap {}: {}\n{:?}", max, overlap, checked.unwrap_err(), chunks);
    }

    /// Sizes the configuration accepts (chunk_chars 32..=100000, overlap under half): no
    /// chunk but the last is much shorter than the size (cuts fall in its last quarter).
    #[test]
    fn chunks_of_valid_sizes_fill_their_window(
        text in chunk_input(),
        max in 32usize..=1000,
        overlap_part in 0.0f64..0.5,
    ) {
        let overlap = ((max as f64 * overlap_part) as usize).min(max / 2 - 1);
        let chunks = chunk_text(&text, max, overlap);
        let checked = check_chunks(&text, max, overlap, &chunks);
        prop_assert!(checked.is_ok(), "{}", checked.unwrap_err());
        if let Some((_, most)) = chunks.split_last() {
            for c in most {
                prop_assert!(c.chars().count() + 2 >= max * 3 / 4, "{} chars of {}: {:?}", c.chars().count(), max, c);
            }
        }
    }
}

// ---------------------------------------------------------------------------------------
// JSONL import
// ---------------------------------------------------------------------------------------

const MAX_BATCH: usize = 6;
const MAX_TEXT: usize = 2048;
const MAX_PAYLOAD: usize = 256;
const MAX_IMPORT: usize = 32 * 1024;

/// A line, and whether it is an event the rules must accept.
fn jsonl_line() -> BoxedStrategy<(Vec<u8>, bool)> {
    let json = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(serde_json::Value::from),
        "\\PC{0,12}".prop_map(serde_json::Value::from),
    ]
    .prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
            prop::collection::btree_map("[a-z_]{1,8}", inner, 0..4)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
    .boxed();
    let role = prop_oneof![
        6 => select(vec!["user", "assistant", "tool", "system"]).prop_map(|r| (r, true)),
        1 => select(vec!["robot", "User", "", "USER", "user "]).prop_map(|r| (r, false)),
    ];
    let content = prop_oneof![
        6 => "[a-zA-Z0-9 .,'\"!?語😀é\n\t-]{1,60}".prop_map(|c| (c, true)),
        2 => "\\PC{0,40}".prop_map(|c| (c, true)),
        1 => any::<String>().prop_map(|c| (c, true)),
        1 => select(vec!["", " ", "\t\n", "\0", "a\u{0}b", "\u{1b}[2J", "\u{7f}", "\u{85}", "x\u{8}\u{c}\r"])
            .prop_map(|c| (c.to_string(), true)),
        1 => (1usize..3000).prop_map(|n| ("w".repeat(n), n <= MAX_TEXT)),
    ];
    let importance = prop_oneof![
        4 => Just((None, true)),
        2 => (0.0f64..=1.0).prop_map(|x| (Some(serde_json::Value::from(x)), true)),
        1 => select(vec![-0.0, 1.0000001, -1.0, 2.0, 1e308, f64::MIN_POSITIVE])
            .prop_map(|x| (Some(serde_json::Value::from(x)), (0.0..=1.0).contains(&x))),
        1 => json.clone().prop_map(|v| (Some(v), false)),
    ];
    let created_at = prop_oneof![
        4 => Just((None, true)),
        2 => (0i64..=253_402_300_799_999).prop_map(|t| (Some(serde_json::Value::from(t)), true)),
        1 => select(vec![i64::MIN, -1, 253_402_300_800_000, i64::MAX])
            .prop_map(|t| (Some(serde_json::Value::from(t)), false)),
        1 => select(vec!["1e400", "1.5", "\"2026-01-01\"", "18446744073709551616", "-0"])
            .prop_map(|t| (Some(serde_json::from_str(t).unwrap_or(serde_json::Value::Null)), false)),
    ];
    let payload = prop_oneof![
        4 => Just((None, true)),
        2 => json.clone().prop_map(|v| {
            let small = serde_json::to_string(&v).unwrap().len() <= MAX_PAYLOAD;
            (Some(v), small)
        }),
        1 => (1usize..600).prop_map(|n| (Some(serde_json::Value::from("p".repeat(n))), n + 2 <= MAX_PAYLOAD)),
    ];
    let event = (
        role,
        content,
        importance,
        created_at,
        payload,
        prop::option::of("[a-z]{1,6}"),
    )
        .prop_map(
            |((role, r_ok), (content, c_ok), (imp, i_ok), (at, a_ok), (payload, p_ok), extra)| {
                let mut m = serde_json::Map::new();
                m.insert("role".into(), role.into());
                m.insert("content".into(), content.clone().into());
                let mut ok = r_ok && i_ok && a_ok && p_ok && extra.is_none();
                // Content by the content rule (docs/api.md): anything not blank that fits,
                // control characters and NUL included.
                ok = ok && c_ok && !content.trim().is_empty() && content.len() <= MAX_TEXT;
                if let Some(v) = imp {
                    // `null` is "absent".
                    m.insert("importance".into(), v);
                }
                if let Some(v) = at {
                    m.insert("created_at".into(), v);
                }
                if let Some(v) = payload {
                    m.insert("payload".into(), v);
                }
                if let Some(k) = extra {
                    m.insert(k, serde_json::Value::Null);
                }
                (
                    serde_json::to_vec(&serde_json::Value::Object(m)).unwrap(),
                    ok,
                )
            },
        );
    prop_oneof![
        10 => event,
        1 => json.prop_map(|v| (serde_json::to_vec(&v).unwrap(), false)),
        1 => any::<String>().prop_map(|s| (s.into_bytes(), false)),
        1 => prop::collection::vec(any::<u8>(), 0..40).prop_map(|b| (b, false)),
        2 => select(vec!["", "   ", "\r", "\t \u{a0}"]).prop_map(|s| (s.as_bytes().to_vec(), false)),
        1 => select(vec![
            "{}", "[]", "null", "0", "\"user\"", "{\"role\":\"user\"}",
            "{\"role\":\"user\",\"content\":\"\\u0000\"}",
            "{\"role\":\"user\",\"content\":\"\\ud800\"}",
            "{\"role\":\"user\",\"content\":\"x\",\"role\":\"tool\"}",
            "\u{feff}{\"role\":\"user\",\"content\":\"bom\"}",
            "{\"role\":\"user\",\"content\":\"x\"} trailing",
            "{\"role\":\"user\",\"content\":\"x\"}{\"role\":\"user\",\"content\":\"y\"}",
            "{\"role\":\"user\",\"content\":\"x\",\"importance\":NaN}",
            "{\"role\":\"user\",\"content\":\"x\",\"created_at\":1e400}",
            "{\"role\":\"user\",\"content\":\"x\",\"importance\":null,\"created_at\":null,\"payload\":null}",
        ])
        .prop_map(|s| {
            let ok = s.starts_with("{\"role\":\"user\",\"content\":\"x\",\"importance\":null");
            (s.as_bytes().to_vec(), ok)
        }),
        1 => (1usize..200).prop_map(|d| ("[".repeat(d * 10).into_bytes(), false)),
    ]
    .boxed()
}

/// An event the rules accept (or a blank line).
fn good_line() -> BoxedStrategy<(Vec<u8>, bool)> {
    let event = (
        select(vec!["user", "assistant", "tool", "system"]),
        "[a-zA-Z0-9 .,'\"!?語😀é\n\t-]{0,50}[a-z語😀]",
        prop::option::of(0.0f64..=1.0),
        prop::option::of(0i64..=253_402_300_799_999),
        prop::option::of("[a-z]{0,20}"),
    )
        .prop_map(|(role, content, importance, created_at, payload)| {
            let mut event = serde_json::json!({"role": role, "content": content});
            if let Some(x) = importance {
                event["importance"] = x.into();
            }
            if let Some(t) = created_at {
                event["created_at"] = t.into();
            }
            if let Some(p) = payload {
                event["payload"] = serde_json::json!({ "note": p });
            }
            (serde_json::to_vec(&event).unwrap(), true)
        });
    prop_oneof![
        8 => event,
        1 => select(vec!["", "  ", "\r", "\t"]).prop_map(|s| (s.as_bytes().to_vec(), false)),
    ]
    .boxed()
}

/// Lines of good events, of good events and one line of anything, or of anything, joined
/// by LF or CRLF, maybe with a final line end.
fn jsonl_input() -> impl Strategy<Value = (Vec<u8>, Vec<bool>)> {
    let lines = prop_oneof![
        2 => prop::collection::vec(good_line(), 0..9),
        2 => (prop::collection::vec(good_line(), 0..6), jsonl_line(), any::<proptest::sample::Index>())
            .prop_map(|(mut lines, odd, at)| {
                lines.insert(at.index(lines.len() + 1), odd);
                lines
            }),
        1 => prop::collection::vec(jsonl_line(), 0..10),
    ];
    (lines, any::<bool>(), any::<bool>()).prop_map(|(lines, crlf, trailing)| {
        let sep: &[u8] = if crlf { b"\r\n" } else { b"\n" };
        let mut bytes = Vec::new();
        let mut sure = Vec::new();
        for (i, (line, ok)) in lines.iter().enumerate() {
            if i > 0 {
                bytes.extend_from_slice(sep);
            }
            bytes.extend_from_slice(line);
            // A line of random bytes may hold line ends itself: its pieces are not sure.
            let pieces = line.split(|b| *b == b'\n').count();
            sure.extend(std::iter::repeat_n(*ok && pieces == 1, pieces));
        }
        if trailing {
            bytes.extend_from_slice(sep);
        }
        (bytes, sure)
    })
}

fn jsonl_fixture() -> Fixture {
    Fixture::new(|c| {
        c.memory.max_batch_events = MAX_BATCH;
        c.memory.max_text_bytes = MAX_TEXT;
        c.memory.max_payload_bytes = MAX_PAYLOAD;
        c.memory.max_import_bytes = MAX_IMPORT;
    })
}

/// Imports `bytes` into a new session and checks the outcome. `sure[i]`: line i+1 is an
/// event the rules must accept (when known).
fn jsonl_case(f: &Fixture, session: &str, bytes: &[u8], sure: &[bool]) -> Result<(), String> {
    let lines: Vec<&[u8]> = bytes.split(|b| *b == b'\n').collect();
    let blank = |l: &[u8]| std::str::from_utf8(l).is_ok_and(|s| s.trim().is_empty());
    let non_blank = lines.iter().filter(|l| !blank(l)).count();
    let events_before = f.count("SELECT count(*) FROM events", ())?;
    let result =
        f.rt.block_on(f.memory.append_jsonl("importer", session, bytes));
    let key = SessionKey::new("importer", session);
    let stored = f.count(
        "SELECT count(*) FROM events WHERE session_id = ?1",
        [key.as_str()],
    )?;
    match result {
        Ok(sequences) => {
            if sequences.len() != non_blank || stored as usize != non_blank {
                return Err(format!(
                    "{} lines with text, {} sequences, {stored} stored",
                    non_blank,
                    sequences.len()
                ));
            }
            if sequences != (1..=non_blank as i64).collect::<Vec<_>>() {
                return Err(format!("sequences {sequences:?}"));
            }
            // Stored as given, in order.
            let expected: Vec<String> = lines
                .iter()
                .filter(|l| !blank(l))
                .map(|l| {
                    let v: serde_json::Value = serde_json::from_slice(l).expect("accepted as JSON");
                    v["content"].as_str().expect("content").to_string()
                })
                .collect();
            let actual: Vec<String> = f.rt.block_on(async {
                let conn = f.memory.db().conn().await.unwrap();
                let mut rows = conn
                    .query(
                        "SELECT content FROM events WHERE session_id = ?1 ORDER BY sequence",
                        [key.as_str()],
                    )
                    .await
                    .unwrap();
                let mut out = Vec::new();
                while let Some(row) = rows.next().await.unwrap() {
                    out.push(row.get::<String>(0).unwrap());
                }
                out
            });
            if actual != expected {
                return Err(format!("stored {actual:?}, given {expected:?}"));
            }
            Ok(())
        }
        Err(err) => {
            if stored != 0 || f.count("SELECT count(*) FROM events", ())? != events_before {
                return Err(format!("{err}: yet {stored} events stored"));
            }
            if f.count(
                "SELECT count(*) FROM sessions WHERE session_id = ?1",
                [key.as_str()],
            )? != 0
            {
                return Err(format!("{err}: yet the session was created"));
            }
            match &err {
                MemoryError::Jsonl(e) => {
                    if e.line == 0
                        || e.line > lines.len()
                        || !err.to_string().starts_with(&format!("line {}: ", e.line))
                    {
                        return Err(format!("{err}: names line {} of {}", e.line, lines.len()));
                    }
                    if blank(lines[e.line - 1]) {
                        return Err(format!("{err}: blames a blank line"));
                    }
                    let batch = e.reason.contains("max_batch_events") && non_blank > MAX_BATCH;
                    if sure.get(e.line - 1) == Some(&true) && !batch {
                        return Err(format!(
                            "{err}: refuses a valid event: {:?}",
                            String::from_utf8_lossy(lines[e.line - 1])
                        ));
                    }
                    Ok(())
                }
                MemoryError::Input(e) if e.field == "JSONL input" => {
                    if non_blank == 0 || bytes.len() > MAX_IMPORT {
                        Ok(())
                    } else {
                        Err(format!("{err}, with {non_blank} lines of text"))
                    }
                }
                other => Err(format!("not an error naming a line: {other:?}")),
            }
        }
    }
}

/// Any bytes: a clean import of every line with text, stored as given, or an error naming
/// the line (or the whole input) and nothing stored.
#[test]
fn jsonl_import_is_clean_or_names_the_line_and_stores_nothing() {
    let f = jsonl_fixture();
    let next = AtomicUsize::new(0);
    props::check(
        "jsonl_import",
        config(128, 4),
        jsonl_input(),
        |(bytes, sure)| {
            let session = format!("import-{}", next.fetch_add(1, Ordering::Relaxed));
            jsonl_case(&f, &session, &bytes, &sure)
                .map_err(|e| fail(format!("{e}\ninput: {:?}", String::from_utf8_lossy(&bytes))))
        },
    );
}

// ---------------------------------------------------------------------------------------
// Sessions of two users
// ---------------------------------------------------------------------------------------

/// Ids that could meet if sessions were keyed carelessly: prefixes of each other, the
/// characters of paths, SQL and LIKE, other scripts, the reserved prefixes' words, the
/// longest id.
const TRICKY_IDS: &[&str] = &[
    "alice",
    "al",
    "ice",
    "alice2",
    "a b",
    "a/b",
    "a:b",
    "a|b",
    "%",
    "_",
    "'",
    "\"",
    "--",
    "memory",
    "scheduled",
    "memorial:x",
    "chat-1",
    "Chat-1",
    "ü",
    "u\u{308}",
    "日本",
    "💡",
];

/// An id by the common rule, often one of [`TRICKY_IDS`].
fn any_id() -> BoxedStrategy<String> {
    prop_oneof![
        3 => select(TRICKY_IDS).prop_map(str::to_string),
        2 => "[a-z0-9]{1,12}",
        2 => "\\PC{1,24}",
        1 => Just("x".repeat(nightshift::input::MAX_ID_BYTES)),
    ]
    .prop_filter("an id by the common rule", |id| {
        nightshift::input::check_id("id", id).is_ok()
    })
    .boxed()
}

/// Two users and one conversation id.
fn two_users_one_id() -> BoxedStrategy<(String, String, String)> {
    (any_id(), any_id(), any_id())
        .prop_filter("two users, a conversation id", |(a, b, session)| {
            a != b && SessionKind::of(session) == SessionKind::Conversation
        })
        .boxed()
}

/// What `user` is told about `session`, with the id itself taken out.
fn answer_of(f: &Fixture, user: &str, session: &str) -> Vec<String> {
    let actor = nightshift::access::Actor::user(user).unwrap();
    let context = ContextRequest {
        user_id: user.to_string(),
        session_id: session.to_string(),
        budget_tokens: None,
        query: None,
        strategy: nightshift::memory::Strategy::All,
    };
    let search = SearchRequest {
        user_id: user.to_string(),
        query: "marker".to_string(),
        session_id: Some(session.to_string()),
        ..SearchRequest::default()
    };
    let answers = f.rt.block_on(async {
        vec![
            format!("{:?}", f.memory.recall(&actor, session, 10).await),
            format!("{:?}", f.memory.read_summary(&actor, session).await),
            format!("{:?}", f.memory.context(&context).await),
            format!("{:?}", f.memory.search(&search).await),
        ]
    });
    answers
        .into_iter()
        .map(|a| a.replace(&format!("{session:?}"), "ID"))
        .collect()
}

/// Every text `user` can reach through `session`: its events, its context, a search in
/// it (by `query`), and a search of all they have.
fn reachable(f: &Fixture, user: &str, session: &str, query: &str) -> Result<String, String> {
    let actor = nightshift::access::Actor::user(user).unwrap();
    f.rt.block_on(async {
        let mut seen = String::new();
        let events = f
            .memory
            .recall(&actor, session, 100)
            .await
            .map_err(|e| format!("recall: {e}"))?;
        for event in events {
            seen.push_str(&event.content);
            seen.push('\n');
        }
        let context = ContextRequest {
            user_id: user.to_string(),
            session_id: session.to_string(),
            budget_tokens: None,
            query: Some(query.to_string()),
            strategy: nightshift::memory::Strategy::All,
        };
        let context = f
            .memory
            .context(&context)
            .await
            .map_err(|e| format!("context: {e}"))?;
        seen.push_str(&context.render());
        for in_session in [Some(session.to_string()), None] {
            let request = SearchRequest {
                user_id: user.to_string(),
                query: query.to_string(),
                session_id: in_session,
                ..SearchRequest::default()
            };
            for hit in f
                .memory
                .search(&request)
                .await
                .map_err(|e| format!("search: {e}"))?
            {
                seen.push_str(&hit.text);
                seen.push('\n');
            }
        }
        Ok(seen)
    })
}

/// One case: `a` writes under `session`; to `b` the id is unknown, answered exactly as an
/// id nobody uses; `b` writes under it too and gets a session of their own (from sequence
/// 1); neither reaches the other's words through recall, context or search; forgetting
/// one leaves the other whole. Both are forgotten at the end.
fn two_users_case(f: &Fixture, a: &str, b: &str, session: &str, n: usize) -> Result<(), String> {
    let (actor_a, actor_b) = (
        nightshift::access::Actor::user(a).unwrap(),
        nightshift::access::Actor::user(b).unwrap(),
    );
    // What an earlier case (one that failed, or shrank) left is gone first.
    for actor in [&actor_a, &actor_b] {
        let _ = f.rt.block_on(f.memory.forget(actor, session));
    }
    let (word_a, word_b) = (format!("amarker{n}"), format!("bmarker{n}"));
    let said = |word: &str| vec![NewEvent::new(Role::User, format!("marker {word} said"))];
    let append = |user: &str, word: &str| {
        f.rt.block_on(f.memory.append(user, session, &said(word)))
            .map_err(|e| format!("{user} appends: {e}"))
    };
    if append(a, &word_a)? != [1] {
        return Err(format!("{a}'s first append is not sequence 1"));
    }
    let unused = format!("unused-{n}");
    let theirs = answer_of(f, b, session);
    let nobodys: Vec<String> = answer_of(f, b, &unused)
        .into_iter()
        .map(|answer| answer.replace(&format!("{unused:?}"), "ID"))
        .collect();
    if theirs != nobodys {
        return Err(format!(
            "{b} is told of {a}'s session otherwise than of an unknown id: {theirs:?} / {nobodys:?}"
        ));
    }
    if !theirs
        .iter()
        .all(|answer| answer.contains("SessionNotFound"))
    {
        return Err(format!("{b} is told of {a}'s session: {theirs:?}"));
    }
    if append(b, &word_b)? != [1] {
        return Err(format!(
            "{b}'s first append under {a}'s id is not sequence 1"
        ));
    }
    let seen_a = reachable(f, a, session, &format!("marker {word_b}"))?;
    let seen_b = reachable(f, b, session, &format!("marker {word_a}"))?;
    if seen_a.contains(&word_b) || !seen_a.contains(&word_a) {
        return Err(format!("{a} reaches: {seen_a:?}"));
    }
    if seen_b.contains(&word_a) || !seen_b.contains(&word_b) {
        return Err(format!("{b} reaches: {seen_b:?}"));
    }
    f.rt.block_on(f.memory.forget(&actor_b, session))
        .map_err(|e| format!("{b} forgets: {e}"))?;
    let left = reachable(f, a, session, &format!("marker {word_a}"))?;
    if !left.contains(&word_a) {
        return Err(format!("{b} forgetting took {a}'s: {left:?}"));
    }
    if !matches!(
        f.rt.block_on(f.memory.recall(&actor_b, session, 10)),
        Err(MemoryError::SessionNotFound(_))
    ) {
        return Err(format!("{b}'s session outlived its forgetting"));
    }
    f.rt.block_on(f.memory.forget(&actor_a, session))
        .map_err(|e| format!("{a} forgets: {e}"))?;
    for user in [a, b] {
        let left = f.count(
            "SELECT count(*) FROM sessions WHERE session_id = ?1",
            [SessionKey::new(user, session).as_str()],
        )?;
        if left != 0 {
            return Err(format!("{user}'s session left once forgotten"));
        }
    }
    Ok(())
}

/// For any two users and any conversation id: what one writes under the id is invisible
/// to the other through append, recall, summary, search and context, the other's
/// answers for it are those for an id nobody uses, and forgetting is one user's alone.
#[test]
fn two_users_sessions_of_one_id_never_meet() {
    let f = Fixture::new(|_| {});
    let next = AtomicUsize::new(0);
    props::check(
        "two_users_one_id",
        config(32, 8),
        two_users_one_id(),
        |(a, b, session)| {
            let n = next.fetch_add(1, Ordering::Relaxed);
            two_users_case(&f, &a, &b, &session, n)
                .map_err(|e| fail(format!("{e}\nusers {a:?}, {b:?}, session {session:?}")))
        },
    );
}

// ---------------------------------------------------------------------------------------
// The corpus
// ---------------------------------------------------------------------------------------

/// Replays `tests/corpus/fts.txt` (one query per line) through the FTS expression into
/// `MATCH` and through search (no SQL error; refused only by the input rule), and every
/// file of `tests/corpus/jsonl/` (one input per file, raw bytes, any name) through the
/// import (clean, or an error naming a line and nothing stored); also chunks each FTS line
/// and each JSONL file's text at a few sizes.
///
/// Corpus format (`tests/props/mod.rs`): UTF-8, one input per line; lines starting with
/// `# ` are comments, blank lines are skipped (the empty input is replayed anyway);
/// escapes `\\`, `\n`, `\r`, `\t`, `\0`, `\s` (a space), `\u{HEX}`, and `\R{N}{TEXT}`
/// (TEXT N times).
#[test]
fn corpus_replays() {
    let f = fts_fixture();
    let mut failures = Vec::new();
    let mut queries = props::corpus_lines("fts.txt");
    queries.push(String::new());
    for query in &queries {
        if let Err(e) = fts_case(&f, "fts", query) {
            failures.push(e);
        }
        for (max, overlap) in [(1, 0), (2, 5), (32, 15), (640, 96)] {
            if let Err(e) = check_chunks(query, max, overlap, &chunk_text(query, max, overlap)) {
                failures.push(format!("chunking {query:?} at {max}/{overlap}: {e}"));
            }
        }
    }
    let j = jsonl_fixture();
    for (i, (name, bytes)) in props::corpus_files("jsonl").iter().enumerate() {
        if let Err(e) = jsonl_case(&j, &format!("corpus-{i}"), bytes, &[]) {
            failures.push(format!("jsonl/{name}: {e}"));
        }
        let text = String::from_utf8_lossy(bytes);
        if let Err(e) = check_chunks(&text, 64, 16, &chunk_text(&text, 64, 16)) {
            failures.push(format!("chunking jsonl/{name}: {e}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
