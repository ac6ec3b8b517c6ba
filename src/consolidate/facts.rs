//! Pattern-based fact extraction (seed 003's preferences, decisions and habits, plus a
//! few profile facts), and the similarity test that tells two facts apart.

use crate::text;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// preference, instruction, decision, habit or profile.
    pub category: &'static str,
    /// What the fact is about: a changed fact with the same key supersedes the old one.
    pub key: String,
    /// The sentence it was said in, tidied.
    pub content: String,
}

/// Longest fact kept, in characters.
const MAX_FACT_CHARS: usize = 500;

/// (category, phrase, key from the words after it; `None`: the topic words).
const PATTERNS: &[(&str, &str, Option<&str>)] = &[
    ("profile", "my name is", Some("name")),
    ("profile", "call me", Some("name")),
    ("profile", "i live in", Some("home")),
    ("profile", "i moved to", Some("home")),
    ("profile", "i work at", Some("employer")),
    ("profile", "i work for", Some("employer")),
    ("profile", "i work as", Some("job")),
    ("profile", "my birthday is", Some("birthday")),
    ("preference", "my favorite", None),
    ("preference", "my favourite", None),
    ("preference", "i prefer", None),
    ("preference", "i really like", None),
    ("preference", "i love", None),
    ("preference", "i like", None),
    ("preference", "i hate", None),
    ("preference", "i dislike", None),
    ("preference", "i don't like", None),
    ("preference", "i do not like", None),
    ("preference", "i'm allergic to", None),
    ("preference", "i am allergic to", None),
    ("decision", "i'll use", None),
    ("decision", "i will use", None),
    ("decision", "i chose", None),
    ("decision", "i went with", None),
    ("decision", "i'm going to use", None),
    ("decision", "i'm going to adopt", None),
    ("decision", "i decided to", None),
    ("decision", "we decided to", None),
    ("decision", "we'll use", None),
    ("decision", "we will use", None),
    // How the user asks to be answered, standing until changed. Only phrasings that say
    // it stands: "I'd like you to summarise this" asks for one thing, once.
    ("instruction", "from now on", None),
    ("instruction", "going forward", None),
    ("instruction", "please always", None),
    ("instruction", "please never", None),
    ("habit", "i usually", None),
    ("habit", "i always", None),
    ("habit", "i tend to", None),
    ("habit", "i never", None),
    ("habit", "every morning i", None),
    ("habit", "every day i", None),
];

/// The topic of a fact: its first two content words, without numbers, so "I usually wake
/// up at 7" and "I usually wake up at 6" share a key.
fn topic(rest: &str) -> String {
    let words: Vec<String> = text::tokens(rest)
        .filter(|w| !text::is_stop_word(w) && !w.chars().any(|c| c.is_ascii_digit()))
        .take(2)
        .collect();
    words.join(" ")
}

/// A lower-cased copy of a text (with `’` read as `'`), and where each of its bytes came
/// from in the original: lower-casing can change a character's length (`İ` becomes two
/// characters), so an offset found in the copy is never used on the original directly.
struct Folded {
    lower: String,
    /// For each byte of `lower`: where the original character that produced it starts,
    /// and where it ends.
    starts: Vec<usize>,
    ends: Vec<usize>,
}

impl Folded {
    fn new(text: &str) -> Self {
        let mut lower = String::with_capacity(text.len());
        let mut starts = Vec::with_capacity(text.len());
        let mut ends = Vec::with_capacity(text.len());
        for (at, c) in text.char_indices() {
            let before = lower.len();
            if c == '’' {
                lower.push('\'');
            } else {
                lower.extend(c.to_lowercase());
            }
            for _ in before..lower.len() {
                starts.push(at);
                ends.push(at + c.len_utf8());
            }
        }
        Self {
            lower,
            starts,
            ends,
        }
    }

    /// The range of the original covering `lower[start..end]`: whole characters.
    fn original(&self, start: usize, end: usize) -> std::ops::Range<usize> {
        if start >= end {
            let at = self
                .starts
                .get(start)
                .copied()
                .unwrap_or_else(|| self.ends.last().copied().unwrap_or(0));
            return at..at;
        }
        self.starts[start]..self.ends[end - 1]
    }
}

/// Facts stated in `input` (a user's or tool's words — never the assistant's), each in the
/// speaker's own words: phrases are found in a lower-cased copy, and the fact is cut from
/// the original text.
pub fn extract(input: &str) -> Vec<Fact> {
    let mut facts: Vec<Fact> = Vec::new();
    for raw in input.split_inclusive(['.', '!', '?', '\n', ';']) {
        // Questions about facts are not facts ("do I like jazz?").
        if raw.trim_end().ends_with('?') {
            continue;
        }
        let sentence = text::normalize_whitespace(raw.trim_end_matches(['.', '!', '\n', ';']));
        if sentence.len() < 6 {
            continue;
        }
        let folded = Folded::new(&sentence);
        let lower = folded.lower.as_str();
        let first = lower.split(' ').next().unwrap_or_default();
        if matches!(
            first,
            "do" | "does"
                | "did"
                | "what"
                | "how"
                | "why"
                | "when"
                | "where"
                | "should"
                | "can"
                | "could"
                | "would"
                | "is"
                | "are"
                | "if"
        ) {
            continue;
        }
        // Every pattern found, in order; each fact runs to the next one ("I live in Porto
        // and I usually cycle" is two facts).
        let mut found: Vec<(usize, usize)> = Vec::new();
        for (index, (_, phrase, _)) in PATTERNS.iter().enumerate() {
            let mut from = 0;
            while let Some(at) = find_phrase(&lower[from..], phrase).map(|i| i + from) {
                if LEADING.contains(phrase) && !leads(lower, at, phrase) {
                    from = at + phrase.len();
                    continue;
                }
                if !found
                    .iter()
                    .any(|(a, i)| *a <= at && at < *a + PATTERNS[*i].1.len())
                {
                    found.push((at, index));
                }
                from = at + phrase.len();
            }
        }
        found.sort();
        for (n, (at, index)) in found.iter().enumerate() {
            let (category, phrase, fixed_key) = PATTERNS[*index];
            let end = found.get(n + 1).map_or(lower.len(), |(next, _)| *next);
            let rest = trim_clause(&lower[at + phrase.len()..end]);
            let subject = topic(rest);
            if subject.is_empty() {
                continue;
            }
            let key = match fixed_key {
                Some(k) => format!("{category}:{k}"),
                None => {
                    // "my favorite color is blue": the key is the thing, not the value.
                    let thing = if phrase.starts_with("my favo") {
                        rest.split(" is ")
                            .next()
                            .map(topic)
                            .unwrap_or(subject.clone())
                    } else if category == "instruction" {
                        // What to do, not how: "reply in French" changes "reply in
                        // Spanish".
                        subject.split(' ').next().unwrap_or_default().to_string()
                    } else {
                        subject.clone()
                    };
                    format!("{category}:{thing}")
                }
            };
            let clause = trim_clause(&sentence[folded.original(*at, end)]);
            let content = capitalize(crate::text::truncate_chars(clause, MAX_FACT_CHARS));
            if !content.is_empty() && !facts.iter().any(|f| f.key == key && f.content == content) {
                facts.push(Fact {
                    category,
                    key,
                    content,
                });
            }
        }
    }
    facts
}

/// The text with its first character upper-cased (all of it, for a character whose
/// upper case is several).
fn capitalize(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
    }
}

/// A clause without the joining words and punctuation that led to the next one (in any
/// case: the original text is trimmed as well as the lower-cased one).
fn trim_clause(clause: &str) -> &str {
    let mut clause = clause.trim();
    loop {
        let mut trimmed = clause.trim_end_matches([',', ':', '-']).trim_end();
        for joint in [" and", " but", " so"] {
            let cut = trimmed.len().saturating_sub(joint.len());
            if trimmed.is_char_boundary(cut) && trimmed[cut..].eq_ignore_ascii_case(joint) {
                trimmed = trimmed[..cut].trim_end();
            }
        }
        if trimmed.len() == clause.len() {
            return trimmed;
        }
        clause = trimmed;
    }
}

/// Phrases that make an instruction only where they lead their sentence, or follow a
/// comma ("ok, from now on …"): "we're going forward, so …" is no instruction.
const LEADING: [&str; 2] = ["from now on", "going forward"];

/// Whether the leading phrase at `at` of the lower-cased `sentence` leads it, and is
/// followed by the instruction ("going forward" by a comma: "going forward with the
/// merger" is a story).
fn leads(sentence: &str, at: usize, phrase: &str) -> bool {
    let before = sentence[..at].trim_end();
    let after = &sentence[at + phrase.len()..];
    let comma_after = after.starts_with(',');
    // Only a short lead-in may come first: "ok, from now on", "please from now on".
    let lead_in = before.trim_end_matches([',', ':']).trim_end();
    let led = before.is_empty()
        || before.ends_with(',')
        || before.ends_with(':')
        || LEAD_INS.contains(&lead_in);
    led && (comma_after || (phrase == "from now on" && after.starts_with(' ')))
}

/// Words that may come before a leading phrase, alone.
const LEAD_INS: [&str; 8] = ["please", "so", "and", "ok", "okay", "also", "note", "but"];

/// The phrase as whole words at the start of a clause.
fn find_phrase(sentence: &str, phrase: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = sentence[from..].find(phrase) {
        let at = from + i;
        let before_ok = at == 0 || sentence[..at].ends_with(' ');
        let end = at + phrase.len();
        // A comma may follow a leading phrase ("from now on, reply in …"), and only
        // those: "don't call me, I'll call you" names no one.
        let after_ok = sentence[end..].starts_with(' ')
            || (LEADING.contains(&phrase) && sentence[end..].starts_with(','));
        if before_ok && after_ok {
            return Some(at);
        }
        from = end;
    }
    None
}

/// Jaccard similarity of two texts' word sets.
pub fn token_jaccard(a: &str, b: &str) -> f64 {
    let a: std::collections::HashSet<String> = text::tokens(a).collect();
    let b: std::collections::HashSet<String> = text::tokens(b).collect();
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    a.intersection(&b).count() as f64 / a.union(&b).count() as f64
}

pub fn cosine(a: &[f32], b: &[f32]) -> f64 {
    a.iter()
        .zip(b)
        .map(|(x, y)| (*x as f64) * (*y as f64))
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(text: &str) -> Vec<(String, String)> {
        extract(text)
            .into_iter()
            .map(|f| (f.category.to_string(), f.key))
            .collect()
    }

    #[test]
    fn phrasings_become_facts() {
        let cases = [
            (
                "I prefer green tea in the morning.",
                "preference",
                "preference:green tea",
            ),
            (
                "Honestly, I really like jazz records",
                "preference",
                "preference:jazz records",
            ),
            (
                "My favorite color is blue!",
                "preference",
                "preference:color",
            ),
            (
                "my favourite colour is teal",
                "preference",
                "preference:colour",
            ),
            ("I hate cilantro", "preference", "preference:cilantro"),
            (
                "I'm allergic to peanuts",
                "preference",
                "preference:peanuts",
            ),
            (
                "We decided to use Postgres for billing",
                "decision",
                "decision:use postgres",
            ),
            (
                "I went with the blue theme",
                "decision",
                "decision:blue theme",
            ),
            ("I usually wake up at 6", "habit", "habit:wake"),
            ("I always run on Sundays", "habit", "habit:run sundays"),
            ("My name is Shantanu", "profile", "profile:name"),
            ("Please call me SG from now on", "profile", "profile:name"),
            ("I live in Lisbon", "profile", "profile:home"),
            ("I work at Acme as a plumber", "profile", "profile:employer"),
            (
                "From now on, reply in Spanish",
                "instruction",
                "instruction:reply",
            ),
            (
                "Please always answer in metric units",
                "instruction",
                "instruction:answer",
            ),
            (
                "Ok, going forward, keep answers under 100 words",
                "instruction",
                "instruction:keep",
            ),
            (
                "Please from now on answer in French",
                "instruction",
                "instruction:answer",
            ),
            (
                "Please never use emoji in replies",
                "instruction",
                "instruction:use",
            ),
        ];
        for (text, category, key) in cases {
            assert_eq!(
                keys(text),
                [(category.to_string(), key.to_string())],
                "{text}"
            );
        }
    }

    #[test]
    fn non_facts_are_ignored() {
        for text in [
            "What's the weather?",
            "The likelihood is low",
            "Unlike you, nothing",
            "ok",
            "I like",
            "do I like jazz?",
            "Do I like jazz",
            // Asked once, or a story: no standing instruction.
            "I want you to know that I'm moving",
            "I'd like you to summarize this PDF",
            "Please don't forget the milk",
            "Going forward with the merger was a mistake",
            "We're going forward, so the call is at 5",
            "Don't call me, I'll call you",
        ] {
            assert!(extract(text).is_empty(), "{text}");
        }
    }

    #[test]
    fn several_facts_in_one_message() {
        let facts = extract("My name is Ana. I live in Porto and I usually cycle to work.");
        assert_eq!(facts.len(), 3);
    }

    /// Text whose bytes change length when lower-cased gives its facts as written.
    #[test]
    fn facts_keep_the_original_text_whatever_its_case() {
        let facts = extract("Yes I’m sure I live in İstanbul near İzmir");
        assert_eq!(facts.len(), 1, "{facts:?}");
        assert_eq!(facts[0].content, "I live in İstanbul near İzmir");
        let facts = extract("I’m in café. I live in İstanbul near İzmir");
        assert_eq!(facts[0].content, "I live in İstanbul near İzmir");
        let facts = extract("MY NAME IS ΣΟΦΊΑ AND I LIVE IN ΑΘΉΝΑ");
        assert_eq!(facts.len(), 2, "{facts:?}");
        assert_eq!(facts[0].content, "MY NAME IS ΣΟΦΊΑ");
        assert_eq!(facts[1].content, "I LIVE IN ΑΘΉΝΑ");
    }

    proptest::proptest! {
        /// Any Unicode text: no panic, and every fact is a piece of the text as written.
        #[test]
        fn any_text_gives_facts_from_its_own_words(text in proptest::prelude::any::<String>()) {
            let written = text::normalize_whitespace(&text);
            for fact in extract(&text) {
                let mut tail = fact.content.chars();
                tail.next();
                proptest::prop_assert!(written.contains(tail.as_str()), "{:?} not in {:?}", fact.content, text);
            }
        }

        /// Sentences built from the patterns with any words around them.
        #[test]
        fn patterns_amid_any_words(
            before in "\\PC{0,20}",
            after in "\\PC{0,40}",
            phrase in proptest::sample::select(PATTERNS.iter().map(|p| p.1).collect::<Vec<_>>()),
        ) {
            let text = format!("{before} {} {after}", phrase.to_uppercase());
            let _ = extract(&text);
        }
    }

    #[test]
    fn similarity() {
        assert!(token_jaccard("I prefer green tea", "i prefer GREEN tea!") > 0.99);
        assert!(token_jaccard("I prefer green tea", "I prefer black coffee") < 0.5);
    }
}

pub use crate::usage::ModelUsage;

/// The facts in a text, and what finding them cost.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Extracted {
    pub facts: Vec<Fact>,
    pub usage: ModelUsage,
}

/// Where facts come from: patterns, or the model when one is configured.
#[async_trait::async_trait]
pub trait FactExtractor: Send + Sync {
    /// The facts in `text`, following the operator's `instructions` where the extractor
    /// can (a model can; patterns cannot); an error when this text cannot be read for
    /// facts (it is retried by later passes, then skipped and reported).
    async fn extract(&self, text: &str, instructions: Option<&str>) -> Result<Extracted, String>;
}

/// The pattern extractor, with a fault inside it reported as an error for this one text
/// rather than taking the pass (and every pass after it) down.
fn extract_guarded(text: &str) -> Result<Vec<Fact>, String> {
    std::panic::catch_unwind(|| extract(text)).map_err(|panic| {
        let reason = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown".into());
        format!("fact extraction failed on this text: {reason}")
    })
}

/// The pattern extractor above.
pub struct PatternExtractor;

#[async_trait::async_trait]
impl FactExtractor for PatternExtractor {
    async fn extract(&self, text: &str, _instructions: Option<&str>) -> Result<Extracted, String> {
        Ok(Extracted {
            facts: extract_guarded(text)?,
            usage: ModelUsage::default(),
        })
    }
}

/// Asks an OpenAI-compatible model for the facts as JSON; falls back to the patterns when
/// the model fails or answers something unreadable.
pub struct ModelExtractor {
    pub runtime: crate::runtime::OpenAiRuntime,
}

pub use crate::fact_category::CATEGORIES;

/// Reads `[{"category", "key", "content"}, …]` out of a model's answer.
pub fn parse_model_facts(answer: &str) -> Option<Vec<Fact>> {
    let start = answer.find('[')?;
    let end = answer.rfind(']')?;
    let items: Vec<serde_json::Value> = serde_json::from_str(answer.get(start..=end)?).ok()?;
    let mut facts = Vec::new();
    for item in items {
        let content = text::normalize_whitespace(item["content"].as_str()?);
        if content.is_empty() {
            continue;
        }
        let category = item["category"]
            .as_str()
            .map(str::to_lowercase)
            .and_then(|c| CATEGORIES.iter().find(|k| **k == c).copied())
            .unwrap_or("fact");
        let subject = item["key"]
            .as_str()
            .map(topic)
            .filter(|k| !k.is_empty())
            .unwrap_or_else(|| topic(&content));
        facts.push(Fact {
            category,
            key: format!("{category}:{subject}"),
            content: crate::text::truncate_chars(&content, MAX_FACT_CHARS).to_string(),
        });
    }
    Some(facts)
}

#[async_trait::async_trait]
impl FactExtractor for ModelExtractor {
    async fn extract(&self, input: &str, instructions: Option<&str>) -> Result<Extracted, String> {
        let steer = instructions
            .map(|text| format!("Instructions from the operator:\n{text}\n\n"))
            .unwrap_or_default();
        let prompt = format!(
            "Extract lasting facts the speaker states about themselves (preferences, decisions, \
             habits, profile facts such as name, home, job) and standing instructions on how to \
             answer them. Answer with JSON only: an array of {{\"category\": \
             \"preference|instruction|decision|habit|profile\", \"key\": \"the subject in 1-3 \
             words\", \"content\": \"the fact as one short sentence\"}}, or [] when there are none.\n\n\
             {steer}Message:\n{}",
            crate::text::truncate_chars(input, 8000)
        );
        let mut usage = ModelUsage::default();
        match self
            .runtime
            .complete_with_usage("You extract facts and answer with JSON only.", &prompt)
            .await
        {
            Ok(answer) => {
                usage = ModelUsage {
                    prompt_tokens: answer.prompt_tokens,
                    completion_tokens: answer.completion_tokens,
                    cost: answer.cost,
                };
                match parse_model_facts(&answer.text) {
                    Some(facts) => return Ok(Extracted { facts, usage }),
                    None => {
                        tracing::warn!("the model's facts were not readable JSON; using patterns")
                    }
                }
            }
            Err(err) => tracing::warn!(%err, "fact extraction by the model failed; using patterns"),
        }
        Ok(Extracted {
            facts: extract_guarded(input)?,
            usage,
        })
    }
}

#[cfg(test)]
mod model_tests {
    use super::*;

    #[test]
    fn model_answers_are_read_defensively() {
        let facts = parse_model_facts(
            "Sure! [{\"category\": \"Preference\", \"key\": \"Tea\", \"content\": \"Likes  green tea\"}, \
             {\"category\": \"weird\", \"content\": \"Has two cats\"}, {\"content\": \"\"}]",
        )
        .unwrap();
        assert_eq!(facts.len(), 2);
        assert_eq!(
            (
                facts[0].category,
                facts[0].key.as_str(),
                facts[0].content.as_str()
            ),
            ("preference", "preference:tea", "Likes green tea")
        );
        assert_eq!(facts[1].category, "fact");
        assert!(parse_model_facts("no json here").is_none());
    }
}
