//! Agent scope. A note saved through a handle acting for an agent belongs to that agent of
//! its user and is seen only by it; a note saved with no agent is shared by all of the
//! user's agents. A handle for agent A reads the shared notes and A's; a handle with no
//! agent reads the shared notes only, so a door that forgets to name an agent can never
//! reach an agent's private notes. Users stay apart as everywhere: every statement also
//! filters on `user_id`.

use super::{check_id, Memory, Result, SessionKey, SessionKind};

/// The SQL condition "this note row is visible to the handle's agent", for a table with an
/// `agent_id` column; `param` is the placeholder holding [`Memory::agent`] (NULL when
/// none, which makes `agent_id = NULL` false: only shared rows pass).
pub(super) fn visible(param: &str) -> String {
    format!("(agent_id IS NULL OR agent_id = {param})")
}

/// The SQL condition "this note row belongs to exactly the handle's scope" (shared rows
/// when the handle has no agent): where a key names one note.
pub(super) fn same_scope(param: &str) -> String {
    format!("coalesce(agent_id, '') = coalesce({param}, '')")
}

impl Memory {
    /// The same store acting for `agent` of whichever user an operation names: notes it
    /// saves belong to that agent, and it sees the shared notes and that agent's. `None`
    /// gives the shared scope.
    pub fn as_agent(&self, agent: Option<&str>) -> Result<Memory> {
        if let Some(agent) = agent {
            check_id("agent id", agent)?;
        }
        let mut memory = self.clone();
        memory.agent = agent.map(str::to_string);
        Ok(memory)
    }

    /// The agent this handle acts for; `None` for the shared scope.
    pub fn agent(&self) -> Option<&str> {
        self.agent.as_deref()
    }

    /// The pseudo-sessions whose notes this handle sees for `user_id` (their keys): the
    /// shared one and, with an agent, that agent's.
    pub(super) fn visible_notes_sessions(&self, user_id: &str) -> Vec<String> {
        let key = |agent| SessionKey::new(user_id, &SessionKind::notes_session(user_id, agent));
        let mut sessions = vec![key(None).as_str().to_string()];
        if let Some(agent) = self.agent() {
            sessions.push(key(Some(agent)).as_str().to_string());
        }
        sessions
    }
}

#[cfg(test)]
mod tests {
    use super::SessionKind;
    use proptest::prelude::*;

    proptest! {
        /// Two different (user, agent) pairs never share a notes session, whatever the ids
        /// hold (separators, digits, the other's text), and every one is a reserved
        /// memory session short enough for any id rule.
        #[test]
        fn notes_sessions_are_unambiguous(
            user_a in "[a:@0-9\\PC]{1,12}", agent_a in proptest::option::of("[a:@0-9\\PC]{1,12}"),
            user_b in "[a:@0-9\\PC]{1,12}", agent_b in proptest::option::of("[a:@0-9\\PC]{1,12}"),
        ) {
            let a = SessionKind::notes_session(&user_a, agent_a.as_deref());
            let b = SessionKind::notes_session(&user_b, agent_b.as_deref());
            prop_assert_eq!(a == b, user_a == user_b && agent_a == agent_b);
            prop_assert_eq!(SessionKind::of(&a), SessionKind::Memory);
            if agent_a.is_some() {
                prop_assert!(a.len() < 64);
            }
        }
    }
}
