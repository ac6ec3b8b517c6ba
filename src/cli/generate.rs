//! Files made from the command line's own definition, so they cannot drift from it: man
//! pages (one per command), shell completions, and `docs/cli.md`. `scripts/package.sh` and
//! a test call these; the command is hidden from `--help`.

use std::path::Path;

use clap::CommandFactory;
use nightshift::error::{Error, ErrorKind};

use super::args::{Cli, GenerateCommand};

fn io_error(path: &Path, err: std::io::Error) -> Error {
    Error::new(
        ErrorKind::Unavailable,
        format!("cannot write {}: {err}", path.display()),
    )
}

pub fn run(command: GenerateCommand) -> Result<(), Error> {
    match command {
        GenerateCommand::Man { dir } => man_pages(&dir),
        GenerateCommand::Completions { dir } => completions(&dir),
        GenerateCommand::CliDoc { file } => {
            std::fs::write(&file, cli_markdown()).map_err(|e| io_error(&file, e))
        }
    }
}

/// `nightshift.1`, and `nightshift-memory-save.1` and so on for every subcommand.
fn man_pages(dir: &Path) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    let mut command = Cli::command();
    command.build();
    write_man(&command, "nightshift", dir)
}

fn write_man(command: &clap::Command, name: &str, dir: &Path) -> Result<(), Error> {
    if command.is_hide_set() {
        return Ok(());
    }
    let page = command.clone().name(name.to_string());
    let path = dir.join(format!("{name}.1"));
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .map_err(|e| io_error(&path, e))?;
    std::fs::write(&path, out).map_err(|e| io_error(&path, e))?;
    for sub in command.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        write_man(sub, &format!("{name}-{}", sub.get_name()), dir)?;
    }
    Ok(())
}

/// Completions for bash, zsh and fish, under the names their shells look for.
fn completions(dir: &Path) -> Result<(), Error> {
    use clap_complete::Shell;
    std::fs::create_dir_all(dir).map_err(|e| io_error(dir, e))?;
    for shell in [Shell::Bash, Shell::Zsh, Shell::Fish] {
        let mut command = Cli::command();
        clap_complete::generate_to(shell, &mut command, "nightshift", dir)
            .map_err(|e| io_error(dir, e))?;
    }
    Ok(())
}

/// Every command's help, as Markdown.
pub fn cli_markdown() -> String {
    let mut command = Cli::command();
    command.build();
    let mut out = String::from(
        "# Command line reference\n\nGenerated from the command line's definition \
         (`nightshift generate cli-doc docs/cli.md`); a test fails when it is out of date.\n",
    );
    section(&command, "nightshift", &mut out);
    out
}

fn section(command: &clap::Command, path: &str, out: &mut String) {
    if command.is_hide_set() {
        return;
    }
    let depth = path.matches(' ').count().min(4) + 2;
    out.push_str(&format!("\n{} `{path}`\n\n", "#".repeat(depth)));
    let help = command
        .clone()
        .bin_name(path.to_string())
        .term_width(100)
        .render_long_help()
        .to_string();
    out.push_str("```text\n");
    out.push_str(help.trim_end());
    out.push_str("\n```\n");
    for sub in command.get_subcommands() {
        if sub.get_name() == "help" {
            continue;
        }
        section(sub, &format!("{path} {}", sub.get_name()), out);
    }
}
