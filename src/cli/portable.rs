//! `nightshift export` and `nightshift import`: a user's memory as one archive of
//! newline-delimited JSON, and back (docs/export.md); notes from mem0 or Markdown.

use std::io::Write;
use std::path::PathBuf;

use clap::{Args, ValueEnum};
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::error::{Error, ErrorKind};
use nightshift::portable::{ExportScope, ImportFormat, ImportReport, ImportRequest, PortableError};

use super::output::{note, print};

#[derive(Debug, Args)]
pub struct ExportArgs {
    /// The user whose memory to export.
    #[arg(long, required_unless_present = "all", conflicts_with = "all")]
    user: Option<String>,
    /// Every user (the operator).
    #[arg(long)]
    all: bool,
    /// Write the archive here instead of standard output.
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// An archive from `nightshift export`, a mem0 JSON file, or a folder of Markdown files;
    /// `-` reads standard input.
    file: PathBuf,
    /// What FILE is; detected when absent.
    #[arg(long, value_enum)]
    format: Option<Format>,
    /// mem0: the user of every memory (overrides theirs); Markdown: required.
    #[arg(long)]
    user: Option<String>,
    /// Check and count everything, write nothing.
    #[arg(long)]
    dry_run: bool,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Format {
    Nightshift,
    Mem0,
    Markdown,
}

pub async fn export(app: &App, args: ExportArgs, json: bool) -> Result<(), Error> {
    let (actor, scope) = match args.user {
        Some(user) => (Actor::user(user.clone())?, ExportScope::User(user)),
        None => (Actor::Operator, ExportScope::All),
    };
    let now = app.clock().now_ms();
    let portable = app.portable();
    match &args.out {
        Some(path) => {
            let file = std::fs::File::create(path).map_err(|e| {
                Error::new(
                    ErrorKind::BadInput,
                    format!("cannot create {}: {e}", path.display()),
                )
            })?;
            let mut out = std::io::BufWriter::new(file);
            let report = portable.export(&actor, &scope, now, &mut out).await?;
            out.flush()
                .map_err(|e| Error::new(ErrorKind::Unavailable, e.to_string()))?;
            print(json, &report, || {
                let total: u64 = report.lines.values().sum();
                format!("exported {total} lines to {}", path.display())
            })
        }
        None => {
            let mut out = std::io::BufWriter::new(std::io::stdout());
            match portable.export(&actor, &scope, now, &mut out).await {
                Ok(_) => Ok(()),
                // A reader that went away (`| head`) ends the output quietly.
                Err(PortableError::Write(err)) if err.kind() == std::io::ErrorKind::BrokenPipe => {
                    Ok(())
                }
                Err(err) => Err(err.into()),
            }
        }
    }
}

/// Standard input (`-`), a pipe or a device, kept in a temporary file first (the import
/// reads its input twice), at most `memory.max_import_bytes` of it.
fn spooled(
    path: &std::path::Path,
    max_bytes: usize,
) -> Result<Option<tempfile::NamedTempFile>, Error> {
    if path.as_os_str() == "-" {
        return Ok(Some(nightshift::portable::spool(
            std::io::stdin().lock(),
            max_bytes,
        )?));
    }
    match std::fs::metadata(path) {
        Ok(meta) if !meta.is_file() && !meta.is_dir() => {
            let file = std::fs::File::open(path).map_err(|e| {
                Error::new(
                    ErrorKind::Unavailable,
                    format!("cannot read the input: {e}"),
                )
            })?;
            Ok(Some(nightshift::portable::spool(file, max_bytes)?))
        }
        // A regular file or a folder is read in place; a missing one is reported by the
        // import, as not found.
        _ => Ok(None),
    }
}

pub async fn import(app: &App, args: ImportArgs, json: bool) -> Result<(), Error> {
    let input = spooled(&args.file, app.config().memory.max_import_bytes)?;
    let request = ImportRequest {
        path: input
            .as_ref()
            .map_or_else(|| args.file.clone(), |f| f.path().to_path_buf()),
        format: args.format.map(|f| match f {
            Format::Nightshift => ImportFormat::Nightshift,
            Format::Mem0 => ImportFormat::Mem0,
            Format::Markdown => ImportFormat::Markdown,
        }),
        user: args.user,
        dry_run: args.dry_run,
    };
    let report = app.portable().import(&Actor::Operator, &request).await?;
    drop(input);
    if report.dry_run {
        note("dry run: nothing was written");
    }
    print(json, &report, || human(&report))
}

fn human(report: &ImportReport) -> String {
    let mut lines = vec![format!(
        "{} import for {}",
        report.format,
        report.users.join(", ")
    )];
    for (kind, counts) in &report.types {
        let mut line = format!(
            "{kind}: {} imported, {} already present, {} conflicts",
            counts.imported,
            counts.already_present,
            counts.conflicts.len()
        );
        if !counts.conflicts.is_empty() {
            line.push_str(&format!(" ({})", counts.conflicts.join(", ")));
        }
        lines.push(line);
    }
    if report.changed_nothing() {
        lines.push("nothing changed: everything was already present or in conflict".to_string());
    }
    lines.join("\n")
}
