//! Deterministic, language-shaped text for the benchmarks.
#![allow(dead_code)]

pub mod claims;

/// The keyword leg's reference, shared with the tests.
#[path = "../../tests/common/bm25_reference.rs"]
pub mod bm25_reference;

/// The `p` quantile (0..=1) of sorted durations, in milliseconds.
pub fn percentile(sorted: &[std::time::Duration], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i].as_secs_f64() * 1000.0
}

/// CPU time a process has used (user + system), from /proc: `"self"` for this one.
pub fn cpu_time(pid: &str) -> std::time::Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let fields: Vec<&str> = stat
        .rsplit(')')
        .next()
        .unwrap_or("")
        .split_whitespace()
        .collect();
    let ticks: u64 = fields.get(11).and_then(|v| v.parse().ok()).unwrap_or(0)
        + fields.get(12).and_then(|v| v.parse().ok()).unwrap_or(0);
    std::time::Duration::from_millis(ticks * 10)
}

/// A small deterministic generator (xorshift), so every run builds the same data.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in [0, 1).
    pub fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }
}

/// Text that is shaped like language: words drawn from a Zipf (s = 1) distribution over
/// about 14,000 words whose most frequent ranks are English function words, as in real
/// text. Queries are content words drawn from the same distribution.
pub struct Language {
    words: Vec<String>,
    cumulative: Vec<f64>,
    function_words: usize,
}

impl Language {
    pub fn new() -> Self {
        let function = [
            "the", "of", "and", "to", "a", "in", "is", "it", "you", "that", "he", "was", "for",
            "on", "are", "with", "as", "i", "his", "they", "be", "at", "one", "have", "this",
            "from", "or", "had", "by", "but", "what", "some", "we", "can", "out", "other", "were",
            "all", "there", "when", "up", "your", "how", "said", "an", "each", "she", "which",
            "do", "their", "if", "will", "way", "about", "many", "then", "them", "would", "so",
            "these", "her", "him", "has", "more", "could", "my", "than", "been", "who", "its",
            "now", "did", "get", "may", "just", "very", "our", "me", "should",
        ];
        let syllables = [
            "ka", "lo", "mi", "ren", "to", "sha", "vin", "el", "dor", "pa", "qui", "sto", "ber",
            "an", "ux",
        ];
        let mut words: Vec<String> = function.iter().map(|w| w.to_string()).collect();
        for a in syllables {
            for b in syllables {
                words.push(format!("{a}{b}"));
            }
        }
        for a in syllables {
            for b in syllables {
                for c in syllables {
                    for suffix in ["", "s", "er", "ing"] {
                        words.push(format!("{a}{b}{c}{suffix}"));
                    }
                }
            }
        }
        let mut cumulative = Vec::with_capacity(words.len());
        let mut total = 0.0;
        for rank in 1..=words.len() {
            total += 1.0 / rank as f64;
            cumulative.push(total);
        }
        Self {
            words,
            cumulative,
            function_words: function.len(),
        }
    }

    pub fn word(&self, rng: &mut Rng, from_rank: usize) -> &str {
        let low = self.cumulative[from_rank.saturating_sub(1)] * (from_rank > 0) as u8 as f64;
        let high = *self.cumulative.last().unwrap();
        let target = low + rng.unit() * (high - low);
        let i = self.cumulative.partition_point(|c| *c < target);
        &self.words[i.min(self.words.len() - 1)]
    }

    /// Words to about `chars` characters. With `NIGHTSHIFT_BENCH_SENTENCE_WORDS=N` every
    /// Nth word ends a sentence, so that a user's chunk is also embedded sentence by
    /// sentence (`memory.sentence_vectors`); by default the text has no sentence end and
    /// each chunk is one vector row.
    pub fn sentence(&self, rng: &mut Rng, chars: usize) -> String {
        let every = std::env::var("NIGHTSHIFT_BENCH_SENTENCE_WORDS")
            .ok()
            .and_then(|n| n.parse::<usize>().ok())
            .filter(|n| *n > 0);
        let mut out = String::new();
        let mut words = 0;
        while out.len() < chars {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(self.word(rng, 0));
            words += 1;
            if every.is_some_and(|n| words % n == 0) {
                out.push('.');
            }
        }
        out
    }

    /// A query of three content words.
    pub fn query(&self, rng: &mut Rng) -> String {
        (0..3)
            .map(|_| self.word(rng, self.function_words))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// The ids of the `k` chunks of `session` most similar to `query` (positive similarity
/// only; a chunk scored by the best of its stored vectors, its own and its sentences'),
/// by a scan of every row done here from scratch: the reference a vector index is checked
/// against.
pub async fn exact_vector_top(
    memory: &nightshift::memory::Memory,
    session: &nightshift::memory::SessionKey,
    query: &str,
    k: usize,
) -> Vec<i64> {
    let q = memory.embedder().embed(&[query]).unwrap().pop().unwrap();
    let conn = memory.db().conn().await.unwrap();
    let mut rows = conn
        .query(
            "SELECT chunk_id, embedding FROM chunk_vectors WHERE session_id = ?1",
            [session.as_str()],
        )
        .await
        .unwrap();
    let mut scored = Vec::new();
    while let Some(row) = rows.next().await.unwrap() {
        let blob = row.get::<Vec<u8>>(1).unwrap();
        let s = nightshift::embed::blob_to_vectors(&blob, q.len())
            .unwrap()
            .iter()
            .map(|v| v.iter().zip(&q).map(|(a, b)| a * b).sum::<f32>())
            .fold(f32::MIN, f32::max);
        scored.push((row.get::<i64>(0).unwrap(), s));
    }
    scored.sort_by(|a, b| b.1.total_cmp(&a.1));
    scored
        .into_iter()
        .filter(|(_, s)| *s > 0.0)
        .take(k)
        .map(|(id, _)| id)
        .collect()
}

/// Appends `texts` from `callers` concurrent callers (each its own user and conversation,
/// `user-N` / `user-N-live`), one event per call; returns events per second.
pub async fn concurrent_appends(
    memory: &nightshift::memory::Memory,
    texts: &[String],
    callers: usize,
) -> f64 {
    use nightshift::memory::{NewEvent, Role};
    let start = std::time::Instant::now();
    let mut tasks = Vec::new();
    for (caller, share) in texts.chunks(texts.len().div_ceil(callers)).enumerate() {
        let memory = memory.clone();
        let share = share.to_vec();
        tasks.push(tokio::spawn(async move {
            let (user, session) = (format!("user-{caller}"), format!("user-{caller}-live"));
            for text in share {
                memory
                    .append(&user, &session, &[NewEvent::new(Role::User, text)])
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    texts.len() as f64 / start.elapsed().as_secs_f64()
}
