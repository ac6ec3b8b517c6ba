//! What the search's in-memory copies of sessions (vector codes, keyword postings) share:
//! an LRU of one copy per session within a memory budget, and the list of sessions with
//! a block's worth of rows to pack when the embedder idles.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use lru::LruCache;

use super::blocks::BLOCK_ROWS;

/// A copy that knows how much memory it holds.
pub(super) trait Weighed {
    fn bytes(&self) -> usize;
}

/// One copy per session, least recently used evicted first once their bytes pass the
/// budget (a single copy larger than the budget is kept alone, for the search using it).
pub(super) struct SessionLru<T> {
    state: Mutex<LruState<T>>,
    budget_bytes: usize,
}

struct LruState<T> {
    entries: LruCache<String, Arc<T>>,
    bytes: usize,
}

impl<T: Weighed> SessionLru<T> {
    pub(super) fn new(budget_bytes: usize) -> Self {
        Self {
            state: Mutex::new(LruState {
                entries: LruCache::unbounded(),
                bytes: 0,
            }),
            budget_bytes,
        }
    }

    /// Takes `session_id`'s copy out if `wanted` holds for it.
    pub(super) fn take_if(&self, session_id: &str, wanted: impl Fn(&T) -> bool) -> Option<Arc<T>> {
        let mut state = self.state.lock().expect("session cache lock");
        if !wanted(state.entries.peek(session_id)?) {
            return None;
        }
        let entry = state.entries.pop(session_id)?;
        state.bytes -= entry.bytes();
        Some(entry)
    }

    pub(super) fn peek(&self, session_id: &str) -> Option<Arc<T>> {
        let mut state = self.state.lock().expect("session cache lock");
        state.entries.get(session_id).cloned()
    }

    pub(super) fn put(&self, session_id: &str, copy: Arc<T>) {
        let mut state = self.state.lock().expect("session cache lock");
        state.bytes += copy.bytes();
        if let Some(old) = state.entries.put(session_id.to_string(), copy) {
            state.bytes -= old.bytes();
        }
        while state.bytes > self.budget_bytes && state.entries.len() > 1 {
            match state.entries.pop_lru() {
                Some((_, evicted)) => state.bytes -= evicted.bytes(),
                None => break,
            }
        }
    }

    /// Sessions held and the bytes counted for them.
    #[cfg(test)]
    pub(super) fn held(&self) -> (usize, usize) {
        let state = self.state.lock().expect("session cache lock");
        (state.entries.len(), state.bytes)
    }
}

/// Sessions with at least a block's worth of rows not in stored blocks yet, and how many
/// rows each got since it was last packed.
#[derive(Default)]
pub(super) struct DueSessions(Mutex<Due>);

#[derive(Default)]
struct Due {
    written: HashMap<String, usize>,
    due: HashSet<String>,
}

impl DueSessions {
    /// Counts rows just written for `session_id`; a block's worth makes it due.
    pub(super) fn note_written(&self, session_id: &str, count: usize) {
        let mut due = self.0.lock().expect("due sessions lock");
        let written = due.written.entry(session_id.to_string()).or_default();
        *written += count;
        if *written >= BLOCK_ROWS {
            due.written.remove(session_id);
            due.due.insert(session_id.to_string());
        }
    }

    /// Marks `session_id` as having a block's worth of rows to pack.
    pub(super) fn note_due(&self, session_id: &str) {
        let mut due = self.0.lock().expect("due sessions lock");
        due.due.insert(session_id.to_string());
    }

    /// The sessions due for packing, now forgotten.
    pub(super) fn take_due(&self) -> Vec<String> {
        let mut due = self.0.lock().expect("due sessions lock");
        due.due.drain().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Copy(usize);

    impl Weighed for Copy {
        fn bytes(&self) -> usize {
            self.0
        }
    }

    /// `search.vector_cache_mib` and `search.keyword_cache_mib` bound the sessions kept:
    /// filling the budget exactly keeps them all, one more session evicts the least
    /// recently used, and the bytes counted never go over the budget (only a single
    /// session larger than it is kept alone, for the search using it).
    #[test]
    fn the_cache_stays_within_its_budget_evicting_the_least_recently_used() {
        let one = 1_000;
        let cache = SessionLru::new(3 * one);
        for id in ["a", "b", "c"] {
            cache.put(id, Arc::new(Copy(one)));
        }
        assert_eq!(cache.held(), (3, 3 * one), "at the budget: all kept");
        // `a` is used, so `b` is now the least recently used.
        assert!(cache.peek("a").is_some());
        cache.put("d", Arc::new(Copy(one)));
        assert_eq!(cache.held(), (3, 3 * one), "one past it: one evicted");
        assert!(cache.peek("b").is_none(), "the least recently used went");
        for id in ["a", "c", "d"] {
            assert!(cache.peek(id).is_some(), "{id} kept");
        }
        // Replacing a session's copy counts only the new one.
        cache.put("a", Arc::new(Copy(one / 2)));
        assert_eq!(cache.held(), (3, 2 * one + one / 2));
        // Taking a copy out uncounts it, and only when it is the one wanted.
        assert!(cache.take_if("a", |c| c.0 == one).is_none());
        assert!(cache.take_if("a", |c| c.0 == one / 2).is_some());
        assert_eq!(cache.held(), (2, 2 * one));
        // A session bigger than the whole budget is kept alone, never beside others.
        cache.put("huge", Arc::new(Copy(4 * one)));
        assert_eq!(cache.held().0, 1);
        cache.put("e", Arc::new(Copy(one)));
        assert_eq!(cache.held(), (1, one), "the huge one went first");
        // A budget of 0 (a cache of 0 MiB) keeps at most the session in use.
        let none = SessionLru::new(0);
        none.put("a", Arc::new(Copy(one)));
        none.put("b", Arc::new(Copy(one)));
        assert_eq!(none.held().0, 1);
    }

    #[test]
    fn a_session_is_due_once_a_block_was_written_and_until_taken() {
        let due = DueSessions::default();
        due.note_written("s", BLOCK_ROWS - 1);
        assert!(due.take_due().is_empty());
        due.note_written("s", 1);
        due.note_due("t");
        let mut taken = due.take_due();
        taken.sort();
        assert_eq!(taken, vec!["s".to_string(), "t".to_string()]);
        assert!(due.take_due().is_empty(), "taken once");
    }
}
