//! `nightshift state …`: scoped key-value state. The command's arguments live here beside
//! it (not in `args.rs`) because nothing else shares them.

use clap::{Args, Subcommand};
use nightshift::app::App;
use nightshift::db::clock::to_rfc3339;
use nightshift::error::Error;
use nightshift::state::{parse_value, StateAccess, StateDeleted, StateEntry};

use super::input::text_arg;
use super::output::print;

#[derive(Debug, Subcommand)]
pub enum StateCommand {
    /// Print a key's JSON value (with --json, its version and times too).
    Get {
        #[command(flatten)]
        at: StateAt,
        /// `KEY` (the session's), `user:KEY`, `app:KEY`.
        key: String,
    },
    /// Set a key to a JSON value; prints its new version.
    Set {
        #[command(flatten)]
        at: StateAt,
        /// Write only if the key is at this version now (0: only if it does not exist).
        #[arg(long, value_name = "VERSION", allow_negative_numbers = true)]
        expect_version: Option<i64>,
        key: String,
        /// Any JSON value (quote text: '"like this"'); `-` reads it from standard input.
        value: String,
    },
    /// Delete a key.
    Delete {
        #[command(flatten)]
        at: StateAt,
        /// Delete only if the key is at this version now.
        #[arg(long, value_name = "VERSION", allow_negative_numbers = true)]
        expect_version: Option<i64>,
        key: String,
    },
    /// The keys visible here that start with PREFIX (all when absent), by key.
    List {
        #[command(flatten)]
        at: StateAt,
        #[arg(default_value = "")]
        prefix: String,
    },
}

/// Whose state: a user's (and one of their sessions'), or without `--user` the
/// operator's, who reads and writes the `app:` keys every user reads.
#[derive(Debug, Args)]
pub struct StateAt {
    /// The user whose state this is.
    #[arg(long)]
    user: Option<String>,
    /// The session whose keys without a prefix are meant.
    #[arg(long)]
    session: Option<String>,
}

impl StateAt {
    fn access(self) -> StateAccess {
        match self.user {
            Some(user) => StateAccess::user(user, self.session),
            None => StateAccess::operator(None, self.session),
        }
    }
}

pub async fn run(app: &App, command: StateCommand, json: bool) -> Result<(), Error> {
    let state = app.state();
    match command {
        StateCommand::Get { at, key } => {
            let entry = state.get(&at.access(), &key).await?;
            print(json, &entry, || entry.value.to_string())
        }
        StateCommand::Set {
            at,
            expect_version,
            key,
            value,
        } => {
            let max = app.config().memory.max_import_bytes;
            let value = parse_value(&text_arg("state value", value, max)?)?;
            let entry = state
                .set(&at.access(), &key, &value, expect_version)
                .await?;
            print(json, &entry, || {
                format!("set {} (version {})", entry.key, entry.version)
            })
        }
        StateCommand::Delete {
            at,
            expect_version,
            key,
        } => {
            let deleted: StateDeleted = state.delete(&at.access(), &key, expect_version).await?;
            print(json, &deleted, || format!("deleted {}", deleted.key))
        }
        StateCommand::List { at, prefix } => {
            let list = state.list(&at.access(), &prefix).await?;
            print(json, &list, || {
                list.entries.iter().map(line).collect::<Vec<_>>().join("\n")
            })
        }
    }
}

fn line(entry: &StateEntry) -> String {
    format!(
        "{}  v{}  {}  {}",
        entry.key,
        entry.version,
        to_rfc3339(entry.updated_at),
        entry.value
    )
}
