//! The categories a fact (a note the `facts` consolidation pass keeps) may have: a closed
//! vocabulary the configuration (`[users.X]` category rules) and the consolidation share.
//! It lives here, below both, so that checking a configuration does not depend on the
//! consolidation and everything it reaches.

/// The categories a fact may have. An `instruction` is how the user asked the assistant
/// to answer or act ("from now on, reply in Spanish").
pub const CATEGORIES: [&str; 6] = [
    "preference",
    "instruction",
    "decision",
    "habit",
    "profile",
    "fact",
];
