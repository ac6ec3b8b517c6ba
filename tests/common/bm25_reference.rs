//! The keyword leg's reference, written apart from it: plain Okapi BM25 over a session's
//! chunk rows as stored, recomputed for every query, with nothing of `src/memory` (its
//! words, folding, term hashes, postings, blocks, scorer or top-k are not used here). What
//! it shares with the leg is what the documentation fixes: the stemmer crate (Snowball
//! English), the stop-word list (`nightshift::text::is_stop_word`), and the ranking rules
//! below. A leg that agrees with this agrees with the rules, not with its own code.
//!
//! The rules, as docs/search.md and `src/memory/terms.rs` state them:
//! - a word is a run of letters and digits; it is lower-cased, its compatibility forms
//!   and diacritics removed ("ﬁ" → "fi", "é" → "e"), then stemmed;
//! - a word is a stop word when its lower-cased form is on the list; a query looks up
//!   its other words, or its stop words when it has no other (at most 32 distinct);
//! - a chunk's length counts every word of its text and its context; a term's frequency
//!   is its count in the text plus `context_weight` times its count in the context;
//! - idf is FTS5's, `ln((N - n + 0.5) / (n + 0.5))`, floored at 1e-6; k1 = 1.2, b = 0.75;
//!   each matched term adds at least 1e-12;
//! - best first; at equal scores the newer chunk (the larger id) first.

use std::collections::{BTreeMap, HashMap};

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

const K1: f64 = 1.2;
const B: f64 = 0.75;
const MAX_QUERY_TERMS: usize = 32;

/// One stored chunk: its id, text and context.
#[derive(Debug, Clone)]
pub struct Chunk {
    pub id: i64,
    pub text: String,
    pub context: String,
}

/// Every chunk row of `session_id`, read with plain SQL.
pub async fn chunks(db: &nightshift::db::Db, session_id: &str) -> Vec<Chunk> {
    let conn = db.conn().await.unwrap();
    let mut rows = conn
        .query(
            "SELECT chunk_id, text, context FROM chunks WHERE session_id = ?1",
            [session_id],
        )
        .await
        .unwrap();
    let mut out = Vec::new();
    while let Some(row) = rows.next().await.unwrap() {
        out.push(Chunk {
            id: row.get(0).unwrap(),
            text: row.get(1).unwrap(),
            context: row.get(2).unwrap(),
        });
    }
    out
}

/// A word as written, with its stem and whether it is a stop word.
struct Word {
    stem: String,
    stop: bool,
}

fn words(text: &str, stemmer: &Stemmer) -> Vec<Word> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(|w| {
            let lower: String = w.chars().flat_map(char::to_lowercase).collect();
            let folded: String = lower
                .nfkd()
                .filter(|c| !is_combining_mark(*c))
                .flat_map(char::to_lowercase)
                .collect();
            Word {
                stem: stemmer.stem(&folded).into_owned(),
                stop: nightshift::text::is_stop_word(&lower),
            }
        })
        .collect()
}

/// A chunk's count of each query term, in its text and in its context.
type Counts<'a> = HashMap<&'a str, (u32, u32)>;

/// Chunks as words, split and stemmed once for many queries.
pub struct Reference {
    stemmer: Stemmer,
    /// Per chunk: its id, its text's words and its context's.
    docs: Vec<(i64, Vec<Word>, Vec<Word>)>,
}

impl Reference {
    pub fn new(chunks: &[Chunk]) -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let docs = chunks
            .iter()
            .map(|c| (c.id, words(&c.text, &stemmer), words(&c.context, &stemmer)))
            .collect();
        Self { stemmer, docs }
    }

    /// The `k` best chunks for `query`, best first, with their scores; `None` when the
    /// query has no word.
    pub fn top(&self, query: &str, k: usize, context_weight: f64) -> Option<Vec<(i64, f64)>> {
        let query_words = words(query, &self.stemmer);
        let distinct = |stop: bool| {
            let mut kept: Vec<String> = Vec::new();
            for w in query_words.iter().filter(|w| w.stop == stop) {
                if !kept.contains(&w.stem) && kept.len() < MAX_QUERY_TERMS {
                    kept.push(w.stem.clone());
                }
            }
            kept
        };
        let content = distinct(false);
        let (stop_field, terms) = if !content.is_empty() {
            (false, content)
        } else {
            let stop = distinct(true);
            if stop.is_empty() {
                return None;
            }
            (true, stop)
        };

        // Per chunk: its length, and each query term's count in the text and the context.
        let mut docs: Vec<(i64, usize, Counts)> = Vec::new();
        for (id, text, context) in &self.docs {
            let mut counts: Counts = HashMap::new();
            let mut length = 0;
            for (in_context, source) in [(false, text), (true, context)] {
                for word in source {
                    length += 1;
                    if word.stop != stop_field {
                        continue;
                    }
                    if let Some(term) = terms.iter().find(|t| **t == word.stem) {
                        let entry = counts.entry(term.as_str()).or_default();
                        if in_context {
                            entry.1 += 1;
                        } else {
                            entry.0 += 1;
                        }
                    }
                }
            }
            // The index keeps a count in a byte and a length in 16 bits; the reference
            // does not model those caps, so a corpus must stay under them.
            assert!(
                length < usize::from(u16::MAX)
                    && counts.values().all(|(t, c)| *t < 255 && *c < 255),
                "chunk {id} is past the index's caps (255 of a word, 65,535 words): the \
                 reference does not model them"
            );
            docs.push((*id, length, counts));
        }

        let n = docs.len() as f64;
        let average = if docs.is_empty() {
            1.0
        } else {
            docs.iter().map(|d| d.1 as f64).sum::<f64>() / n
        };
        let idf: Vec<f64> = terms
            .iter()
            .map(|t| {
                let holding = docs.iter().filter(|d| d.2.contains_key(t.as_str())).count() as f64;
                let idf = ((n - holding + 0.5) / (holding + 0.5)).ln();
                if idf > 0.0 {
                    idf
                } else {
                    1e-6
                }
            })
            .collect();

        let mut scored: Vec<(i64, f64)> = Vec::new();
        for (id, length, counts) in &docs {
            if counts.is_empty() {
                continue;
            }
            let mut score = 0.0;
            for (i, term) in terms.iter().enumerate() {
                if let Some((text, context)) = counts.get(term.as_str()) {
                    let f = f64::from(*text) + context_weight * f64::from(*context);
                    let norm = K1 * (1.0 - B + B * *length as f64 / average);
                    score += (idf[i] * f * (K1 + 1.0) / (f + norm)).max(1e-12);
                }
            }
            scored.push((*id, score));
        }
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(b.0.cmp(&a.0)));
        scored.truncate(k);
        Some(scored)
    }
}

/// Fails unless `leg` ranks as the reference `want` does: the same chunks in the same
/// order, each score within a relative 1e-9 (the two add the same terms in the same
/// order, but nothing promises the same floating-point steps). Where reference scores
/// are that close, their chunks may come in any order among themselves.
pub fn assert_same_ranking(leg: &[(i64, f64)], want: &[(i64, f64)], what: &str) {
    assert_eq!(
        leg.len(),
        want.len(),
        "{what}: {} hits, the reference has {}\n leg {leg:?}\n ref {want:?}",
        leg.len(),
        want.len()
    );
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1e-12);
    // Group the reference by (nearly) equal scores; within a group any order.
    let mut groups: BTreeMap<usize, Vec<i64>> = BTreeMap::new();
    let mut group = 0;
    for (i, (id, score)) in want.iter().enumerate() {
        if i > 0 && !close(want[i - 1].1, *score) {
            group = i;
        }
        groups.entry(group).or_default().push(*id);
    }
    let mut at = 0;
    for ids in groups.values() {
        let slice = &leg[at..at + ids.len()];
        for ((id, score), (_, want_score)) in slice.iter().zip(&want[at..at + ids.len()]) {
            assert!(
                close(*score, *want_score),
                "{what}: chunk {id} scored {score}, the reference's place has {want_score}\n leg {leg:?}\n ref {want:?}"
            );
            assert!(
                ids.contains(id),
                "{what}: chunk {id} is ranked where the reference has {ids:?}\n leg {leg:?}\n ref {want:?}"
            );
        }
        at += ids.len();
    }
}
