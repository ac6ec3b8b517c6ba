//! Hybrid search over a user's notes and, optionally, one of their conversations: a
//! keyword leg (bm25 over the keyword index, [`super::keywords`]) and a vector leg (exact
//! below [`super::codes::COARSE_ROWS`] vector rows a session), each min-max
//! normalised and fused by weight, ties broken by recency. Hits are whole notes and whole
//! events, never fragments.

use std::collections::{HashMap, HashSet};

use super::fusion::{
    candidates_by_leg, fuse, spread_to_neighbours, targets_of, Source, Target, CHUNKS_PER_CANDIDATE,
};
use super::terms::Terms;
use super::when::TimeWindow;
use super::{
    check_id, keywords, vectors, HitSource, Memory, MemoryError, Result, SearchHit, SearchRequest,
    SearchResults, SessionKey,
};

/// How many times as many chunks a leg reads again when the first read was crowded.
const DEEPER: usize = 8;

/// The most chunks that deeper read takes (a configuration of many candidates would
/// otherwise make it millions).
const MAX_DEEPER: usize = 20_000;

/// Whether a leg's `hits`, a full read of `pool` chunks, came from fewer than
/// `candidates` notes and events.
fn crowded<S>(
    hits: &[(i64, S)],
    pool: usize,
    sources: &HashMap<i64, Source>,
    candidates: usize,
) -> bool {
    if hits.len() < pool {
        return false;
    }
    let targets: std::collections::HashSet<&Target> = hits
        .iter()
        .filter_map(|(id, _)| sources.get(id).map(|s| &s.target))
        .collect();
    targets.len() < candidates
}

/// Reads where the chunks of `hits` that are not in `sources` yet came from.
async fn map_new<S>(
    conn: &crate::db::Conn,
    user_id: &str,
    sessions: &[String],
    hits: &[(i64, S)],
    sources: &mut HashMap<i64, Source>,
) -> Result<()> {
    let new: Vec<i64> = hits
        .iter()
        .map(|(id, _)| *id)
        .filter(|id| !sources.contains_key(id))
        .collect();
    sources.extend(targets_of(conn, user_id, sessions, &new).await?);
    Ok(())
}

/// How many hits the search for a query's event reads to find its best turn among notes.
const EVENT_HITS: usize = 5;

/// How many more candidates each leg fetches when a filter may drop some of them.
const FILTERED_CANDIDATES: usize = 4;

impl Memory {
    /// The best notes and events for the request, best first.
    pub async fn search(&self, request: &SearchRequest) -> Result<Vec<SearchHit>> {
        Ok(self.search_detailed(request).await?.hits)
    }

    /// As [`Memory::search`], also saying whether the vector leg was left out.
    pub async fn search_detailed(&self, request: &SearchRequest) -> Result<SearchResults> {
        let started = std::time::Instant::now();
        let mut results = self.search_checked(request, false).await;
        crate::telemetry::search(started.elapsed());
        // The best hits of an order question, told oldest first (ties by their rank).
        // Here, for whoever reads them, not below: context assembly fills its budget
        // best first.
        if let Ok(found) = &mut results {
            if super::when::asks_for_order(&request.query) {
                found.hits.sort_by_key(|hit| hit.at);
            }
        }
        results
    }

    /// A search whose `session_id`, when `session_owned`, the caller has already found to
    /// be the user's (context assembly: one read fewer a run), in its span (`memory.search`:
    /// how many hits, whether a leg was left out; never the query).
    pub(super) async fn search_checked(
        &self,
        request: &SearchRequest,
        session_owned: bool,
    ) -> Result<SearchResults> {
        use opentelemetry::context::FutureExt as _;
        let span = crate::traces::SpanScope::start(
            "memory.search",
            opentelemetry::trace::SpanKind::Internal,
            vec![opentelemetry::KeyValue::new(
                "nightshift.search.as_of",
                request.as_of.is_some(),
            )],
        );
        let results = self
            .search_unspanned(request, session_owned)
            .with_context(span.context().clone())
            .await;
        match &results {
            Ok(results) => {
                span.set("nightshift.search.hits", results.hits.len() as i64);
                span.set("nightshift.search.degraded", results.degraded.is_some());
            }
            Err(err) => span.fail("search", err.to_string()),
        }
        span.end();
        results
    }

    async fn search_unspanned(
        &self,
        request: &SearchRequest,
        session_owned: bool,
    ) -> Result<SearchResults> {
        let user_id = request.user_id.as_str();
        check_id("user id", user_id)?;
        crate::input::check_text(
            "query",
            &request.query,
            crate::input::MAX_QUERY_BYTES,
            crate::input::Lines::Many,
        )?;
        let mut filter = request.filter.clone();
        filter.tags.extend(request.tags.iter().cloned());
        filter.check()?;
        request.window.check()?;
        if let Some(at) = request.asked_at {
            if !(0..=super::when::LATEST_MS).contains(&at) {
                return Err(MemoryError::invalid(
                    "asked_at",
                    format!("must be a time from 1970 to 9999 in UTC milliseconds, got {at}"),
                ));
            }
        }
        let top_k = request.top_k.unwrap_or(self.search.default_top_k);
        if top_k == 0 || top_k > self.search.max_top_k {
            return Err(MemoryError::invalid(
                "top_k",
                format!("must be 1..={}, got {top_k}", self.search.max_top_k),
            ));
        }
        if let Some(at) = request.as_of {
            if !filter.is_empty() || request.session_id.is_some() || !request.window.is_empty() {
                return Err(MemoryError::invalid(
                    "as_of",
                    "cannot be combined with a session, note filters or an event window",
                ));
            }
            return self
                .search_as_of_hits(user_id, &request.query, at, top_k)
                .await;
        }
        // The shared notes and, for an agent, its own: never another agent's. Sessions
        // are named here by their keys (the user's sessions only).
        let mut sessions = self.visible_notes_sessions(user_id);
        if let Some(session_id) = &request.session_id {
            check_id("session id", session_id)?;
            // Another user's session is reported exactly like a missing one.
            if !session_owned {
                self.session(session_id, Some(user_id)).await?;
            }
            let key = SessionKey::new(user_id, session_id).as_str().to_string();
            if !sessions.contains(&key) {
                sessions.push(key);
            }
        }

        // "Which book was I reading before I moved?": when the event was said is asked
        // of the conversation first, and what is asked about it is what is searched.
        // Every stage after this one (the legs, the speakers, the second stage, multi-hop)
        // reads the topic; order questions are told apart by the whole query.
        let anchored = self.anchored(request).await;
        let topic_request;
        let request = match &anchored {
            Some((_, topic)) => {
                topic_request = SearchRequest {
                    query: topic.clone(),
                    ..request.clone()
                };
                &topic_request
            }
            None => request,
        };
        let query = request.query.as_str();

        let conn = self.db.conn().await?;
        // Filters apply to the candidates' notes and events as they are read (in SQL,
        // with the notes' tags checked on the rows read): the legs fetch more candidates
        // so that a filter leaves enough of them.
        let filtered = !filter.is_empty() || !request.window.is_empty();
        let candidates = if filtered {
            self.search.candidates.saturating_mul(FILTERED_CANDIDATES)
        } else {
            self.search.candidates
        };
        // Each leg reads several chunks a candidate, as one long turn's chunks all
        // match alike: its candidates are then the best `candidates` turns and notes.
        let pool = candidates.saturating_mul(CHUNKS_PER_CANDIDATE);

        // The vector scan is CPU work on an in-memory matrix: it runs on a blocking thread
        // while this task runs the keyword query, so the two legs overlap.
        let state = self.search_state(&conn, &sessions).await?;
        let (degraded, tags) = (state.degraded, state.tags);
        let query_vector = match degraded {
            Some(_) => Vec::new(),
            None => self
                .embed_blocking(vec![query.to_string()])
                .await?
                .pop()
                .unwrap_or_default(),
        };
        let mut matrices = Vec::new();
        if query_vector.iter().any(|x| *x != 0.0) {
            for session_id in &sessions {
                // A session that does not exist has no vectors.
                let Some(tag) = tags.get(session_id) else {
                    continue;
                };
                let model = self.embedder.model_id();
                let m = self
                    .vectors
                    .current(&conn, session_id, *tag, model, query_vector.len())
                    .await?;
                matrices.push(m);
            }
        }
        let matrices = std::sync::Arc::new(matrices);
        let scan = |k: usize| {
            let (matrices, query) = (matrices.clone(), query_vector.clone());
            tokio::task::spawn_blocking(move || vectors::candidates_all(&matrices, &query, k))
        };
        let vector_scan = scan(pool);

        let keyword_leg = match Terms::default().query(query) {
            // Its words but stop words, or its stop words when it has no other word.
            Some((field, terms)) => {
                let cache = self.keyword_cache(field);
                let mut copies = Vec::with_capacity(sessions.len());
                for session_id in &sessions {
                    if let Some(tag) = tags.get(session_id) {
                        copies.push(cache.current(&conn, session_id, *tag).await?);
                    }
                }
                Some((copies, terms))
            }
            // No word at all ("?!"): nothing for the keyword leg.
            None => None,
        };
        let keyword = |k: usize| match &keyword_leg {
            Some((copies, terms)) => {
                keywords::best_matches(copies, terms, k, self.search.context_weight, None)
            }
            None => Vec::new(),
        };
        let mut keyword_hits = keyword(pool);
        // The keyword hits' notes and events are read while the vector scan may still run.
        let keyword_ids: Vec<i64> = keyword_hits.iter().map(|(id, _)| *id).collect();
        let mut chunk_targets = targets_of(&conn, user_id, &sessions, &keyword_ids).await?;

        // A panic in the scan is a bug: surface it here rather than hide it.
        let joined = |task: tokio::task::JoinHandle<Vec<(i64, f64)>>| async {
            task.await
                .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
        };
        let rescore = |found: Vec<(i64, f64)>, k: usize| {
            let (conn, sessions, query) = (&conn, &sessions, &query_vector);
            async move {
                vectors::rescore(conn, self.embedder.model_id(), sessions, &found, query, k).await
            }
        };
        let mut vector_hits = rescore(joined(vector_scan).await, pool).await?;
        // The vector leg's chunks the keyword leg did not bring are mapped now.
        map_new(&conn, user_id, &sessions, &vector_hits, &mut chunk_targets).await?;
        // A leg whose chunks came from too few notes and events (one long turn matching
        // in all of its chunks) reads deeper, once.
        let deeper = pool.saturating_mul(DEEPER).min(MAX_DEEPER.max(pool));
        if crowded(&keyword_hits, pool, &chunk_targets, candidates) {
            keyword_hits = keyword(deeper);
            map_new(&conn, user_id, &sessions, &keyword_hits, &mut chunk_targets).await?;
        }
        if crowded(&vector_hits, pool, &chunk_targets, candidates) {
            vector_hits = rescore(joined(scan(deeper)).await, deeper).await?;
            map_new(&conn, user_id, &sessions, &vector_hits, &mut chunk_targets).await?;
        }

        // Each leg's best `candidates` notes and events, each scored by its best chunk.
        // Each leg's best raw score over the whole conversation (hits come best first).
        let best = (
            keyword_hits.first().map(|h| h.1),
            vector_hits.first().map(|h| f64::from(h.1)),
        );
        let (mut scores, mut sources) =
            candidates_by_leg(keyword_hits, vector_hits, &chunk_targets, candidates);
        let said_when = match &anchored {
            Some((window, _)) => Some(*window),
            None => self.query_window(request),
        };
        // A query naming a date ("in March", "last week") is also asked of the turns said
        // then alone (see `window_read`): the best of them may match too weakly to be
        // among the whole conversation's best, where no preference could reach it. Not
        // the time beside an event ("before I moved"): that is half a conversation, whose
        // best turns are among the whole one's already (the chats dev set with
        // --relative, hash: recall@5 0.478 without the read, 0.493 with it, for twice
        // the p95).
        let mut said_then = HashMap::new();
        let dated = said_when.filter(|_| anchored.is_none());
        if let (Some(window), Some(session_id)) = (dated, &request.session_id) {
            let key = SessionKey::new(user_id, session_id);
            let legs = super::window_read::Legs {
                keyword: keyword_leg
                    .as_ref()
                    .map(|(c, t)| (c.as_slice(), t.as_slice())),
                query_vector: &query_vector,
                context_weight: self.search.context_weight,
                model: self.embedder.model_id(),
                sessions: &sessions,
                best,
            };
            let (window_scores, window_sources) = super::window_read::candidates(
                &conn,
                user_id,
                key.as_str(),
                window,
                legs,
                candidates,
            )
            .await?;
            said_then = fuse(&window_scores, &self.search);
            for (target, legs) in window_scores {
                scores.entry(target).or_insert(legs);
            }
            for (target, source) in window_sources {
                sources.entry(target).or_insert(source);
            }
        }
        if scores.is_empty() {
            return Ok(SearchResults {
                hits: Vec::new(),
                degraded,
            });
        }
        // A turn said inside the time the query names is preferred ("what did I say last
        // week"), and an assistant's turn is not, when the query speaks of its user ("my
        // dog"): both before neighbours borrow from them and before the best are read.
        let of_the_user = super::speakers::in_the_first_person(&request.query);
        let mut targets = fuse(&scores, &self.search);
        for (target, then) in said_then {
            let score = targets.entry(target).or_insert(0.0);
            *score = score.max(then);
        }
        for (target, score) in targets.iter_mut() {
            let Some(source) = sources.get(target) else {
                continue;
            };
            if matches!(target, Target::Event(..))
                && said_when.is_some_and(|w| w.contains(source.at))
            {
                *score *= 1.0 + self.search.time_weight;
            }
            if of_the_user && source.by_assistant {
                *score /= 1.0 + self.search.speaker_weight;
            }
        }
        // Each target's scores by leg, to show with its hit.
        let legs = scores;
        // A question about the user, in a conversation with an assistant, is answered by
        // the user's own turns; the turns beside one are the assistant's reply, which
        // repeats it, and the user's next request, on another topic. Lending them score
        // crowds out the turns asked for (the chats dev set, fastembed, before sentence
        // vectors: recall@10 0.443 with lending, 0.465 without), so there turns stand
        // alone. Between people (no assistant among the candidates) the turn after a
        // match often holds its answer, and lending stays.
        let standing_alone: HashSet<String> = if of_the_user {
            sources
                .values()
                .filter(|source| source.by_assistant)
                .filter_map(|source| match &source.target {
                    Target::Event(session, _) => Some(session.clone()),
                    Target::Note(_) => None,
                })
                .collect()
        } else {
            HashSet::new()
        };
        spread_to_neighbours(&mut targets, self.search.neighbor_weight, &standing_alone);

        // Read the best targets first; notes that expired, were superseded or lack a tag
        // drop out there, so read further only while fewer than `top_k` hits remain.
        let mut ranked: Vec<(Target, f64)> = targets.into_iter().collect();
        ranked.sort_by(|a, b| b.1.total_cmp(&a.1));
        let mut hits = Vec::new();
        // The second stage reads its candidates whole: hydrate that many at once.
        let rerank_depth = self.rerank_depth(top_k);
        for batch in ranked.chunks((top_k * 3).max(rerank_depth)) {
            let batch: HashMap<Target, f64> = batch.iter().cloned().collect();
            hits.extend(
                self.hydrate(&conn, user_id, (&batch, &legs), &filter, &request.window)
                    .await?,
            );
            if hits.len() >= top_k {
                break;
            }
        }
        hits.sort_by(SearchHit::best_first);
        super::speakers::prefer_named_speakers(
            &request.query,
            &mut hits,
            self.search.speaker_weight,
        );
        let mut degraded = degraded;
        if rerank_depth > 0 {
            hits.truncate(rerank_depth);
            if let Some(reason) = self.rerank(&request.query, &mut hits).await {
                tracing::debug!(%reason, "search answered without its second stage");
                degraded = Some(match degraded {
                    Some(earlier) => format!("{earlier}; {reason}"),
                    None => reason,
                });
            }
        }
        self.second_round(request, &mut hits).await;
        hits.truncate(top_k);
        Ok(SearchResults { hits, degraded })
    }

    /// The window of time the request's query names, read in its zone from when it was
    /// asked; `None` when it names none or `search.time_weight` is 0.
    fn query_window(&self, request: &SearchRequest) -> Option<TimeWindow> {
        if self.search.time_weight <= 0.0 {
            return None;
        }
        let asked_at = request.asked_at.unwrap_or_else(|| self.clock.now_ms());
        super::when::window(
            &request.query,
            asked_at,
            request
                .time_zone
                .unwrap_or_else(|| self.user_zone(&request.user_id)),
        )
    }

    /// The time before or after an event the query tells of ("before I moved", see
    /// [`super::anchors`]), found by searching the conversation for the event, with what
    /// the query asks about it; `None` when the query names a date or no such event,
    /// filters notes (which leaves the conversation out), `search.time_weight` is 0, or
    /// no turn of the conversation shares a word with the event.
    async fn anchored(&self, request: &SearchRequest) -> Option<(TimeWindow, String)> {
        let session_id = request
            .session_id
            .as_ref()
            .filter(|_| self.search.time_weight > 0.0)?;
        if !request.filter.is_empty() || !request.tags.is_empty() {
            return None;
        }
        let anchor = super::anchors::anchor(&request.query)?;
        // A query naming a date reads by its date.
        if self.query_window(request).is_some() {
            return None;
        }
        // The fusion alone, as multi-hop's later rounds: no second stage, no rounds, and
        // no time of its own (so no event of its own either).
        let mut plain = self.search.clone();
        plain.multi_hop_seeds = 0;
        plain.rerank = crate::config::RerankMode::None;
        plain.time_weight = 0.0;
        let plain = self.clone().with_search_config(plain);
        let asked = SearchRequest {
            user_id: request.user_id.clone(),
            query: anchor.event.clone(),
            top_k: Some(self.search.max_top_k.min(EVENT_HITS)),
            session_id: Some(session_id.clone()),
            asked_at: request.asked_at,
            time_zone: request.time_zone,
            ..SearchRequest::default()
        };
        let found = match Box::pin(plain.search_unspanned(&asked, true)).await {
            Ok(found) => found,
            // The time is a preference: without it the whole query is searched as it is.
            Err(e) => {
                tracing::debug!(error = %e, "the search for a query's event failed");
                return None;
            }
        };
        // The turn that told of the event: one a word of it matched (the vector leg
        // always has a nearest turn, however unlike), and not one asking by it (the
        // question itself, appended before it is searched, or asked before).
        let told = found.hits.iter().find(|hit| {
            hit.source == HitSource::Conversation
                && hit.keyword_score.is_some()
                && !super::anchors::asks_by(&hit.text, &anchor.event)
        })?;
        let asked_at = request.asked_at.unwrap_or_else(|| self.clock.now_ms());
        super::anchors::window(anchor.side, told.at, asked_at).map(|w| (w, anchor.topic))
    }

    /// The vector leg alone for one session: the `k` most similar chunk ids with their
    /// cosine similarity (a user's chunk's, the best of its own and its sentences'), best
    /// first. For benchmarks and retrieval evaluation.
    pub async fn vector_leg(
        &self,
        key: &SessionKey,
        query: &str,
        k: usize,
    ) -> Result<Vec<(i64, f32)>> {
        let session_id = key.as_str();
        let query_vector = self.embedder.embed(&[query])?.pop().unwrap_or_default();
        let conn = self.db.conn().await?;
        let model = self.embedder.model_id();
        // A session that does not exist has no vectors.
        let Some(tag) = vectors::tag_of(&conn, session_id).await? else {
            return Ok(Vec::new());
        };
        let held = self
            .vectors
            .current(&conn, session_id, tag, model, query_vector.len())
            .await?;
        let candidates = vectors::candidates_all(&[held], &query_vector, k);
        let sessions = [session_id.to_string()];
        Ok(vectors::rescore(&conn, model, &sessions, &candidates, &query_vector, k).await?)
    }
}
