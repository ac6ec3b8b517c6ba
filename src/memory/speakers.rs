//! The speaker cue: a query that names someone ("what did Ann say about the trip") is
//! most often answered by that person's own turns, not by the turns that mention them.
//! Both kinds match the name as a keyword; an event's `name` (who said it) tells them
//! apart. On the LoCoMo dev set 97% of the evidence of a question naming one speaker is
//! that speaker's own turns.
//!
//! The first person names the user the same way: "what did I say about the move", "what
//! is my dog called" are answered by the user's turns, not by the assistant's answers that
//! repeat them (often longer and the better keyword match). No name is needed: the role
//! tells them apart.

use std::collections::HashSet;

use super::hits::SearchHit;
use crate::text::{is_stop_word, tokens};

/// Whether every word of `name` is a word of the query. A name without a word ("!!") or
/// of stop words alone ("I", "The Who") is never named: nearly every query holds them.
fn named(name: &str, query_words: &HashSet<String>) -> bool {
    let name_words: Vec<String> = tokens(name).collect();
    name_words.iter().any(|w| !is_stop_word(w))
        && name_words.iter().all(|w| query_words.contains(w))
}

/// Multiplies the score of each hit said by a speaker `query` names by `1 + weight`, then
/// sorts best first (ties: the newer first). Returns whether any hit was preferred.
pub(super) fn prefer_named_speakers(query: &str, hits: &mut [SearchHit], weight: f64) -> bool {
    if weight <= 0.0 || hits.iter().all(|h| h.name.is_none()) {
        return false;
    }
    let query_words: HashSet<String> = tokens(query).collect();
    let mut preferred = false;
    for hit in hits.iter_mut() {
        if hit.name.as_deref().is_some_and(|n| named(n, &query_words)) {
            hit.score *= 1.0 + weight;
            preferred = true;
        }
    }
    if preferred {
        hits.sort_by(SearchHit::best_first);
    }
    preferred
}

/// Words by which a query speaks of its user.
const FIRST_PERSON: [&str; 9] = ["i", "me", "my", "mine", "myself", "we", "us", "our", "ours"];

/// Whether `query` speaks of its user ("what is my dog called", "what did I say"): its
/// answers are then the user's own turns more than the assistant's (search divides an
/// assistant's turn's score by `1 + search.speaker_weight`).
pub(super) fn in_the_first_person(query: &str) -> bool {
    tokens(query).any(|w| FIRST_PERSON.contains(&w.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memory::HitSource;
    use proptest::prelude::*;

    fn hit(text: &str, name: Option<&str>, score: f64) -> SearchHit {
        SearchHit {
            keyword_score: None,
            vector_score: None,
            text: text.into(),
            score,
            source: HitSource::Conversation,
            note_id: None,
            tags: None,
            session_id: Some("s".into()),
            sequence: Some(1),
            role: None,
            name: name.map(str::to_string),
            at: 0,
        }
    }

    #[test]
    fn the_named_speakers_turns_come_first() {
        let mut hits = vec![
            hit("Ann, how was the trip?", Some("Bob"), 1.0),
            hit("The trip was long.", Some("Ann"), 0.6),
            hit("a note", None, 0.9),
        ];
        assert!(prefer_named_speakers(
            "What did ANN say about the trip?",
            &mut hits,
            1.0
        ));
        assert_eq!(hits[0].name.as_deref(), Some("Ann"));
        assert_eq!(hits[0].score, 1.2);
        assert_eq!(hits[1].score, 1.0);
    }

    #[test]
    fn every_word_of_a_name_must_be_named() {
        let query: HashSet<String> = tokens("what did Mary say to The Who").collect();
        assert!(named("Mary", &query));
        assert!(!named("Mary Ann", &query));
        assert!(named("mary", &query));
        assert!(!named("!!", &query));
        assert!(!named("", &query));
        // Words, not substrings.
        assert!(!named("Ma", &query));
        // Stop words alone never name anyone.
        assert!(!named("The Who", &query));
        assert!(!named("I", &query));
    }

    #[test]
    fn first_person_queries_speak_of_the_user() {
        for query in [
            "What is MY dog called?",
            "what did I say",
            "where do we live",
            "tell me",
        ] {
            assert!(in_the_first_person(query), "{query}");
        }
        // "mine" inside a word is not "mine"; "you" is not the user.
        for query in [
            "What is the dog called?",
            "minefield",
            "what did you suggest",
            "",
        ] {
            assert!(!in_the_first_person(query), "{query}");
        }
    }

    #[test]
    fn nothing_changes_without_names_or_weight() {
        let mut hits = vec![hit("b", None, 0.5), hit("a", None, 1.0)];
        assert!(!prefer_named_speakers("b", &mut hits, 1.0));
        assert_eq!(hits[0].text, "b");
        let mut hits = vec![hit("b", Some("Ann"), 0.5), hit("a", None, 1.0)];
        assert!(!prefer_named_speakers("Ann", &mut hits, 0.0));
        assert_eq!(hits[0].score, 0.5);
    }

    proptest! {
        /// Any query and names: never a panic, scores only grow, and hits given best first
        /// come back best first.
        #[test]
        fn any_query_and_names(
            query in any::<String>(),
            names in proptest::collection::vec(proptest::option::of(any::<String>()), 0..8),
            weight in 0.0f64..=10.0,
        ) {
            let mut hits: Vec<SearchHit> = names
                .iter()
                .enumerate()
                .map(|(i, n)| hit("t", n.as_deref(), (names.len() - i) as f64))
                .collect();
            let mut before: Vec<f64> = hits.iter().map(|h| h.score).collect();
            before.sort_by(f64::total_cmp);
            prefer_named_speakers(&query, &mut hits, weight);
            let mut after: Vec<f64> = hits.iter().map(|h| h.score).collect();
            prop_assert!(after.windows(2).all(|w| w[0] >= w[1]));
            after.sort_by(f64::total_cmp);
            for (old, new) in before.iter().zip(&after) {
                prop_assert!(*new >= *old);
            }
        }
    }
}
