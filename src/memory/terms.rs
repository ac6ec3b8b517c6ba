//! The keyword index's words: how a chunk's text and a query become the same terms. A
//! word is a run of letters and digits ([`text::words`]), folded to lower case, with its
//! diacritics and compatibility forms removed ("Café" finds "cafe", "ﬁnance" "finance")
//! and stemmed (Snowball English: "plans" finds
//! "planning"). A chunk's words are indexed in two fields: its stop words apart from the
//! rest. A query holding any word but stop words looks up those words alone (stop words
//! match nearly every chunk and weigh almost nothing); only a query of stop words alone
//! ("to be or not to be") looks up the stop words, whose index is loaded for it. A term is
//! kept as a 64-bit FNV-1a hash of its stem: stable across processes and releases (stored
//! blocks hold them), and two stems sharing a hash among a user's hundred thousand words
//! is a one-in-a-billion event that would only merge their counts.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use rust_stemmers::{Algorithm, Stemmer};
use unicode_normalization::char::is_combining_mark;
use unicode_normalization::UnicodeNormalization;

use crate::text;

/// Terms kept from one query, as for FTS5 queries: longer ones gain little and cost a lot.
const MAX_QUERY_TERMS: usize = 32;

/// Which of a chunk's words an index holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(super) enum Field {
    /// Every word but stop words.
    Words,
    /// The stop words.
    StopWords,
}

impl Field {
    /// The field as stored blocks name it.
    pub(super) fn stored(self) -> i64 {
        match self {
            Self::Words => 0,
            Self::StopWords => 1,
        }
    }
}

/// A chunk as one field's index holds it: each term of the field with how often it
/// occurs in the text and in the context, and the words of both (every word, whatever
/// the field), as bm25 weighs length.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct DocTerms {
    pub terms: Vec<(u64, [u8; 2])>,
    pub length: u16,
}

/// Turns texts into terms, remembering each word it has seen (word frequencies are
/// skewed, so most words are looked up instead of stemmed again).
pub(super) struct Terms {
    stemmer: Stemmer,
    seen: HashMap<String, Term, BuildHasherDefault<Fnv>>,
    word: String,
}

/// FNV-1a as the words' map hasher: words are short, and SipHash's strength against
/// chosen keys is not needed for a map that is cleared past a size.
#[derive(Default)]
struct Fnv(u64);

impl Hasher for Fnv {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        let start = if self.0 == 0 { FNV_OFFSET } else { self.0 };
        self.0 = bytes.iter().fold(start, |hash, byte| {
            (hash ^ u64::from(*byte)).wrapping_mul(FNV_PRIME)
        });
    }
}

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// Distinct words remembered before the memory is cleared.
const MAX_SEEN: usize = 200_000;

impl Default for Terms {
    fn default() -> Self {
        Self {
            stemmer: Stemmer::create(Algorithm::English),
            seen: HashMap::default(),
            word: String::new(),
        }
    }
}

/// A word's term, and whether the word is a stop word.
#[derive(Debug, Clone, Copy)]
struct Term {
    hash: u64,
    stop: bool,
}

impl Terms {
    /// The term of one word as typed.
    fn term(&mut self, word: &str) -> Term {
        self.word.clear();
        if word.is_ascii() {
            self.word.push_str(word);
            self.word.make_ascii_lowercase();
        } else {
            self.word.extend(word.chars().flat_map(char::to_lowercase));
        }
        if let Some(term) = self.seen.get(self.word.as_str()) {
            return *term;
        }
        // Compatibility forms too: "ﬁ" is "fi", "Ｆ" is "F", "𝔘" is "U" (then lower case
        // again, as those have no lower case of their own).
        let folded: String = if self.word.is_ascii() {
            self.word.clone()
        } else {
            self.word
                .nfkd()
                .filter(|c| !is_combining_mark(*c))
                .flat_map(char::to_lowercase)
                .collect()
        };
        let term = Term {
            hash: term_hash(&self.stemmer.stem(&folded)),
            stop: text::is_stop_word(&self.word),
        };
        if self.seen.len() >= MAX_SEEN {
            self.seen.clear();
        }
        self.seen.insert(self.word.clone(), term);
        term
    }

    /// A chunk's terms in `field`: its text's and its context's, counted apart.
    pub(super) fn doc(&mut self, text: &str, context: &str, field: Field) -> DocTerms {
        let stop = field == Field::StopWords;
        let mut found: Vec<(u64, usize)> = Vec::new();
        let mut length: usize = 0;
        for (column, source) in [text, context].into_iter().enumerate() {
            for word in text::words(source) {
                length += 1;
                let term = self.term(word);
                if term.stop == stop {
                    found.push((term.hash, column));
                }
            }
        }
        found.sort_unstable();
        let mut terms: Vec<(u64, [u8; 2])> = Vec::with_capacity(found.len());
        for (term, column) in found {
            if terms.last().is_none_or(|(last, _)| *last != term) {
                terms.push((term, [0, 0]));
            }
            if let Some((_, freq)) = terms.last_mut() {
                freq[column] = freq[column].saturating_add(1);
            }
        }
        DocTerms {
            terms,
            length: u16::try_from(length).unwrap_or(u16::MAX),
        }
    }

    /// A query's distinct terms and the field they are looked up in: its words but stop
    /// words, or its stop words when it has no other word; `None` when it has no word.
    pub(super) fn query(&mut self, query: &str) -> Option<(Field, Vec<u64>)> {
        let (mut content, mut stop) = (Vec::new(), Vec::new());
        for word in text::words(query) {
            let term = self.term(word);
            let kept = if term.stop { &mut stop } else { &mut content };
            if kept.len() < MAX_QUERY_TERMS && !kept.contains(&term.hash) {
                kept.push(term.hash);
            }
            if content.len() == MAX_QUERY_TERMS {
                break;
            }
        }
        if !content.is_empty() {
            Some((Field::Words, content))
        } else if !stop.is_empty() {
            Some((Field::StopWords, stop))
        } else {
            None
        }
    }
}

/// FNV-1a, 64 bits: fixed by its definition, so stored terms stay valid.
fn term_hash(stem: &str) -> u64 {
    stem.bytes().fold(FNV_OFFSET, |hash, byte| {
        (hash ^ u64::from(byte)).wrapping_mul(FNV_PRIME)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn case_diacritics_and_inflection_meet_in_one_term() {
        let mut terms = Terms::default();
        let doc = terms.doc("The Café was PLANNING plans", "", Field::Words);
        let (field, query) = terms.query("the cafe planned?").unwrap();
        assert_eq!(field, Field::Words);
        assert_eq!(doc.length, 5);
        // "the" and "was" are stop words: counted in the length, in the other field.
        assert_eq!(doc.terms.len(), 2, "{doc:?}");
        assert_eq!(query.len(), 2, "the query's stop word is left out");
        for term in &query {
            assert!(doc.terms.iter().any(|(t, _)| t == term));
        }
        let plan = terms.query("plan").unwrap().1[0];
        let (_, freq) = doc.terms.iter().find(|(t, _)| *t == plan).unwrap();
        assert_eq!(*freq, [2, 0], "planning and plans, both in the text");
        for (typed, stored) in [
            ("finance", "ﬁnance"),
            ("unicode", "𝔘𝔫𝔦𝔠𝔬𝔡𝔢"),
            ("abc", "ＡＢＣ"),
        ] {
            assert_eq!(terms.query(typed), terms.query(stored), "{stored}");
        }
        // A query of stop words alone looks them up, in their own field.
        let stop_doc = terms.doc("The Café was PLANNING plans", "", Field::StopWords);
        assert_eq!(stop_doc.length, 5);
        let (field, stop) = terms.query("The was? the").unwrap();
        assert_eq!(field, Field::StopWords);
        assert_eq!(stop.len(), 2);
        assert_eq!(stop_doc.terms.len(), 2);
        for term in &stop {
            assert!(stop_doc.terms.iter().any(|(t, _)| t == term));
        }
        assert_eq!(terms.query(" ?! ** "), None);
    }

    #[test]
    fn the_hash_is_the_published_fnv1a() {
        // Stored blocks depend on these values never changing.
        assert_eq!(term_hash(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(term_hash("a"), 0xaf63_dc4c_8601_ec8c);
    }

    /// Stored blocks hold terms made by this stemmer, stop-word list and folding: a
    /// change to any of them must come with a new `keywords::FORMAT`, and this test is
    /// what notices it.
    #[test]
    fn the_terms_of_stored_blocks_do_not_change() {
        let mut terms = Terms::default();
        let (_, got) = terms
            .query("Running cafés generously, the organizations' 42")
            .unwrap();
        let want: Vec<u64> = ["run", "cafe", "generous", "organ", "42"]
            .iter()
            .map(|stem| term_hash(stem))
            .collect();
        assert_eq!(got, want);
        let (_, stop) = terms.query("To be, or to BE").unwrap();
        let want: Vec<u64> = ["to", "be", "or"]
            .iter()
            .map(|stem| term_hash(stem))
            .collect();
        assert_eq!(stop, want);
    }

    #[test]
    fn counts_saturate_instead_of_wrapping() {
        let mut terms = Terms::default();
        let text = "tea ".repeat(300);
        let doc = terms.doc(&text, &text, Field::Words);
        assert_eq!(doc.terms[0].1, [u8::MAX, u8::MAX]);
        assert_eq!(doc.length, 600);
    }

    proptest! {
        /// Any text, NUL and every plane of Unicode included, gives terms without
        /// panicking; the same text always gives the same terms; a query of a text's
        /// words finds terms the text holds in the field the query looks in.
        #[test]
        fn any_text_gives_the_same_terms_every_time(text in "\\PC*", context in any::<String>()) {
            let mut terms = Terms::default();
            for field in [Field::Words, Field::StopWords] {
                let once = terms.doc(&text, &context, field);
                let again = Terms::default().doc(&text, &context, field);
                prop_assert_eq!(&once, &again);
            }
            if let Some((field, query)) = terms.query(&text) {
                let doc = terms.doc(&text, &context, field);
                for term in query {
                    prop_assert!(doc.terms.iter().any(|(t, f)| *t == term && f[0] > 0));
                }
            }
        }
    }
}
