//! `nightshift macros …` (its arguments live here beside it).

use clap::Subcommand;
use nightshift::app::App;
use nightshift::error::Error;
use nightshift::memory::{Macro, MacroList};

use super::output::print;

#[derive(Debug, Subcommand)]
pub enum MacrosCommand {
    /// The user's promoted macros, most confident first: after a call, the call its runs
    /// usually make next.
    List {
        #[arg(long)]
        user: String,
    },
}

pub async fn run(app: &App, command: MacrosCommand, json: bool) -> Result<(), Error> {
    match command {
        MacrosCommand::List { user } => {
            let list = app.memory().macros(&user).await?;
            print(json, &list, || human(&list))
        }
    }
}

/// One line a macro: the chain, its confidence, support and runs.
fn human(list: &MacroList) -> String {
    if list.macros.is_empty() {
        return format!("no macros for {}", list.user_id);
    }
    list.macros.iter().map(line).collect::<Vec<_>>().join("\n")
}

fn line(found: &Macro) -> String {
    let mut chain = format!("{}({})", found.trigger_tool, found.trigger_args_pattern);
    chain.push_str(&format!(" -> {}", found.next_tool));
    if let Some(next2) = &found.next2_tool {
        chain.push_str(&format!(" -> {next2}"));
    }
    format!(
        "{chain}  confidence {:.2}  support {:.1}/{:.1}  seen {}  hinted {}  args {}",
        found.confidence,
        found.support,
        found.trigger_runs,
        found.seen_count,
        found.use_count,
        found.next_args
    )
}
