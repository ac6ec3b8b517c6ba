//! Who acts: every library operation that touches a user's data takes the acting
//! principal, and checks once that each id it is given belongs to it. A user who asks for
//! another user's note, session, schedule or run is told it does not exist, exactly as for
//! an id that does not exist.

use crate::input::{self, InputError};

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Actor {
    /// The operator: the CLI without `--user`, or an admin token. Acts on any user's data.
    Operator,
    /// One user (from a token, or `--user` on the CLI): sees and changes only their own.
    User(String),
}

impl Actor {
    /// A user, once their id has passed the common check.
    pub fn user(user_id: impl Into<String>) -> Result<Self, InputError> {
        let user_id = user_id.into();
        input::check_user_id(&user_id)?;
        Ok(Actor::User(user_id))
    }

    /// `--user`, when given; the operator otherwise.
    pub fn from_option(user_id: Option<String>) -> Result<Self, InputError> {
        match user_id {
            Some(user_id) => Self::user(user_id),
            None => Ok(Actor::Operator),
        }
    }

    /// The user this actor is confined to; `None` for the operator.
    pub fn user_id(&self) -> Option<&str> {
        match self {
            Actor::Operator => None,
            Actor::User(user_id) => Some(user_id),
        }
    }

    /// Whether this actor may see and change data owned by `owner`.
    pub fn may_act_for(&self, owner: &str) -> bool {
        match self {
            Actor::Operator => true,
            Actor::User(user_id) => user_id == owner,
        }
    }

    pub fn is_operator(&self) -> bool {
        matches!(self, Actor::Operator)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_user_acts_only_for_themselves() {
        let alice = Actor::user("alice").unwrap();
        assert!(alice.may_act_for("alice"));
        assert!(!alice.may_act_for("bob"));
        assert!(Actor::Operator.may_act_for("bob"));
        assert!(Actor::user("a\u{1b}[0m").is_err());
        assert!(Actor::user("").is_err());
    }
}
