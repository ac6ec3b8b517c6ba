//! The memory browser's pages as HTML (see [`super::memory`]). Stored text goes through
//! `visible` and maud's escaping, as on every dashboard page; a long text is cut to its
//! head with the whole of it a click away (`details`, no script).

use maud::{html, Markup};
use similar::{ChangeTag, TextDiff};

use super::memory::LISTED;
use super::moments::{duration, moment, Now};
use super::views::{action_button_with, badge, layout, urlencode, Page, Script};
use crate::artifact::Artifact;
use crate::consolidate::PassReport;
use crate::db::clock::to_rfc3339;
use crate::input::visible;
use crate::memory::{DayOfMemory, Event, Note, NoteVersion, Session, SummaryState, UserMemory};
use crate::state::StateEntry;

/// Characters of a note, an event or a value shown before "show all".
const HEAD_CHARS: usize = 300;
/// Characters "show all" shows at most: a page stays a page (the API has all of it).
const WHOLE_CHARS: usize = 4_000;
/// How long a diff between two versions may take before it settles for a coarser one.
const DIFF_DEADLINE: std::time::Duration = std::time::Duration::from_millis(100);

/// `ms` relative to `now`, the instant on hover.
fn at(ms: i64, now: Now) -> Markup {
    moment(&to_rfc3339(ms), now)
}

/// Characters of long texts one page shows behind clicks, in all: a page of long turns
/// stays within its size (the rest of each text after that is a head alone).
const PAGE_WHOLE_CHARS: usize = 30_000;

/// What is left of a page's [`PAGE_WHOLE_CHARS`].
pub struct TextBudget(std::cell::Cell<usize>);

impl TextBudget {
    pub fn new() -> Self {
        TextBudget(std::cell::Cell::new(PAGE_WHOLE_CHARS))
    }
}

/// Stored text shown whole when short, else its head with the rest behind a click (up to
/// [`WHOLE_CHARS`], while the page's `budget` lasts; after it, the head alone).
fn long_text(text: &str, budget: &TextBudget) -> Markup {
    let shown = visible(text);
    let head = crate::text::truncate_chars(&shown, HEAD_CHARS);
    if head.len() == shown.len() {
        return html! { span.text { (shown) } };
    }
    let whole = crate::text::truncate_chars(&shown, WHOLE_CHARS);
    // The head is the whole's first characters: the rest follows it on opening.
    let rest = &whole[head.len()..];
    let chars = shown.chars().count();
    let rest_chars = rest.chars().count();
    if rest_chars > budget.0.get() {
        return html! {
            span.text { (head) "…" } " "
            span.hint { "(" (chars) " characters; this page shows no more of it: "
                code { "nightshift memory recall" } " or the API has all)" }
        };
    }
    budget.0.set(budget.0.get() - rest_chars);
    html! {
        details {
            summary { span.text { (head) } span.more { "… show all (" (chars) " characters)" } }
            div.text { (rest) }
            @if whole.len() < shown.len() {
                p.hint { "… and " (chars - WHOLE_CHARS) " characters more, in full through the API." }
            }
        }
    }
}

/// Stored text's head alone, for a list whose items open a page of their own.
fn head_text(text: &str) -> Markup {
    let shown = visible(text);
    let head = crate::text::truncate_chars(&shown, HEAD_CHARS);
    html! { span.text { (head) @if head.len() < shown.len() { "…" } } }
}

fn user_path(user: &str) -> String {
    format!("/ui/memory/{}", urlencode(user))
}

/// A note's page, as `agent` sees the user's notes.
pub fn note_path(user: &str, note_id: &str, agent: Option<&str>) -> String {
    let path = format!("{}/notes/{}", user_path(user), urlencode(note_id));
    match agent {
        Some(agent) => format!("{path}?agent={}", urlencode(agent)),
        None => path,
    }
}

pub fn users(
    users: &[UserMemory],
    total: usize,
    passes: &[PassReport],
    csrf: &str,
    now: Now,
) -> Page {
    let body = html! {
        form #memory-user method="get" action="/ui/memory" {
            label for="user" { "User id" }
            input #user name="user" required;
            button type="submit" { "Open" }
        }
        @if users.is_empty() {
            p #no-users { "No user has notes or conversations yet." }
        } @else {
            p.hint { (total) " user(s) with memory"
                @if total > users.len() { "; the " (users.len()) " most recently active shown" } "." }
            table #users {
                thead { tr { th { "User" } th { "Notes" } th { "Sessions" } th { "Last change" } } }
                tbody {
                    @for u in users {
                        tr {
                            td { a href=(user_path(&u.user_id)) { code { (visible(&u.user_id)) } } }
                            td { (u.notes) }
                            td { (u.sessions) }
                            td { (at(u.last_active_at, now)) }
                        }
                    }
                }
            }
        }
        (passes_table(passes, now))
    };
    layout("Memory", Some(csrf), Script::None, body)
}

/// The overnight passes, newest first, each with what it counted.
fn passes_table(passes: &[PassReport], now: Now) -> Markup {
    html! {
        h2 #passes { "Overnight passes" }
        @if passes.is_empty() { p.hint { "No pass has run yet." } } @else {
            p.hint { "The " (passes.len()) " newest, over every user (" code { "nightshift consolidate status" } " lists more)." }
            table #pass-list {
                thead { tr { th { "Pass" } th { "Status" } th { "Started" } th { "Took" } th { "Counts" } } }
                tbody {
                    @for pass in passes {
                        tr {
                            td { (pass.pass) }
                            td.status { (badge(&pass.status)) }
                            td { (at(pass.started_at, now)) }
                            td { @if let Some(end) = pass.finished_at { (duration(end - pass.started_at)) } @else { "—" } }
                            td {
                                (pass_counts(&pass.counts))
                                @if let Some(error) = &pass.error { br; span.error { (visible(error)) } }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A pass's counts as `name n, name n`, those of zero left out.
fn pass_counts(counts: &serde_json::Value) -> String {
    let Some(counts) = counts.as_object() else {
        return String::new();
    };
    let shown: Vec<String> = counts
        .iter()
        .filter(|(_, n)| n.as_i64() != Some(0))
        .map(|(name, n)| format!("{} {n}", visible(name)))
        .collect();
    if shown.is_empty() {
        "nothing to do".to_string()
    } else {
        shown.join(", ")
    }
}

/// What one user's page shows.
pub struct UserMemoryPage {
    pub user: String,
    pub agent: Option<String>,
    /// The newest notes, and how many there are.
    pub notes: Vec<Note>,
    pub note_count: i64,
    pub sessions: Vec<Session>,
    pub state: Vec<StateEntry>,
    pub artifacts: Vec<Artifact>,
    /// Their notes and chunks over the last days.
    pub growth: Vec<DayOfMemory>,
}

pub fn user(page: &UserMemoryPage, csrf: &str, now: Now) -> Page {
    let user = &page.user;
    let agent = page.agent.as_deref();
    let base = user_path(user);
    let body = html! {
        form #memory-agent method="get" action=(base) {
            label for="agent" { "Notes as agent (blank: the shared notes only)" }
            input #agent name="agent" value=(agent.unwrap_or(""));
            button type="submit" { "Show" }
            " " a href={ "/ui/search?user=" (urlencode(user)) "&agent=" (urlencode(agent.unwrap_or(""))) } { "Search this memory" }
        }
        (super::trend_charts::memory_growth(&page.growth))
        h2 #notes { "Notes (" (page.note_count) ")" }
        @if page.note_count > page.notes.len() as i64 { p.hint { "The " (page.notes.len()) " most recently changed; search finds the others." } }
        @if page.notes.is_empty() { p.hint { "No notes." } } @else {
            table {
                thead { tr { th { "Note" } th { "Tags" } th { "Category" } th { "Source" } th { "Changed" } } }
                tbody {
                    @for note in &page.notes {
                        tr {
                            td.goal {
                                a href=(note_path(user, &note.note_id, agent)) { code { (visible(&note.note_id)) } }
                                @if let Some(owner) = &note.agent_id { " " span.hint { "agent " (visible(owner)) } }
                                br; (head_text(&note.content))
                            }
                            td { (visible(&note.tags.join(", "))) }
                            td { (visible(note.category.as_deref().unwrap_or("—"))) }
                            td { (visible(&note.source)) }
                            td { (at(note.updated_at, now)) }
                        }
                    }
                }
            }
        }
        h2 #sessions { "Sessions (" (page.sessions.len()) ")" }
        @if page.sessions.len() > LISTED { p.hint { "The " (LISTED) " most recently active." } }
        @if page.sessions.is_empty() { p.hint { "No sessions." } } @else {
            table {
                thead { tr { th { "Session" } th { "Kind" } th { "Events" } th { "Last event" } } }
                tbody {
                    @for s in page.sessions.iter().take(LISTED) {
                        tr {
                            td.goal {
                                a href={ (base) "/sessions/" (urlencode(&s.session_id)) } { code { (visible(&s.session_id)) } }
                                @if let Some(title) = &s.title { br; (visible(title)) }
                            }
                            td { (s.kind.as_str()) }
                            td { (s.last_sequence) }
                            td { (at(s.updated_at, now)) }
                        }
                    }
                }
            }
        }
        h2 #state { "State (" (page.state.len()) ")" }
        (state_table(&page.state, now, &TextBudget::new()))
        h2 #artifacts { "Artifacts (" (page.artifacts.len()) ")" }
        @if page.artifacts.len() > LISTED { p.hint { "The " (LISTED) " newest." } }
        @if page.artifacts.is_empty() { p.hint { "No artifacts." } } @else {
            table {
                thead { tr { th { "Name" } th { "Type" } th { "Size" } th { "Made by" } th { "Stored" } } }
                tbody {
                    @for a in page.artifacts.iter().take(LISTED) {
                        tr {
                            td { a href={ (base) "/artifacts/" (urlencode(&a.artifact_id)) } download { (visible(&a.name)) } }
                            td { code { (visible(&a.mime_type)) } }
                            td { (bytes(a.size)) }
                            td { @if let Some(run) = &a.run_id { a href={ "/ui/runs/" (urlencode(run)) } { "run " code { (visible(run)) } } } @else { "—" } }
                            td { (at(a.created_at, now)) }
                        }
                    }
                }
            }
        }
    };
    layout(
        &format!("Memory of {}", visible(user)),
        Some(csrf),
        Script::None,
        body,
    )
}

fn state_table(entries: &[StateEntry], now: Now, budget: &TextBudget) -> Markup {
    html! {
        @if entries.is_empty() { p.hint { "No keys." } } @else {
            table {
                thead { tr { th { "Key" } th { "Value" } th { "Version" } th { "Written" } } }
                tbody {
                    @for e in entries {
                        tr {
                            td { code { (visible(&e.key)) } }
                            td.goal { (long_text(&e.value.to_string(), budget)) }
                            td { (e.version) }
                            td { (at(e.updated_at, now)) }
                        }
                    }
                }
            }
        }
    }
}

/// A size in bytes as a person reads it.
fn bytes(size: i64) -> String {
    match size {
        ..1_024 => format!("{size} B"),
        1_024..1_048_576 => format!("{:.1} KiB", size as f64 / 1_024.0),
        _ => format!("{:.1} MiB", size as f64 / 1_048_576.0),
    }
}

/// What a note's page shows: its versions, and the two compared.
pub struct NotePage<'a> {
    pub user: &'a str,
    pub agent: Option<&'a str>,
    pub note_id: &'a str,
    /// Oldest first, never empty.
    pub versions: &'a [NoteVersion],
    /// None when `to` is the first version.
    pub from: Option<i64>,
    pub to: i64,
}

pub fn note(page: &NotePage, csrf: &str, now: Now) -> Page {
    let (user, agent) = (page.user, page.agent);
    let newest = page.versions.last();
    let current = newest.filter(|v| !matches!(v.change.as_str(), "deleted" | "superseded"));
    let find = |n: i64| page.versions.iter().find(|v| v.version == n);
    let restore = format!("{}/restore", note_path(user, page.note_id, None));
    let body = html! {
        p { a href={ (user_path(user)) @if let Some(a) = agent { "?agent=" (urlencode(a)) } } { "← Memory of " (visible(user)) } }
        @match current {
            Some(v) => { p { (badge("active")) " version " (v.version) " is the note now." } }
            None => { p { (badge("cancelled")) " The note is " (newest.map_or("gone", |v| v.change.as_str())) "; any version below can be restored." } }
        }
        h2 { "Versions" }
        table #versions {
            thead { tr { th { "Version" } th { "Change" } th { "By" } th { "When" } th { "Tags" } th { "Category" } th { "" } } }
            tbody {
                @for v in page.versions.iter().rev() {
                    tr {
                        td { (v.version) }
                        td { (v.change.as_str()) }
                        td { code { (visible(&v.changed_by)) } }
                        td { (at(v.changed_at, now)) }
                        td { (visible(&v.tags.join(", "))) }
                        td { (visible(v.category.as_deref().unwrap_or("—"))) }
                        td {
                            @if current.is_none_or(|c| c.version != v.version) {
                                (action_button_with(&restore, "Restore", csrf, &[("version", &v.version.to_string()), ("agent", agent.unwrap_or(""))]))
                            }
                        }
                    }
                }
            }
        }
        h2 { "Compare" }
        form #compare method="get" action=(note_path(user, page.note_id, None)) {
            @if let Some(a) = agent { input type="hidden" name="agent" value=(a); }
            label for="from" { "From version" }
            select #from name="from" { @for v in page.versions { option value=(v.version) selected[Some(v.version) == page.from] { (v.version) } } }
            label for="to" { "To version" }
            select #to name="to" { @for v in page.versions { option value=(v.version) selected[v.version == page.to] { (v.version) } } }
            p { button type="submit" { "Compare" } }
        }
        @match (page.from.and_then(find), find(page.to)) {
            (Some(from), Some(to)) => { (diff(from, to)) }
            (_, Some(to)) => {
                p.hint { "Version " (to.version) " is the first: there is nothing before it." }
                div.text { (visible(&to.content)) }
            }
            (_, None) => {}
        }
    };
    layout(
        &format!("Note {}", visible(page.note_id)),
        Some(csrf),
        Script::None,
        body,
    )
}

/// Version `from` against `to`, word by word: what was taken out struck through, what was
/// put in underlined (HTML's `del` and `ins`, which say so without colour). A diff that
/// would take longer than [`DIFF_DEADLINE`] settles for a coarser one, never a wrong one.
fn diff(from: &NoteVersion, to: &NoteVersion) -> Markup {
    let words = TextDiff::configure()
        .timeout(DIFF_DEADLINE)
        .diff_words(from.content.as_str(), to.content.as_str());
    let (mut removed, mut added) = (0usize, 0usize);
    for change in words.iter_all_changes() {
        let counted = !change.value().trim().is_empty();
        match change.tag() {
            ChangeTag::Delete if counted => removed += 1,
            ChangeTag::Insert if counted => added += 1,
            _ => {}
        }
    }
    let tags = (from.tags != to.tags).then(|| (from.tags.join(", "), to.tags.join(", ")));
    let category = (from.category != to.category).then(|| {
        (
            from.category.clone().unwrap_or_default(),
            to.category.clone().unwrap_or_default(),
        )
    });
    html! {
        p #diff-summary { "Version " (from.version) " → " (to.version) ": "
            @if removed + added == 0 { "the same words" } @else { (removed) " word(s) taken out, " (added) " put in" } "." }
        @if let Some((old, new)) = tags { p { "Tags: " del { "− " (visible(&old)) } " " ins { "+ " (visible(&new)) } } }
        @if let Some((old, new)) = category { p { "Category: " del { "− " (visible(&old)) } " " ins { "+ " (visible(&new)) } } }
        div.text.diff #diff {
            @for change in words.iter_all_changes() {
                @match change.tag() {
                    ChangeTag::Equal => { (visible(change.value())) }
                    ChangeTag::Delete => { del title="taken out" { (visible(change.value())) } }
                    ChangeTag::Insert => { ins title="put in" { (visible(change.value())) } }
                }
            }
        }
    }
}

/// What a session's page shows.
pub struct SessionPage {
    pub session: Session,
    /// Its last events, oldest first.
    pub events: Vec<Event>,
    /// How many of the last events the page shows at most.
    pub shown: usize,
    pub summary: SummaryState,
    pub state: Vec<StateEntry>,
}

pub fn session(page: &SessionPage, csrf: &str, now: Now) -> Page {
    let s = &page.session;
    let budget = TextBudget::new();
    let body = html! {
        p { a href=(user_path(&s.user_id)) { "← Memory of " (visible(&s.user_id)) } " · "
            a href={ "/ui/search?user=" (urlencode(&s.user_id)) "&session=" (urlencode(&s.session_id)) } { "Search this conversation" } }
        dl {
            dt { "Kind" } dd { (s.kind.as_str()) }
            @if let Some(title) = &s.title { dt { "Title" } dd { (visible(title)) } }
            dt { "Started" } dd { (at(s.created_at, now)) }
            dt { "Last event" } dd { (at(s.updated_at, now)) }
            dt { "Events" } dd { (s.last_sequence) }
        }
        h2 { "Summary" }
        @match &page.summary.summary {
            Some(summary) => {
                p.hint { "Up to event " (page.summary.upper_sequence) ", written " (at(page.summary.updated_at, now)) "." }
                div.text { (visible(summary)) }
            }
            None => { p.hint { "Not summarised yet." } }
        }
        h2 { "Events" }
        @if page.events.is_empty() { p.hint { "No events." } } @else {
            @if s.last_sequence > page.shown as i64 { p.hint { "The last " (page.shown) " of " (s.last_sequence) "." } }
            table #events {
                thead { tr { th { "#" } th { "Who" } th { "What" } th { "When" } } }
                tbody {
                    @for e in &page.events {
                        tr {
                            td { (e.sequence) }
                            td { (e.role.as_str()) @if let Some(name) = &e.name { br; span.hint { (visible(name)) } } }
                            td.goal { (long_text(&e.content, &budget)) }
                            td { (at(e.created_at, now)) }
                        }
                    }
                }
            }
        }
        h2 { "State" }
        (state_table(&page.state, now, &budget))
    };
    layout(
        &format!("Session {}", visible(&s.session_id)),
        Some(csrf),
        Script::None,
        body,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Any size reads with a unit, never a minus sign but a negative size's own.
        #[test]
        fn every_size_reads_with_its_unit(size in any::<i64>()) {
            let text = bytes(size);
            prop_assert!(text.ends_with(" B") || text.ends_with(" KiB") || text.ends_with(" MiB"), "{}", text);
        }

        /// Any text is shown whole, or as its head with the rest (to `WHOLE_CHARS`) behind a
        /// click while the page's budget lasts, and as its head alone after.
        #[test]
        fn long_text_shows_its_head_and_then_its_rest(text in any::<String>(), spent in any::<bool>()) {
            let budget = TextBudget::new();
            if spent {
                budget.0.set(0);
            }
            let page = long_text(&text, &budget).into_string();
            let shown = visible(&text);
            let head = crate::text::truncate_chars(&shown, HEAD_CHARS);
            let escaped = |t: &str| maud::html! { (t) }.into_string();
            prop_assert!(page.contains(&escaped(head)));
            let whole = crate::text::truncate_chars(&shown, WHOLE_CHARS);
            let rest = &whole[head.len()..];
            if !rest.is_empty() {
                if spent {
                    prop_assert!(!page.contains("<details>"), "{}", page);
                } else {
                    prop_assert!(page.contains(&format!("<div class=\"text\">{}</div>", escaped(rest))), "{}", page);
                }
            }
        }
    }
}
