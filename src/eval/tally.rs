//! Recall@k per question and per kind, and search latency, summed over the questions.

use std::collections::BTreeMap;

use serde::Serialize;

use super::EvalError;

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
    /// By the dev set's kind of question (LoCoMo's category number, or `fact`…).
    pub per_category: BTreeMap<String, CategoryScore>,
    /// Questions left out because no evidence id could be read.
    pub skipped: usize,
    /// Turns left out because the store refuses them (over `memory.max_text_bytes` with
    /// `oversize = "refuse"`); questions about them count as misses.
    pub refused_turns: usize,
    /// A question's search time, median and 95th percentile, in milliseconds.
    pub latency_ms_p50: f64,
    pub latency_ms_p95: f64,
}

/// One stage's sums over the questions asked so far.
#[derive(Default)]
pub(super) struct Tally {
    questions: usize,
    totals: BTreeMap<usize, f64>,
    per_category: BTreeMap<String, CategoryScore>,
    pub(super) latencies: Vec<f64>,
}

impl Tally {
    pub(super) fn add(
        &mut self,
        category: &str,
        evidence: &[String],
        found: &[&str],
        ks: &[usize],
    ) {
        self.questions += 1;
        let score = self.per_category.entry(category.to_string()).or_default();
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

    pub(super) fn report(
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
