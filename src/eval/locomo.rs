//! LoCoMo retrieval recall (snap-research/LoCoMo format). Each conversation is ingested
//! through the real append path — one event per turn, the speaker's name in the text, the
//! session's date on the event — as its own user; each question of categories 1–4 is asked
//! through the real hybrid search scoped to that user and conversation, and scored by the
//! fraction of its evidence turns found in the top k.

use chrono::NaiveDateTime;
use serde_json::Value;

use super::{Conversation, EvalError, Question, Report};
use crate::memory::{Memory, NewEvent, Role};

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

/// The conversations of a LoCoMo file, each as the user `locomo-SAMPLE_ID`.
pub fn parse(text: &str) -> Result<Vec<Conversation>, EvalError> {
    let data: Value = serde_json::from_str(text).map_err(|e| EvalError::Json(e.to_string()))?;
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
            questions.push(Question {
                text: question.to_string(),
                kind: category.to_string(),
                evidence,
                asked_at: None,
            });
        }
        out.push(Conversation {
            user: format!("locomo-{id}"),
            turns,
            questions,
        });
    }
    Ok(out)
}

/// Runs the evaluation of a LoCoMo file on `memory` (use a scratch database) for each k
/// in `ks`.
pub async fn evaluate(memory: &Memory, json: &str, ks: &[usize]) -> Result<Report, EvalError> {
    super::evaluate(memory, &parse(json)?, ks).await
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
}
