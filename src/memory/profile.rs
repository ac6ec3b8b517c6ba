//! A user's profile: the standing facts the `facts` pass keeps about them (who they are,
//! what they prefer, their habits, what they decided, other facts), as the current notes
//! with one of its categories. A changed fact is superseded in place (its old version kept in the
//! note's history), so the profile is always the facts as they stand. Context assembly
//! offers it first, within a share of the budget: an agent should know who it talks to
//! before what was said. Each fact comes with the latest turns it was said in.

use super::agents::visible;
use super::{check_id, Memory, Note, Result};
use crate::db::{fetch_all, FromRow};
use crate::fact_category::CATEGORIES;

/// Profile facts read at most (the context takes what fits of them).
pub const PROFILE_FACTS: usize = 50;

/// The order categories are offered in: who the user is first, then how they asked to be
/// answered and what they want; any other (`fact`) last.
const ORDER: [&str; 5] = ["profile", "instruction", "preference", "habit", "decision"];

/// [`ORDER`] as an SQL expression over `category`.
fn category_order() -> String {
    let whens: String = ORDER
        .iter()
        .enumerate()
        .map(|(rank, c)| format!("WHEN '{c}' THEN {rank} "))
        .collect();
    format!("CASE category {whens}ELSE {} END", ORDER.len())
}

/// One standing fact of a user's profile.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileFact {
    pub note_id: String,
    pub text: String,
    pub category: String,
    /// The latest turns it was said in, latest first: none for a note saved by hand that
    /// the facts pass never found said, nor once its text was changed by hand.
    pub evidence: Vec<super::FactEvidence>,
}

impl Memory {
    /// The user's profile as the handle's agent sees it: their current, unexpired notes
    /// with a category, by category (profile, instruction, preference, habit, decision,
    /// fact) and then
    /// most recently changed first; at most `limit`. With `as_of` (UTC ms), the profile as
    /// it stood then: the categorised versions valid at that instant.
    pub async fn profile(
        &self,
        user_id: &str,
        limit: usize,
        as_of: Option<i64>,
    ) -> Result<Vec<ProfileFact>> {
        check_id("user id", user_id)?;
        if let Some(at) = as_of {
            let mut facts: Vec<ProfileFact> = self
                .notes_as_of(user_id, at)
                .await?
                .into_iter()
                .filter(|v| is_fact_category(v.category.as_deref()))
                .filter_map(|v| {
                    Some(ProfileFact {
                        category: v.category?,
                        note_id: v.note_id,
                        text: v.content,
                        evidence: Vec::new(),
                    })
                })
                .collect();
            // Stable: within a category, most recently changed first, as read.
            facts.sort_by_key(|f| rank(&f.category));
            facts.truncate(limit);
            return self.with_evidence(user_id, facts, Some(at)).await;
        }
        let now = self.clock.now_ms();
        // The vocabulary is the code's own (no quote in it): written into the statement.
        let categories = CATEGORIES.map(|c| format!("'{c}'")).join(", ");
        let conn = self.db.conn().await?;
        let notes: Vec<Note> = fetch_all(
            &conn,
            &format!(
                "SELECT {} FROM notes
                 WHERE user_id = ?1 AND superseded_by IS NULL AND category IN ({categories})
                   AND (expires_at IS NULL OR expires_at > ?2) AND {}
                 ORDER BY {}, updated_at DESC, note_id LIMIT ?4",
                Note::COLUMNS,
                visible("?3"),
                category_order()
            ),
            libsql::params![user_id, now, self.agent(), limit as i64],
        )
        .await?;
        let facts = notes
            .into_iter()
            .filter_map(|n| {
                Some(ProfileFact {
                    category: n.category?,
                    note_id: n.note_id,
                    text: n.content,
                    evidence: Vec::new(),
                })
            })
            .collect();
        self.with_evidence(user_id, facts, None).await
    }

    /// `facts`, each with the turns it was said in (as of `as_of`: those said by then).
    async fn with_evidence(
        &self,
        user_id: &str,
        mut facts: Vec<ProfileFact>,
        as_of: Option<i64>,
    ) -> Result<Vec<ProfileFact>> {
        let note_ids: Vec<String> = facts.iter().map(|f| f.note_id.clone()).collect();
        let mut evidence = self.evidence_of(user_id, &note_ids, as_of).await?;
        for fact in &mut facts {
            fact.evidence = evidence.remove(&fact.note_id).unwrap_or_default();
        }
        Ok(facts)
    }
}

/// Whether `category` is one of the facts pass's (a user may file notes under others).
fn is_fact_category(category: Option<&str>) -> bool {
    category.is_some_and(|c| CATEGORIES.contains(&c))
}

/// A category's place in the profile's order (see [`ORDER`]).
fn rank(category: &str) -> usize {
    ORDER
        .iter()
        .position(|c| *c == category)
        .unwrap_or(ORDER.len())
}
