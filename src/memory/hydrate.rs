//! Reading search's best candidates whole: the notes (still current, visible to the
//! agent, matching the filters) and the events (inside the window; none when a note
//! filter is set) behind them, as hits.

use std::collections::HashMap;

use super::fusion::{LegScores, Target};
use super::in_list::{of_user, placeholders};
use super::{EventWindow, HitSource, Memory, NoteFilter, Result, SearchHit, SessionKey};

impl Memory {
    /// Reads the whole notes and events behind the best chunks.
    pub(super) async fn hydrate(
        &self,
        conn: &crate::db::Conn,
        user_id: &str,
        (targets, legs): (&HashMap<Target, f64>, &HashMap<Target, LegScores>),
        filter: &NoteFilter,
        window: &EventWindow,
    ) -> Result<Vec<SearchHit>> {
        let now = self.clock.now_ms();
        let mut hits = Vec::with_capacity(targets.len());
        let note_ids: Vec<&String> = targets
            .keys()
            .filter_map(|t| match t {
                Target::Note(id) => Some(id),
                Target::Event(..) => None,
            })
            .collect();
        if !note_ids.is_empty() {
            let mut params: Vec<libsql::Value> = vec![user_id.into(), now.into()];
            params.extend(note_ids.iter().map(|id| libsql::Value::from(id.as_str())));
            params.push(self.agent().into());
            let (conditions, values) = filter.sql(4 + note_ids.len());
            params.extend(values);
            let notes: Vec<super::Note> =
                crate::db::fetch_all(conn, &notes_sql(note_ids.len(), &conditions), params).await?;
            for note in notes {
                if !filter.tags_match(&note.tags) {
                    continue;
                }
                let target = Target::Note(note.note_id.clone());
                let leg = legs.get(&target).copied().unwrap_or_default();
                hits.push(SearchHit {
                    keyword_score: leg.keyword,
                    vector_score: leg.vector,
                    text: note.content,
                    score: targets[&target],
                    source: HitSource::Note,
                    note_id: Some(note.note_id),
                    tags: Some(note.tags),
                    session_id: None,
                    sequence: None,
                    role: None,
                    name: None,
                    at: note.updated_at,
                });
            }
        }
        if !filter.is_empty() {
            return Ok(hits);
        }
        let mut by_session: HashMap<&str, Vec<i64>> = HashMap::new();
        for target in targets.keys() {
            if let Target::Event(session_id, sequence) = target {
                by_session.entry(session_id).or_default().push(*sequence);
            }
        }
        for (session_id, sequences) in by_session {
            let mut params: Vec<libsql::Value> = vec![session_id.into(), user_id.into()];
            params.extend(sequences.iter().map(|s| libsql::Value::from(*s)));
            let (window_sql, values) = window.sql("e.created_at", 3 + sequences.len());
            params.extend(values);
            let mut rows = conn
                .query(&events_sql(sequences.len(), &window_sql), params)
                .await?;
            while let Some(row) = rows.next().await? {
                let sequence: i64 = row.get(0)?;
                let role: String = row.get(2)?;
                let target = Target::Event(session_id.to_string(), sequence);
                let leg = legs.get(&target).copied().unwrap_or_default();
                hits.push(SearchHit {
                    keyword_score: leg.keyword,
                    vector_score: leg.vector,
                    text: row.get(1)?,
                    score: targets[&target],
                    source: HitSource::Conversation,
                    note_id: None,
                    tags: None,
                    session_id: Some(SessionKey::id_of(session_id).to_string()),
                    sequence: Some(sequence),
                    role: Some(role.parse()?),
                    name: row.get(4)?,
                    at: row.get(3)?,
                });
            }
        }
        Ok(hits)
    }
}

/// Reads `count` notes by id (`?3`…) for user `?1` at `?2` (now), as the agent named by
/// the parameter after the ids, with a filter's `conditions` after that.
pub(super) fn notes_sql(count: usize, conditions: &str) -> String {
    format!(
        "SELECT {} FROM notes
         WHERE {} AND (expires_at IS NULL OR expires_at > ?2)
           AND superseded_by IS NULL AND note_id IN ({}) AND {}{conditions}",
        <super::Note as crate::db::FromRow>::COLUMNS,
        of_user("user_id"),
        placeholders(3, count),
        super::agents::visible(&format!("?{}", 3 + count)),
    )
}

/// Reads `count` events by sequence (`?3`…) of session `?1`, if it is user `?2`'s, with
/// a window's SQL after them.
pub(super) fn events_sql(count: usize, window_sql: &str) -> String {
    format!(
        "SELECT e.sequence, e.content, e.role, e.created_at, e.name FROM events e
         JOIN sessions s ON s.session_id = e.session_id
         WHERE e.session_id = ?1 AND s.user_id = ?2 AND e.sequence IN ({}){window_sql}",
        placeholders(3, count)
    )
}
