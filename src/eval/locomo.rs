//! LoCoMo retrieval recall (snap-research/LoCoMo format). Each conversation is ingested
//! through the real append path — one event per turn, the speaker's name in the text, the
//! session's date on the event — as its own user; each question of categories 1–4 is asked
//! through the real hybrid search scoped to that user and conversation, and scored by the
//! fraction of its evidence turns found in the top k.

use std::collections::{BTreeMap, HashMap};

use chrono::NaiveDateTime;
use serde::Serialize;
use serde_json::Value;

use crate::config::Oversize;
use crate::memory::oversize::truncate_middle;
use crate::memory::{Memory, MemoryError, NewEvent, Role, SearchRequest};

#[derive(Debug, thiserror::Error)]
pub enum EvalError {
    #[error("the LoCoMo file is not valid JSON: {0}")]
    Json(String),
    #[error("the LoCoMo file is malformed: {0}")]
    Format(String),
    #[error("invalid k `{0}`: use numbers from 1 to the search limit, like 5,10")]
    BadK(String),
    #[error(transparent)]
    Memory(#[from] MemoryError),
}

impl crate::error::Kind for EvalError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            EvalError::Memory(err) => err.kind(),
            _ => crate::error::ErrorKind::BadInput,
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct CategoryScore {
    pub questions: usize,
    /// recall@k by k.
    pub recall: BTreeMap<usize, f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    pub conversations: usize,
    pub turns: usize,
    pub questions: usize,
    pub recall: BTreeMap<usize, f64>,
    pub per_category: BTreeMap<u64, CategoryScore>,
    /// Questions left out because no evidence id could be read.
    pub skipped: usize,
    /// Turns left out because the store refuses them (over `memory.max_text_bytes` with
    /// `oversize = "refuse"`); questions about them count as misses.
    pub refused_turns: usize,
    /// A question's search time, median and 95th percentile, in milliseconds.
    pub latency_ms_p50: f64,
    pub latency_ms_p95: f64,
}

/// Evidence ids as they should be: `D11:26`. Repairs `D:11:26`, splits `D8:6; D9:17`.
pub fn normalize_evidence(raw: &str) -> Vec<String> {
    raw.split([';', ',', ' '])
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .filter_map(|id| {
            let id = id.trim_start_matches('D').trim_start_matches(':');
            let (session, turn) = id.split_once(':')?;
            let (session, turn) = (
                session.trim().parse::<u32>().ok()?,
                turn.trim().parse::<u32>().ok()?,
            );
            Some(format!("D{session}:{turn}"))
        })
        .collect()
}

/// `1:56 pm on 8 May, 2023` as UTC milliseconds.
fn parse_date(text: &str) -> Option<i64> {
    let cleaned = text.trim().replace(" on ", " ").replace(',', "");
    ["%I:%M %p %d %B %Y", "%H:%M %d %B %Y"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(&cleaned, f).ok())
        .map(|t| t.and_utc().timestamp_millis())
}

struct Conversation {
    user: String,
    turns: Vec<(String, NewEvent)>,
    questions: Vec<(String, u64, Vec<String>)>,
}

fn parse(data: &Value) -> Result<Vec<Conversation>, EvalError> {
    let samples = data
        .as_array()
        .ok_or_else(|| EvalError::Format("expected a JSON array of conversations".into()))?;
    let mut out = Vec::new();
    for (n, sample) in samples.iter().enumerate() {
        let id = sample["sample_id"]
            .as_str()
            .map_or_else(|| format!("sample-{n}"), str::to_string);
        let conversation = sample["conversation"].as_object().ok_or_else(|| {
            EvalError::Format(format!("conversation {id}: missing `conversation`"))
        })?;
        let mut sessions: Vec<(u32, &Vec<Value>)> = conversation
            .iter()
            .filter_map(|(key, value)| {
                let number = key.strip_prefix("session_")?.parse::<u32>().ok()?;
                Some((number, value.as_array()?))
            })
            .collect();
        sessions.sort_by_key(|(number, _)| *number);
        if sessions.is_empty() {
            return Err(EvalError::Format(format!(
                "conversation {id}: no session_N turns"
            )));
        }
        let mut turns = Vec::new();
        for (number, session) in sessions {
            let date = conversation
                .get(&format!("session_{number}_date_time"))
                .and_then(Value::as_str)
                .and_then(parse_date);
            for turn in session {
                let (Some(speaker), Some(dia_id), Some(text)) = (
                    turn["speaker"].as_str(),
                    turn["dia_id"].as_str(),
                    turn["text"].as_str(),
                ) else {
                    return Err(EvalError::Format(format!(
                        "conversation {id}, session {number}: a turn lacks speaker, dia_id or text"
                    )));
                };
                let mut content = format!("{speaker}: {text}");
                if let Some(caption) = turn["blip_caption"].as_str() {
                    content.push_str(&format!(" [shares a photo: {caption}]"));
                }
                let mut event = NewEvent::new(Role::User, content).named(speaker);
                event.created_at = date;
                event.payload = Some(serde_json::json!({"dia_id": dia_id}));
                let ids = normalize_evidence(dia_id);
                turns.push((
                    ids.into_iter().next().unwrap_or_else(|| dia_id.to_string()),
                    event,
                ));
            }
        }
        let mut questions = Vec::new();
        for qa in sample["qa"]
            .as_array()
            .map(Vec::as_slice)
            .unwrap_or_default()
        {
            let (Some(question), Some(category)) =
                (qa["question"].as_str(), qa["category"].as_u64())
            else {
                continue;
            };
            if !(1..=4).contains(&category) {
                continue;
            }
            let evidence: Vec<String> = qa["evidence"]
                .as_array()
                .map(Vec::as_slice)
                .unwrap_or_default()
                .iter()
                .filter_map(Value::as_str)
                .flat_map(normalize_evidence)
                .collect();
            questions.push((question.to_string(), category, evidence));
        }
        out.push(Conversation {
            user: format!("locomo-{id}"),
            turns,
            questions,
        });
    }
    Ok(out)
}

/// Runs the evaluation on `memory` (use a scratch database) for each k in `ks`.
pub async fn evaluate(memory: &Memory, json: &str, ks: &[usize]) -> Result<Report, EvalError> {
    let stages = [(String::new(), memory.clone())];
    let mut reports = evaluate_stages(json, ks, &stages).await?;
    Ok(reports.remove(0).1)
}

/// Ingests the file once through the first store and asks every question of each named
/// store in turn (clones of one store with different search settings: see
/// [`Memory::with_search_config`]), so stages are compared on the same data in one run.
pub async fn evaluate_stages(
    json: &str,
    ks: &[usize],
    stages: &[(String, Memory)],
) -> Result<Vec<(String, Report)>, EvalError> {
    let data: Value = serde_json::from_str(json).map_err(|e| EvalError::Json(e.to_string()))?;
    let conversations = parse(&data)?;
    let Some((_, memory)) = stages.first() else {
        return Ok(Vec::new());
    };
    let max_k = ks.iter().copied().max().unwrap_or(10);
    let mut tallies: Vec<Tally> = stages.iter().map(|_| Tally::default()).collect();
    let (mut skipped, mut turns, mut refused) = (0, 0, 0);
    let limits = memory.limits();
    for conversation in &conversations {
        let session = conversation.user.clone();
        // A turn the store would refuse (over memory.max_text_bytes, and not one
        // `oversize = "truncate"` can cut) is counted and left out, so one huge turn does
        // not stop the run; the questions about it count as misses.
        let kept: Vec<&(String, NewEvent)> = conversation
            .turns
            .iter()
            .filter(|(_, event)| {
                event.content.len() <= limits.max_text_bytes
                    || (limits.oversize == Oversize::Truncate
                        && truncate_middle(&event.content, limits.max_text_bytes).is_some())
            })
            .collect();
        refused += conversation.turns.len() - kept.len();
        let events: Vec<NewEvent> = kept.iter().map(|(_, e)| e.clone()).collect();
        let sequences = if events.is_empty() {
            Vec::new()
        } else {
            memory.append(&conversation.user, &session, &events).await?
        };
        turns += events.len();
        // Ask once every turn has its vector, as a live store has within seconds.
        memory.embed_pending(&|_, _| {}).await?;
        let dia_by_sequence: HashMap<i64, &str> = sequences
            .iter()
            .zip(&kept)
            .map(|(seq, (dia, _))| (*seq, dia.as_str()))
            .collect();
        for (question, category, evidence) in &conversation.questions {
            if evidence.is_empty() {
                skipped += 1;
                continue;
            }
            let request = SearchRequest {
                user_id: conversation.user.clone(),
                query: question.clone(),
                top_k: Some(max_k),
                session_id: Some(session.clone()),
                tags: Vec::new(),
                ..Default::default()
            };
            for ((_, stage), tally) in stages.iter().zip(tallies.iter_mut()) {
                let started = std::time::Instant::now();
                let hits = stage.search(&request).await?;
                tally
                    .latencies
                    .push(started.elapsed().as_secs_f64() * 1000.0);
                let found: Vec<&str> = hits
                    .iter()
                    .filter_map(|h| h.sequence.and_then(|s| dia_by_sequence.get(&s).copied()))
                    .collect();
                tally.add(*category, evidence, &found, ks);
            }
        }
    }
    Ok(stages
        .iter()
        .zip(tallies)
        .map(|((name, _), tally)| {
            (
                name.clone(),
                tally.report(conversations.len(), turns, skipped, refused),
            )
        })
        .collect())
}

/// One stage's sums over the questions asked so far.
#[derive(Default)]
struct Tally {
    questions: usize,
    totals: BTreeMap<usize, f64>,
    per_category: BTreeMap<u64, CategoryScore>,
    latencies: Vec<f64>,
}

impl Tally {
    fn add(&mut self, category: u64, evidence: &[String], found: &[&str], ks: &[usize]) {
        self.questions += 1;
        let score = self.per_category.entry(category).or_default();
        score.questions += 1;
        for &k in ks {
            let top = &found[..k.min(found.len())];
            let recall = evidence
                .iter()
                .filter(|e| top.contains(&e.as_str()))
                .count() as f64
                / evidence.len() as f64;
            *self.totals.entry(k).or_default() += recall;
            *score.recall.entry(k).or_default() += recall;
        }
    }

    fn report(
        mut self,
        conversations: usize,
        turns: usize,
        skipped: usize,
        refused_turns: usize,
    ) -> Report {
        let average = |sums: &mut BTreeMap<usize, f64>, n: usize| {
            for value in sums.values_mut() {
                *value = if n == 0 {
                    0.0
                } else {
                    (*value / n as f64 * 1000.0).round() / 1000.0
                };
            }
        };
        average(&mut self.totals, self.questions);
        for score in self.per_category.values_mut() {
            let n = score.questions;
            average(&mut score.recall, n);
        }
        self.latencies.sort_by(f64::total_cmp);
        Report {
            conversations,
            turns,
            questions: self.questions,
            recall: self.totals,
            per_category: self.per_category,
            skipped,
            refused_turns,
            latency_ms_p50: percentile(&self.latencies, 0.50),
            latency_ms_p95: percentile(&self.latencies, 0.95),
        }
    }
}

/// The `q` quantile of sorted values (nearest rank), rounded to 0.1 ms; 0 when empty.
fn percentile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    (sorted[rank - 1] * 10.0).round() / 10.0
}

/// Reads `5,10`.
pub fn parse_ks(text: &str, max: usize) -> Result<Vec<usize>, EvalError> {
    let ks: Vec<usize> = text
        .split(',')
        .map(|k| {
            k.trim()
                .parse::<usize>()
                .ok()
                .filter(|k| (1..=max).contains(k))
        })
        .collect::<Option<_>>()
        .ok_or_else(|| EvalError::BadK(text.to_string()))?;
    if ks.is_empty() {
        return Err(EvalError::BadK(text.to_string()));
    }
    Ok(ks)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn malformed_evidence_ids_are_repaired() {
        assert_eq!(normalize_evidence("D1:3"), ["D1:3"]);
        assert_eq!(normalize_evidence("D:11:26"), ["D11:26"]);
        assert_eq!(normalize_evidence("D8:6; D9:17"), ["D8:6", "D9:17"]);
        assert!(normalize_evidence("nonsense").is_empty());
    }

    #[test]
    fn session_dates() {
        assert_eq!(
            parse_date("1:56 pm on 8 May, 2023"),
            Some(1_683_554_160_000)
        );
        assert_eq!(parse_date("not a date"), None);
    }

    #[test]
    fn percentiles_by_nearest_rank() {
        let values: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(percentile(&values, 0.5), 10.0);
        assert_eq!(percentile(&values, 0.95), 19.0);
        assert_eq!(percentile(&[], 0.5), 0.0);
    }

    #[test]
    fn ks() {
        assert_eq!(parse_ks("5,10", 20).unwrap(), [5, 10]);
        assert!(parse_ks("0", 20).is_err());
        assert!(parse_ks("5,x", 20).is_err());
        assert!(parse_ks("50", 20).is_err());
    }
}
