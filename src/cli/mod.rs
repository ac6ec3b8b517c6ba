//! The CLI: logging first, then configuration, then the command. One front door among
//! three: it parses, picks who acts (`--user`, or the operator), calls the library, prints.

mod admin;
mod approvals;
mod args;
mod artifact;
mod eval;
mod filters;
mod generate;
mod input;
mod macros;
mod memory;
mod output;
mod portable;
mod schedule;
mod schedule_args;
mod state;
mod status;
mod versions;

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::Parser;
use nightshift::app::App;
use nightshift::config::Config;
use nightshift::error::{Error, ErrorKind};

use args::{Cli, Command, LogFormat};

/// Exit codes, so scripts can tell a typo from an outage. Every error's kind maps here,
/// once.
mod exit {
    use nightshift::error::ErrorKind;

    pub const FAILURE: u8 = 1;
    pub const BAD_INPUT: u8 = 2;
    pub const NOT_FOUND: u8 = 3;
    pub const CONFIG: u8 = 4;
    pub const CONFLICT: u8 = 5;

    pub fn code(kind: ErrorKind) -> u8 {
        match kind {
            // The command line is the operator's: a refusal of rights is bad input there.
            ErrorKind::BadInput | ErrorKind::Forbidden => BAD_INPUT,
            ErrorKind::NotFound => NOT_FOUND,
            ErrorKind::Config => CONFIG,
            ErrorKind::Conflict => CONFLICT,
            ErrorKind::Unavailable | ErrorKind::Internal => FAILURE,
        }
    }
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format, matches!(cli.command, Command::Run));
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => {
            to_stderr(&format!("error: cannot start the async runtime: {err}"));
            return ExitCode::from(exit::FAILURE);
        }
    };
    // A fault in nightshift is reported as one (the panic message is printed by the hook)
    // and exits 1 like any failure: never 101.
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        runtime.block_on(dispatch(cli))
    }));
    match outcome {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(err)) => {
            to_stderr(&format!(
                "error: {}",
                nightshift::input::printable(&chain(&err))
            ));
            ExitCode::from(exit::code(err.kind()))
        }
        Err(_) => {
            to_stderr("error: internal error (above); please report it");
            ExitCode::from(exit::FAILURE)
        }
    }
}

/// One line on stderr. A stderr that cannot be written (a full disk under a log file, a
/// closed pipe) loses the line: `eprintln!` would panic there, and the exit code with it.
pub(crate) fn to_stderr(line: &str) {
    use std::io::Write;
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// An error and its causes, each once.
fn chain(err: &Error) -> String {
    nightshift::error::error_chain(err)
}

fn init_logging(format: LogFormat, daemon: bool) {
    use tracing_subscriber::EnvFilter;
    // The daemon reports its lifecycle; one-shot commands stay quiet unless asked.
    // rmcp reports each MCP session's start and end at info: detail for debugging only.
    let default = if daemon { "info,rmcp=warn" } else { "warn" };
    let filter =
        EnvFilter::try_from_env("NIGHTSHIFT_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    // A log line that cannot be written is lost, not reported: the subscriber's report is
    // an `eprintln!`, which panics on the same full disk or closed pipe.
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .log_internal_errors(false);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Human => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}

/// The configuration: the file (if any), then `--db` / `NIGHTSHIFT_DB` and `--listen` /
/// `NIGHTSHIFT_LISTEN` on top.
fn load_config(
    path: Option<&std::path::Path>,
    db: Option<String>,
    listen: Option<String>,
) -> Result<Config, Error> {
    let mut config = Config::load_or_default(path)?;
    let overridden = db.is_some() || listen.is_some();
    if let Some(db) = db {
        config.database.path = db;
    }
    if let Some(listen) = listen {
        config.server.listen = listen;
    }
    if overridden {
        config.validate()?;
    }
    Ok(config)
}

async fn dispatch(cli: Cli) -> Result<(), Error> {
    let Cli {
        config: config_path,
        db,
        listen,
        json,
        command,
        ..
    } = cli;
    let config = || load_config(config_path.as_deref(), db.clone(), listen.clone());
    match command {
        Command::Config(args::ConfigCommand::Check { path }) => {
            admin::config_check(path.as_deref().or(config_path.as_deref()), json)
        }
        Command::Run => {
            let config = config()?;
            // Everything `config check` checks, before the database is touched.
            nightshift::app::check::check(&config)?;
            let shutdown = shutdown_signal()?;
            let app = App::open(&config).await?;
            nightshift::daemon::run(&app, shutdown).await?;
            Ok(())
        }
        Command::Mcp { user } => {
            let shutdown = shutdown_signal()?;
            let app = open(config()?).await?;
            nightshift::mcp::stdio::serve(&app, &user, shutdown).await
        }
        Command::Db(command) => admin::db(&config()?, command, json).await,
        Command::Eval(command) => eval::eval(&config()?, command, json).await,
        Command::Memory(command) => memory::run(&open(config()?).await?, command, json).await,
        Command::Schedule(command) => schedule::run(&open(config()?).await?, command, json).await,
        Command::State(command) => state::run(&open(config()?).await?, command, json).await,
        Command::Macros(command) => macros::run(&open(config()?).await?, command, json).await,
        Command::Consolidate {
            passes,
            user,
            status,
            dry_run,
            limit,
        } => {
            let app = open(config()?).await?;
            if dry_run {
                admin::facts_dry_run(&app, passes, user, json).await
            } else {
                admin::consolidate(&app, passes, user, status, limit, json).await
            }
        }
        Command::Status { watch } => {
            let stop = shutdown_signal()?;
            status::run(&open(config()?).await?, watch, json, stop).await
        }
        Command::Workers => admin::workers(&open(config()?).await?, json).await,
        Command::Outbox(command) => admin::outbox(&open(config()?).await?, command, json).await,
        Command::Approvals(command) => approvals::run(&open(config()?).await?, command, json).await,
        Command::Artifact(command) => artifact::run(&open(config()?).await?, command, json).await,
        Command::Export(args) => portable::export(&open(config()?).await?, args, json).await,
        Command::Import(args) => portable::import(&open(config()?).await?, args, json).await,
        Command::Index(command) => admin::index(&open(config()?).await?, command, json).await,
        Command::Token(command) => admin::token(&open(config()?).await?, command, json).await,
        Command::Generate(command) => generate::run(command),
    }
}

async fn open(config: Config) -> Result<App, Error> {
    Ok(App::open(&config).await?)
}

/// Completes on SIGTERM or SIGINT. The handlers are installed here, before the worker
/// announces it is running, so a signal sent right after that is never the default
/// (fatal) one.
#[cfg(unix)]
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>, Error> {
    use tokio::signal::unix::{signal, SignalKind};
    let listen = |kind: SignalKind, name: &str| {
        signal(kind).map_err(|e| {
            Error::new(
                ErrorKind::Internal,
                format!("cannot listen for {name}: {e}"),
            )
        })
    };
    let mut term = listen(SignalKind::terminate(), "SIGTERM")?;
    let mut int = listen(SignalKind::interrupt(), "SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("received SIGTERM"),
            _ = int.recv() => tracing::info!("received SIGINT"),
        }
    })
}

#[cfg(not(unix))]
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>, Error> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}
