//! `nightshift approvals …`: tool calls waiting for a user's approval, and the answer
//! (its arguments live here beside it). Without `--user` the operator sees and answers
//! every user's; with it, that user's only.

use clap::Subcommand;
use nightshift::access::Actor;
use nightshift::app::App;
use nightshift::approval::{Approval, ApprovalState, Decision, Door};
use nightshift::error::Error;
use nightshift::input::InputError;

use super::output::print;

#[derive(Debug, Subcommand)]
pub enum ApprovalsCommand {
    /// Approvals, newest first.
    List {
        /// Only this user's.
        #[arg(long)]
        user: Option<String>,
        /// pending, approved, denied or expired.
        #[arg(long)]
        state: Option<String>,
        /// At most this many (1..=1000).
        #[arg(long, default_value_t = 50)]
        limit: i64,
    },
    /// One approval: the call and its arguments, and the answer if it has one.
    Show {
        id: String,
        /// Act as this user (their approvals only).
        #[arg(long)]
        user: Option<String>,
    },
    /// Approve the call: the run goes on and makes it. Exit 5 when it was answered
    /// already.
    Approve {
        id: String,
        #[arg(long)]
        user: Option<String>,
        /// Kept with the answer.
        #[arg(long)]
        reason: Option<String>,
    },
    /// Deny the call: the run goes on, its model told the call was denied. Exit 5 when it
    /// was answered already.
    Deny {
        id: String,
        #[arg(long)]
        user: Option<String>,
        /// Kept with the answer, and shown to the model.
        #[arg(long)]
        reason: Option<String>,
    },
}

pub async fn run(app: &App, command: ApprovalsCommand, json: bool) -> Result<(), Error> {
    let store = app.approvals();
    match command {
        ApprovalsCommand::List { user, state, limit } => {
            let actor = Actor::from_option(user)?;
            let state = state
                .map(|s| {
                    s.parse::<ApprovalState>()
                        .map_err(|reason| InputError::new("--state", reason))
                })
                .transpose()?;
            let list = store.list(&actor, state, limit).await?;
            print(json, &list, || {
                if list.is_empty() {
                    "no approvals".to_string()
                } else {
                    list.iter().map(line).collect::<Vec<_>>().join("\n")
                }
            })
        }
        ApprovalsCommand::Show { id, user } => {
            let approval = store.get(&Actor::from_option(user)?, &id).await?;
            print(json, &approval, || detail(&approval))
        }
        ApprovalsCommand::Approve { id, user, reason } => {
            decide(app, &id, user, reason, Decision::Approve, json).await
        }
        ApprovalsCommand::Deny { id, user, reason } => {
            decide(app, &id, user, reason, Decision::Deny, json).await
        }
    }
}

async fn decide(
    app: &App,
    id: &str,
    user: Option<String>,
    reason: Option<String>,
    decision: Decision,
    json: bool,
) -> Result<(), Error> {
    let actor = Actor::from_option(user)?;
    let approval = app
        .approvals()
        .decide(&actor, id, decision, Door::Cli, reason.as_deref())
        .await?;
    print(json, &approval, || {
        format!(
            "{} {}: the run goes on at the worker's next look",
            approval.approval_id, approval.state
        )
    })
}

fn line(a: &Approval) -> String {
    format!(
        "{}  {:<8}  {}  {}  {}  {}",
        a.approval_id,
        a.state,
        a.created_at,
        a.user_id,
        a.tool_name,
        nightshift::text::truncate_chars(&a.arguments, 80)
    )
}

fn detail(a: &Approval) -> String {
    let mut text = format!(
        "approval   {}\nstate      {}\nuser       {}\nschedule   {}\nrun        {}\ntool       {}\narguments  {}\nasked      {}\nexpires    {}",
        a.approval_id,
        a.state,
        a.user_id,
        a.schedule_id,
        a.run_id,
        a.tool_name,
        a.arguments,
        a.created_at,
        a.expires_at
    );
    if let Some(at) = &a.decided_at {
        text.push_str(&format!(
            "\nanswered   {at} ({})",
            a.decided_by.as_deref().unwrap_or_default()
        ));
    }
    if let Some(reason) = &a.reason {
        text.push_str(&format!("\nreason     {reason}"));
    }
    text
}
