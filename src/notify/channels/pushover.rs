//! Pushover's message API (`POST /1/messages.json`, a form): the application's token, the
//! user's or group's key (the channel context), a title, the message and the run's link,
//! within Pushover's limits (title 250, message 1,024, URL 512 characters). A failure goes
//! at the channel's `priority` (default 1); priority 2 is an emergency, repeated every
//! `EMERGENCY_RETRY_SECS` until acknowledged or `EMERGENCY_EXPIRE_SECS` pass, and
//! Pushover answers it with a receipt, logged so the operator can follow it.

use super::card::{cut, Card};

pub const DEFAULT_URL: &str = "https://api.pushover.net/1/messages.json";
pub const DEFAULT_FAILURE_PRIORITY: i64 = 1;
const EMERGENCY: i64 = 2;
const EMERGENCY_RETRY_SECS: u32 = 60;
const EMERGENCY_EXPIRE_SECS: u32 = 3600;

/// The form fields for `card` to user `user` from application `token`.
pub fn form(
    card: &Card,
    token: &str,
    user: &str,
    failure_priority: i64,
) -> Vec<(&'static str, String)> {
    let priority = if card.failed { failure_priority } else { 0 };
    let message = if card.body.is_empty() {
        card.title.clone()
    } else {
        card.body.clone()
    };
    let mut form = vec![
        ("token", token.to_string()),
        ("user", user.to_string()),
        ("title", cut(&card.title, 250)),
        ("message", cut(&message, 1024)),
        ("priority", priority.to_string()),
    ];
    if let Some(url) = card.url.as_deref().filter(|url| url.len() <= 512) {
        form.push(("url", url.to_string()));
        form.push(("url_title", "Open the run".to_string()));
    }
    if priority == EMERGENCY {
        form.push(("retry", EMERGENCY_RETRY_SECS.to_string()));
        form.push(("expire", EMERGENCY_EXPIRE_SECS.to_string()));
    }
    form
}

/// Whether `key` can be a Pushover user or group key: 30 letters and digits.
pub fn is_key(key: &str) -> bool {
    key.len() == 30 && key.bytes().all(|b| b.is_ascii_alphanumeric())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn card(failed: bool) -> Card {
        Card {
            title: "Backup failed".into(),
            body: "x".repeat(2000),
            url: Some("https://ns.example.org/ui/runs/run_1".into()),
            failed,
        }
    }

    #[test]
    fn an_emergency_asks_to_be_repeated_and_expires() {
        let form = form(&card(true), "app", "u", 2);
        let get = |k: &str| form.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone());
        assert_eq!(get("priority").as_deref(), Some("2"));
        assert_eq!(get("retry").as_deref(), Some("60"));
        assert_eq!(get("expire").as_deref(), Some("3600"));
        assert_eq!(get("message").unwrap().chars().count(), 1024);
        let calm = super::form(&card(false), "app", "u", 2);
        assert!(calm
            .iter()
            .all(|(n, v)| *n != "retry" && (*n != "priority" || v == "0")));
    }
}
