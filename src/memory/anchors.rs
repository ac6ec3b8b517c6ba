//! A time named by something the user said, not by a date: "which book was I reading
//! before I moved?", "what did I say about the garden after we got back from Lisbon?".
//! The query is split into the event ("I moved") and what is asked about it ("which book
//! was I reading?"). Search finds when the event was said by asking the conversation for
//! it, then asks the rest with everything said before (or after) that instant as the
//! query's time, as it does for "in March" ([`super::when`]). As with dates, the time is
//! a preference, never a filter: a misread event only costs order.
//!
//! Only an event told in the first person ("before I …", "after we …", "until my …")
//! is read as one: "before noon", "after dinner" and "before you answer" are not events
//! the user said, and "before or after" asks for an order ([`super::when::asks_for_order`]).
//! "Since" is left out: "since I like jazz" is a reason far more often than a time.

use super::when::TimeWindow;

/// Which side of the event the query asks about.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Before,
    After,
}

/// A query read as something asked about the time before or after an event the user said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Anchor {
    pub side: Side,
    /// The event as the query tells it ("I moved to Leeds"): searched for to learn when.
    pub event: String,
    /// The query without its cue and event ("which book was I reading?"): what is asked.
    pub topic: String,
}

/// The words that put a query's time on one side of an event.
const CUES: [(&str, Side); 4] = [
    ("before", Side::Before),
    ("until", Side::Before),
    ("till", Side::Before),
    ("after", Side::After),
];

/// The first word of an event the user said ("I'd" is "I" here: words are letters and
/// digits).
const SUBJECTS: [&str; 4] = ["i", "we", "my", "our"];

/// Characters that end the event's clause ("before I moved, what did I …").
const CLAUSE_ENDS: [char; 9] = [',', '.', ';', ':', '?', '!', '(', ')', '\n'];

/// The most words an event runs to: a longer one is a sentence, not a time.
const MAX_EVENT_WORDS: usize = 12;

/// The first event `query` names a time by, with what it asks about it; `None` when it
/// names none.
pub fn anchor(query: &str) -> Option<Anchor> {
    let words = words_of(query);
    let word = |n: usize| &query[words[n].0..words[n].1];
    let is_cue = |n: usize| cue(word(n)).is_some();
    for (i, &(cue_start, cue_end)) in words.iter().enumerate() {
        let Some(side) = cue(word(i)) else {
            continue;
        };
        let Some(&(event_start, subject_end)) = words.get(i + 1) else {
            continue;
        };
        let subject = &query[event_start..subject_end];
        if !SUBJECTS.iter().any(|s| subject.eq_ignore_ascii_case(s))
            || !query[cue_end..event_start].chars().all(char::is_whitespace)
            || (i > 0 && word(i - 1).eq_ignore_ascii_case("or"))
        {
            continue;
        }
        // The event runs to the end of its clause, the next cue or its longest.
        let mut event_end = subject_end;
        let mut told = false;
        for n in i + 2..words.len().min(i + 1 + MAX_EVENT_WORDS) {
            if query[event_end..words[n].0].contains(CLAUSE_ENDS) || is_cue(n) {
                break;
            }
            event_end = words[n].1;
            // "I'd" is two words, "I" and "d": an event says more than its subject.
            told |= word(n).chars().nth(1).is_some();
        }
        if !told {
            continue;
        }
        let head = query[..cue_start].trim_end();
        // "Before I moved, which book …": the clause's comma goes with it.
        let tail = query[event_end..].trim_start_matches(|c: char| {
            c.is_whitespace() || (head.is_empty() && CLAUSE_ENDS.contains(&c) && c != '(')
        });
        let space = !head.is_empty() && tail.starts_with(char::is_alphanumeric);
        let topic = format!("{head}{}{tail}", if space { " " } else { "" });
        // "What did I say before I moved?" asks about nothing but the event.
        if !topic.chars().any(char::is_alphanumeric) {
            continue;
        }
        return Some(Anchor {
            side,
            event: query[event_start..event_end].to_string(),
            topic,
        });
    }
    None
}

/// The window on `side` of an event said at `event_at`, for a query asked at `asked_at`
/// (UTC ms): before it from the start of time, or after it until the query was asked;
/// `None` when that is empty.
pub fn window(side: Side, event_at: i64, asked_at: i64) -> Option<TimeWindow> {
    let window = match side {
        Side::Before => TimeWindow {
            since: 0,
            until: event_at,
        },
        Side::After => TimeWindow {
            since: event_at.checked_add(1)?,
            until: asked_at.checked_add(1)?,
        },
    };
    (window.since < window.until).then_some(window)
}

/// Whether `text` names a time by `event` itself ("… before I moved?"): the question
/// being asked, appended to the conversation before it is searched, or asked before.
/// Such a turn is not where the event was told.
pub fn asks_by(text: &str, event: &str) -> bool {
    let squeezed = |t: &str| {
        t.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_lowercase()
    };
    let (text, event) = (squeezed(text), squeezed(event));
    CUES.iter()
        .any(|(cue, _)| text.contains(&format!("{cue} {event}")))
}

fn cue(word: &str) -> Option<Side> {
    CUES.iter()
        .find(|(cue, _)| word.eq_ignore_ascii_case(cue))
        .map(|(_, side)| *side)
}

/// The byte ranges of `text`'s words: runs of letters and digits.
fn words_of(text: &str) -> Vec<(usize, usize)> {
    let mut words = Vec::new();
    let mut start = None;
    for (at, c) in text.char_indices() {
        match (c.is_alphanumeric(), start) {
            (true, None) => start = Some(at),
            (false, Some(s)) => {
                words.push((s, at));
                start = None;
            }
            _ => {}
        }
    }
    if let Some(s) = start {
        words.push((s, text.len()));
    }
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn read(query: &str) -> Option<(Side, String, String)> {
        anchor(query).map(|a| (a.side, a.event, a.topic))
    }

    fn some(side: Side, event: &str, topic: &str) -> Option<(Side, String, String)> {
        Some((side, event.to_string(), topic.to_string()))
    }

    #[test]
    fn events_the_user_said_are_read_with_what_is_asked() {
        assert_eq!(
            read("Which book was I reading before I moved?"),
            some(Side::Before, "I moved", "Which book was I reading?")
        );
        assert_eq!(
            read("Before we moved to Leeds, what did I say about the garden?"),
            some(
                Side::Before,
                "we moved to Leeds",
                "what did I say about the garden?"
            )
        );
        assert_eq!(
            read("what was I watching AFTER my knee operation"),
            some(Side::After, "my knee operation", "what was I watching")
        );
        assert_eq!(
            read("What did I cook until I'd started the new job and after?"),
            some(
                Side::Before,
                "I'd started the new job and",
                "What did I cook after?"
            )
        );
        assert_eq!(
            read("What did I say after I got back before we left?"),
            some(Side::After, "I got back", "What did I say before we left?")
        );
    }

    #[test]
    fn other_befores_and_afters_are_not_events() {
        for query in [
            "what do I do before noon?",
            "what should you check before you answer?",
            "did I move before or after I changed jobs?",
            "what happens after",
            "before. I moved",
            "since I moved, what have I read?",
            "beforehand I moved",
            "what did I read before I, um, moved?",
            "before I'd",
            "before I moved?",
            "",
        ] {
            assert_eq!(read(query), None, "{query:?}");
        }
    }

    #[test]
    fn a_later_cue_is_read_when_the_first_tells_nothing() {
        assert_eq!(
            read("before I, um, moved: which book after we got back?"),
            some(
                Side::After,
                "we got back",
                "before I, um, moved: which book?"
            )
        );
    }

    #[test]
    fn a_turn_asking_by_the_event_is_told_apart_from_one_telling_it() {
        assert!(asks_by(
            "Quick one. Which book was I reading BEFORE  I\nmoved?",
            "I moved"
        ));
        assert!(asks_by("until I moved to Leeds", "I moved"));
        assert!(!asks_by("We finally moved into the new flat.", "I moved"));
        assert!(!asks_by("I moved the meeting before lunch", "I moved"));
    }

    #[test]
    fn an_event_runs_to_its_longest() {
        let long = format!("what before I {}end", "ab ".repeat(40));
        let read = anchor(&long).unwrap();
        assert_eq!(read.event.split(' ').count(), MAX_EVENT_WORDS);
        assert!(read.topic.ends_with("ab end"), "{read:?}");
    }

    #[test]
    fn windows_are_either_side_of_the_event() {
        assert_eq!(
            window(Side::Before, 100, 500),
            Some(TimeWindow {
                since: 0,
                until: 100
            })
        );
        assert_eq!(
            window(Side::After, 100, 500),
            Some(TimeWindow {
                since: 101,
                until: 501
            })
        );
        assert_eq!(window(Side::Before, 0, 500), None);
        assert_eq!(window(Side::After, 500, 500), None);
        assert_eq!(window(Side::After, 600, 500), None);
        assert_eq!(window(Side::After, i64::MAX, i64::MAX), None);
    }

    proptest! {
        /// Any text reads as no event, or as an event told in the first person that is a
        /// piece of the query, after a cue, with a topic made of the rest.
        #[test]
        fn any_query_reads_as_no_event_or_one_of_its_pieces(
            query in "(?i)((before|after|until|till|or|i|we|my|our|moved|x)[ ,.?\n]{1,2}|.{0,3}){0,12}",
        ) {
            if let Some(read) = anchor(&query) {
                prop_assert!(query.contains(&read.event));
                let first = read.event.split(|c: char| !c.is_alphanumeric()).next().unwrap();
                prop_assert!(SUBJECTS.iter().any(|s| first.eq_ignore_ascii_case(s)), "{read:?}");
                prop_assert!(words_of(&read.event).len() <= MAX_EVENT_WORDS);
                prop_assert!(read.topic.len() < query.len());
                prop_assert!(!read.event.contains(CLAUSE_ENDS), "{read:?}");
            }
        }

        /// Whatever the instants, a window is none or non-empty, and on its side.
        #[test]
        fn any_instants_give_no_window_or_one_on_its_side(
            event_at in any::<i64>(),
            asked_at in any::<i64>(),
            before in any::<bool>(),
        ) {
            let side = if before { Side::Before } else { Side::After };
            if let Some(w) = window(side, event_at, asked_at) {
                prop_assert!(w.since < w.until);
                prop_assert!(!w.contains(event_at));
                match side {
                    Side::Before => prop_assert!(w.until == event_at),
                    Side::After => prop_assert!(w.since > event_at && w.contains(asked_at)),
                }
            }
        }
    }
}
