//! `nightshift memory history|restore|purge`: a note's versions, bringing one back, and
//! erasing a user. Flattened into `memory`'s subcommands; their arguments live here.

use clap::Subcommand;
use nightshift::app::purge::UserPurged;
use nightshift::app::App;
use nightshift::db::clock::to_rfc3339;
use nightshift::error::Error;
use nightshift::memory::{NoteVersion, Origin};

use super::output::{note, print};

#[derive(Debug, Subcommand)]
pub enum VersionsCommand {
    /// Every version of a note, oldest first: what it said, what changed it, when, and by
    /// what (cli, api, mcp, run:RUN, consolidation:PASS). A deleted note's too.
    History {
        /// The user whose note this is.
        #[arg(long)]
        user: String,
        #[command(flatten)]
        agent: super::args::AgentArg,
        note_id: String,
    },
    /// Bring a version of a note back as its newest version: same id, searchable again,
    /// even after it was deleted (within memory.deleted_note_retention_days).
    Restore {
        /// The user whose note this is.
        #[arg(long)]
        user: String,
        /// The version to bring back (see `memory history`).
        #[arg(long, allow_negative_numbers = true)]
        version: i64,
        #[command(flatten)]
        agent: super::args::AgentArg,
        note_id: String,
    },
    /// Erase everything of a user: sessions, notes and their history, the index, state,
    /// artifacts, macros, schedules and runs, waiting notifications, tokens. Without
    /// --yes, says what would go and removes nothing.
    Purge {
        /// The user to erase.
        #[arg(long)]
        user: String,
        /// Really remove it.
        #[arg(long)]
        yes: bool,
    },
}

pub async fn run(app: &App, command: VersionsCommand, json: bool) -> Result<(), Error> {
    let memory = app.memory().by(Origin::Cli);
    match command {
        VersionsCommand::History {
            user,
            agent,
            note_id,
        } => {
            let versions = agent.memory(&memory)?.note_history(&user, &note_id).await?;
            print(json, &versions, || {
                versions.iter().map(line).collect::<Vec<_>>().join("\n")
            })
        }
        VersionsCommand::Restore {
            user,
            version,
            agent,
            note_id,
        } => {
            let memory = agent.memory(&memory)?;
            let restored = memory.restore_note(&user, &note_id, version).await?;
            super::memory::settle_embeddings(&memory).await;
            print(json, &restored, || {
                format!("restored {} to version {version}", restored.note_id)
            })
        }
        VersionsCommand::Purge { user, yes } => {
            let actor = nightshift::access::Actor::Operator;
            let purged: UserPurged = app.purge_user(&actor, &user, !yes).await?;
            if !yes {
                note("nothing removed: run again with --yes to erase all of the above");
            }
            print(json, &purged, || {
                let verb = if purged.purged {
                    "removed"
                } else {
                    "would remove"
                };
                let counts: Vec<String> = purged
                    .removed
                    .iter()
                    .filter(|(_, n)| **n > 0)
                    .map(|(table, n)| format!("{n} {table}"))
                    .collect();
                if counts.is_empty() {
                    format!("nothing of {} to remove", purged.user_id)
                } else {
                    format!("{verb} for {}: {}", purged.user_id, counts.join(", "))
                }
            })
        }
    }
}

fn line(version: &NoteVersion) -> String {
    format!(
        "v{}  {}  {:<10}  {:<16}  {}",
        version.version,
        to_rfc3339(version.changed_at),
        version.change.as_str(),
        version.changed_by,
        version.content
    )
}
