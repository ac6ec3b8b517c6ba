//! The categories a fact (a note the `facts` consolidation pass keeps) may have: a closed
//! vocabulary the configuration (`[users.X]` category rules) and the consolidation share.
//! It lives here, below both, so that checking a configuration does not depend on the
//! consolidation and everything it reaches.

/// The categories a fact may have.
pub const CATEGORIES: [&str; 5] = ["preference", "decision", "habit", "profile", "fact"];
