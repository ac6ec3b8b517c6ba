//! `nightshift artifact …` (its arguments live here beside it).

use std::path::{Path, PathBuf};

use base64::Engine;
use clap::Subcommand;
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::artifact::{Artifact, NewArtifact};
use nightshift::db::clock::to_rfc3339;
use nightshift::error::{Error, ErrorKind};

use super::output::{bytes, print};

#[derive(Debug, Subcommand)]
pub enum ArtifactCommand {
    /// Store a file with a session (created on first use); prints the artifact's id.
    /// Identical bytes are stored once, however many artifacts share them.
    Put {
        /// The user who owns it.
        #[arg(long)]
        user: String,
        /// The session it belongs to; forgetting the session deletes it.
        #[arg(long)]
        session: String,
        /// Its file name (1 to 255 characters, no `/`).
        #[arg(long)]
        name: String,
        /// Its MIME type, like text/csv.
        #[arg(
            long = "type",
            value_name = "MIME",
            default_value = "application/octet-stream"
        )]
        mime_type: String,
        /// The file to store; standard input when absent or `-`. Read only up to
        /// `[artifacts] max_artifact_bytes`.
        file: Option<PathBuf>,
    },
    /// An artifact's bytes, to standard output or --out (with --json: its metadata and
    /// the bytes in base64).
    Get {
        /// The user who owns it.
        #[arg(long)]
        user: String,
        /// Write the bytes to this file instead, and print the metadata.
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
        id: String,
    },
    /// A user's artifacts, newest first.
    List {
        /// The user who owns them.
        #[arg(long)]
        user: String,
        /// Only this session's.
        #[arg(long)]
        session: Option<String>,
    },
    /// Delete an artifact (its content too, when no other artifact shares it).
    Delete {
        /// The user who owns it.
        #[arg(long)]
        user: String,
        id: String,
    },
}

fn describe(a: &Artifact) -> String {
    format!(
        "{}  {}  {}  {} bytes  session {}  {}",
        a.artifact_id,
        a.name,
        a.mime_type,
        a.size,
        a.session_id,
        to_rfc3339(a.created_at)
    )
}

/// A file's bytes (standard input for `-`), at most one byte past `max`: enough for the
/// store to refuse it naming `artifacts.max_artifact_bytes`, without reading the rest.
fn read_up_to(path: &Path, max: usize) -> Result<Vec<u8>, Error> {
    use std::io::Read;
    let limit = max as u64 + 1;
    let mut content = Vec::new();
    let read = if path.as_os_str() == "-" {
        std::io::stdin()
            .lock()
            .take(limit)
            .read_to_end(&mut content)
    } else {
        let file = std::fs::File::open(path).map_err(|e| {
            let kind = if e.kind() == std::io::ErrorKind::NotFound {
                ErrorKind::NotFound
            } else {
                ErrorKind::BadInput
            };
            Error::new(kind, format!("cannot read {}: {e}", path.display()))
        })?;
        file.take(limit).read_to_end(&mut content)
    };
    read.map_err(|e| {
        Error::new(
            ErrorKind::BadInput,
            format!("cannot read {}: {e}", path.display()),
        )
    })?;
    Ok(content)
}

pub async fn run(app: &App, command: ArtifactCommand, json: bool) -> Result<(), Error> {
    let store = app.artifacts();
    match command {
        ArtifactCommand::Put {
            user,
            session,
            name,
            mime_type,
            file,
        } => {
            // One byte past the limit is read, so the store refuses it naming the key;
            // nothing further is read.
            let max = store.config().max_artifact_bytes;
            let content = read_up_to(file.as_deref().unwrap_or(Path::new("-")), max)?;
            let artifact = NewArtifact {
                name,
                mime_type,
                content,
            };
            let stored = store.put(&user, &session, None, &artifact).await?;
            print(json, &stored, || format!("stored {}", stored.artifact_id))
        }
        ArtifactCommand::Get { user, out, id } => {
            let actor = Actor::user(user)?;
            let (artifact, content) = store.get(&actor, &id).await?;
            if let Some(out) = out {
                std::fs::write(&out, &content).map_err(|e| {
                    Error::new(
                        ErrorKind::BadInput,
                        format!("cannot write {}: {e}", out.display()),
                    )
                })?;
                return print(json, &artifact, || {
                    format!("wrote {} ({} bytes)", out.display(), artifact.size)
                });
            }
            if json {
                let mut value = serde_json::to_value(&artifact).map_err(|e| {
                    Error::new(ErrorKind::Internal, format!("cannot write JSON: {e}"))
                })?;
                value["content_base64"] = base64::engine::general_purpose::STANDARD
                    .encode(&content)
                    .into();
                return print(true, &value, String::new);
            }
            // Bytes an agent wrote may hold escape sequences: a terminal never gets them.
            if std::io::IsTerminal::is_terminal(&std::io::stdout()) {
                return Err(Error::new(
                    ErrorKind::BadInput,
                    "standard output is a terminal: an artifact's bytes are not shown there; \
                     give --out FILE, pipe them (`| less`), or use --json",
                ));
            }
            bytes(&content)
        }
        ArtifactCommand::List { user, session } => {
            let actor = Actor::user(user.clone())?;
            let artifacts = store.list(&actor, &user, session.as_deref()).await?;
            print(json, &artifacts, || {
                if artifacts.is_empty() {
                    return "no artifacts".to_string();
                }
                artifacts
                    .iter()
                    .map(describe)
                    .collect::<Vec<_>>()
                    .join("\n")
            })
        }
        ArtifactCommand::Delete { user, id } => {
            let actor = Actor::user(user)?;
            let deleted = store.delete(&actor, &id).await?;
            print(json, &deleted, || {
                format!("deleted {}", deleted.artifact_id)
            })
        }
    }
}
