//! The sentences of a user's chunk, each embedded on its own beside the whole chunk.
//!
//! A user's turn in a long chat is several topics at once ("Is a running toilet a DIY job?
//! … Also, I studied art history at Utrecht …"), and one vector of a 640-character chunk
//! of them carries none of its side remarks well: "what did I major in" finds the chunk
//! by no word, and by meaning only weakly. A vector of the one sentence carries it. The
//! chunk's stored vector row then holds the whole chunk's vector first and a vector for
//! each of its sentences after it (`embed::vectors_to_blob`), and the vector leg scores
//! the chunk by the best of them. Assistants' turns are not split: questions are about
//! what the user said, and an assistant's long answers would multiply the rows scanned.

/// Characters below which a sentence is joined to the next one ("Thanks.", "Hmm."): too
/// little to mean anything on its own.
const MIN_SENTENCE_CHARS: usize = 24;

/// The sentences of `text` to embed on their own, at most `most` (`memory.sentence_vectors`;
/// the rest of a chunk of many short lines is carried by the chunk's own vector); empty when
/// the text is one sentence (its chunk's vector is that sentence's already). A sentence
/// ends at `.`, `!` or `?` before whitespace, or at a line break; one shorter than
/// [`MIN_SENTENCE_CHARS`] is joined to the one after it.
pub(super) fn sentences(text: &str, most: usize) -> Vec<&str> {
    let mut found = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((i, c)) = chars.next() {
        let next = chars.peek().map(|(_, n)| *n);
        let ends =
            c == '\n' || (matches!(c, '.' | '!' | '?') && next.is_none_or(char::is_whitespace));
        if !ends {
            continue;
        }
        let end = i + c.len_utf8();
        let sentence = text[start..end].trim();
        if sentence.chars().count() >= MIN_SENTENCE_CHARS {
            found.push(sentence);
            start = end;
        } else if sentence.is_empty() {
            start = end;
        }
    }
    let rest = text[start..].trim();
    if !rest.is_empty() {
        match found.last_mut() {
            // A short tail belongs to the sentence before it.
            Some(last) if rest.chars().count() < MIN_SENTENCE_CHARS => {
                let from = last.as_ptr() as usize - text.as_ptr() as usize;
                *last = text[from..].trim();
            }
            _ => found.push(rest),
        }
    }
    if found.len() < 2 {
        return Vec::new();
    }
    found.truncate(most);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_turn_of_several_topics_is_its_sentences() {
        let turn = "Is a running toilet a DIY job or should I call someone?\n\nI have a drill. \
                    Also, I studied art history at Utrecht, so I'm fine with theory. Thanks!";
        assert_eq!(
            sentences(turn, 12),
            vec![
                "Is a running toilet a DIY job or should I call someone?",
                "I have a drill. Also, I studied art history at Utrecht, so I'm fine with theory. Thanks!"
            ]
        );
    }

    #[test]
    fn one_sentence_needs_no_vector_of_its_own() {
        assert!(sentences("My dog is called Biscuit.", 12).is_empty());
        assert!(sentences("", 12).is_empty());
        assert!(sentences("Hi. Ok. Yes.", 12).is_empty());
        // Two sentences; 0 turns it off.
        let two = "Hello there, my name is Ann. I live in Porto these days.";
        assert_eq!(sentences(two, 12).len(), 2);
        assert!(sentences(two, 0).is_empty());
    }

    #[test]
    fn decimals_and_versions_do_not_end_a_sentence() {
        assert_eq!(
            sentences(
                "Silicone needs 6.5 hours to cure, says the tube. I'm on version 3.11.7 of Python now.",
                12
            ),
            vec![
                "Silicone needs 6.5 hours to cure, says the tube.",
                "I'm on version 3.11.7 of Python now."
            ]
        );
    }

    /// Sentences built to be long enough come back exactly, in order, whatever ends them.
    #[test]
    fn known_sentences_come_back_whole() {
        let said = [
            "I moved to Porto in the spring of last year.",
            "My sister still lives in Utrecht with her two cats!",
            "Do you think the tram pass is worth it for me?",
            "Our landlady, Priya, has to approve anything drilled",
        ];
        for joiner in [" ", "\n", "  \n\n "] {
            assert_eq!(sentences(&said.join(joiner), 12), said, "{joiner:?}");
        }
        assert_eq!(sentences(&said.join(" "), 2), said[..2]);
    }

    proptest! {
        /// Whatever the text and cap: at most `most`, none empty, each a trimmed piece of
        /// the text, in order.
        #[test]
        fn sentences_are_ordered_pieces_of_the_text(
            text in "(\\PC|[.!? \n]){0,400}",
            most in 0usize..=64,
        ) {
            let found = sentences(&text, most);
            prop_assert!(found.len() <= most);
            // Each but a last that took a short tail is a whole sentence of its own.
            for sentence in &found {
                prop_assert!(sentence.chars().count() >= MIN_SENTENCE_CHARS);
            }
            // One alone is the chunk's own vector again, unless only one was allowed.
            prop_assert!(found.len() != 1 || most == 1);
            let mut from = 0;
            for sentence in &found {
                prop_assert!(!sentence.is_empty());
                prop_assert_eq!(sentence.trim(), *sentence);
                let at = text[from..].find(sentence).map(|i| i + from);
                prop_assert!(at.is_some(), "{:?} is not in the text after {}", sentence, from);
                from = at.unwrap() + sentence.len();
            }
        }
    }
}
