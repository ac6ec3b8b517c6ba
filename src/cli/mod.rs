//! The CLI: logging first, then configuration, then the command. `anyhow` lives here only.

mod admin;
mod args;
mod memory;
mod schedule;

use std::io::{IsTerminal, Read};
use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Parser;
use nightshift::app::OpenError;
use nightshift::config::{Config, ConfigError};
use nightshift::consolidate::ConsolidateError;
use nightshift::db::DbError;
use nightshift::embed::EmbedError;
use nightshift::eval::locomo::EvalError;
use nightshift::memory::MemoryError;
use nightshift::notify::outbox::OutboxError;
use nightshift::schedule::store::ScheduleError;
use serde::Serialize;

use args::{Cli, Command, LogFormat};

/// Exit codes, so scripts can tell a typo from an outage.
mod exit {
    pub const FAILURE: u8 = 1;
    pub const BAD_INPUT: u8 = 2;
    pub const NOT_FOUND: u8 = 3;
    pub const CONFIG: u8 = 4;
}

pub fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.log_format, matches!(cli.command, Command::Run));
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(rt) => rt,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::from(exit::FAILURE);
        }
    };
    match runtime.block_on(dispatch(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err:#}");
            ExitCode::from(exit_code(&err))
        }
    }
}

fn exit_code(err: &anyhow::Error) -> u8 {
    for cause in err.chain() {
        // A model or ONNX Runtime library that is missing or wrong is a setup problem.
        if let Some(OpenError::Embed(EmbedError::Model(_) | EmbedError::Runtime(_))) =
            cause.downcast_ref::<OpenError>()
        {
            return exit::CONFIG;
        }
        if let Some(err) = cause.downcast_ref::<MemoryError>() {
            return match err {
                MemoryError::NoteNotFound(_) | MemoryError::SessionNotFound(_) => exit::NOT_FOUND,
                MemoryError::Db(_) | MemoryError::Embed(_) | MemoryError::WriteFailed(_) => {
                    exit::FAILURE
                }
                _ => exit::BAD_INPUT,
            };
        }
        if let Some(err) = cause.downcast_ref::<ScheduleError>() {
            return match err {
                ScheduleError::NotFound(_) | ScheduleError::RunNotFound(_) => exit::NOT_FOUND,
                ScheduleError::Db(_) => exit::FAILURE,
                _ => exit::BAD_INPUT,
            };
        }
        if let Some(err) = cause.downcast_ref::<ConsolidateError>() {
            return match err {
                ConsolidateError::UnknownPass(_) => exit::BAD_INPUT,
                _ => exit::FAILURE,
            };
        }
        if let Some(err) = cause.downcast_ref::<EvalError>() {
            return match err {
                EvalError::Memory(_) => exit::FAILURE,
                _ => exit::BAD_INPUT,
            };
        }
        if let Some(err) = cause.downcast_ref::<OutboxError>() {
            return match err {
                OutboxError::NotFound(_) => exit::NOT_FOUND,
                OutboxError::Db(_) => exit::FAILURE,
                _ => exit::BAD_INPUT,
            };
        }
        if cause.downcast_ref::<ConfigError>().is_some() {
            return exit::CONFIG;
        }
        if let Some(DbError::BadTarget(_) | DbError::Auth { .. }) = cause.downcast_ref::<DbError>()
        {
            return exit::CONFIG;
        }
    }
    exit::FAILURE
}

fn init_logging(format: LogFormat, daemon: bool) {
    use tracing_subscriber::EnvFilter;
    // The daemon reports its lifecycle; one-shot commands stay quiet unless asked.
    let default = if daemon { "info" } else { "warn" };
    let filter =
        EnvFilter::try_from_env("NIGHTSHIFT_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match format {
        LogFormat::Json => builder.json().init(),
        LogFormat::Human => builder.with_ansi(std::io::stderr().is_terminal()).init(),
    }
}

/// The configuration: the file (if any), then `--db` / `NIGHTSHIFT_DB` on top.
fn load_config(cli: &Cli) -> Result<Config> {
    let mut config = Config::load_or_default(cli.config.as_deref())?;
    if let Some(db) = &cli.db {
        config.database.path = db.clone();
    }
    Ok(config)
}

async fn dispatch(cli: Cli) -> Result<()> {
    if let Command::Config(args::ConfigCommand::Check { path }) = &cli.command {
        return admin::config_check(path.as_deref().or(cli.config.as_deref()), cli.json);
    }
    let config = load_config(&cli)?;
    match cli.command {
        Command::Run => {
            nightshift::worker::run(&config, shutdown_signal()?).await?;
            Ok(())
        }
        Command::Memory(command) => memory::run(&config, command, cli.json).await,
        Command::Schedule(command) => schedule::run(&config, command, cli.json).await,
        Command::Consolidate {
            passes,
            user,
            status,
            limit,
        } => admin::consolidate(&config, passes, user, status, limit, cli.json).await,
        Command::Workers => admin::workers(&config, cli.json).await,
        Command::Eval(command) => admin::eval(&config, command, cli.json).await,
        Command::Outbox(command) => admin::outbox(&config, command, cli.json).await,
        Command::Index(command) => admin::index(&config, command, cli.json).await,
        Command::Db(command) => admin::db(&config, command, cli.json).await,
        Command::Config(_) => unreachable!("handled before loading the config"),
    }
}

/// Completes on SIGTERM or SIGINT. The handlers are installed here, before the worker
/// announces it is running, so a signal sent right after that is never the default
/// (fatal) one.
#[cfg(unix)]
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>> {
    use tokio::signal::unix::{signal, SignalKind};
    let mut term = signal(SignalKind::terminate()).context("cannot listen for SIGTERM")?;
    let mut int = signal(SignalKind::interrupt()).context("cannot listen for SIGINT")?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => tracing::info!("received SIGTERM"),
            _ = int.recv() => tracing::info!("received SIGINT"),
        }
    })
}

#[cfg(not(unix))]
fn shutdown_signal() -> Result<impl std::future::Future<Output = ()>> {
    Ok(async {
        let _ = tokio::signal::ctrl_c().await;
    })
}

/// Prints `value` as JSON, or `human` otherwise.
fn print<T: Serialize>(json: bool, value: &T, human: impl FnOnce() -> String) -> Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(value)?);
    } else {
        let text = human();
        if !text.is_empty() {
            println!("{text}");
        }
    }
    Ok(())
}

/// A text argument, or standard input when it is `-`.
fn text_arg(text: String) -> Result<String> {
    if text != "-" {
        return Ok(text);
    }
    let mut bytes = Vec::new();
    std::io::stdin()
        .read_to_end(&mut bytes)
        .context("cannot read standard input")?;
    String::from_utf8(bytes).context("standard input is not valid UTF-8")
}
