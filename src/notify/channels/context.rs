//! What a channel context may be for each kind of channel. The context ends up in a URL
//! or a request, so nothing else gets through.

use super::{matrix, pushover};
use crate::config::ChannelKind;

/// Checks a channel context for its kind: a Telegram chat id (`-100123`, `@name`, with
/// `:THREAD` digits), an ntfy topic (letters, digits, `-` and `_`, at most 64). The context
/// ends up in a URL or a request, so nothing else gets through.
pub fn check_context(kind: ChannelKind, context: &str) -> Result<(), String> {
    let digits = |s: &str, max: usize| {
        !s.is_empty() && s.len() <= max && s.bytes().all(|b| b.is_ascii_digit())
    };
    match kind {
        ChannelKind::Telegram => {
            let (chat, thread) = match context.split_once(':') {
                Some((chat, thread)) => (chat, Some(thread)),
                None => (context, None),
            };
            let chat_ok = match chat.strip_prefix('@') {
                Some(name) => {
                    (5..=32).contains(&name.len())
                        && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                }
                None => digits(chat.strip_prefix('-').unwrap_or(chat), 20),
            };
            if !chat_ok || thread.is_some_and(|t| !digits(t, 20)) {
                return Err(format!(
                    "`{}` is not a Telegram chat: use a chat id (-100123) or @channelname, \
                     optionally :THREAD",
                    crate::input::printable(context)
                ));
            }
        }
        ChannelKind::Ntfy => slug(context, "an ntfy topic")?,
        ChannelKind::Email => {
            if context.parse::<lettre::message::Mailbox>().is_err()
                || context.contains(['<', '>', ','])
            {
                return Err(format!(
                    "`{}` is not an email address: use one address, such as alice@example.org",
                    crate::input::printable(context)
                ));
            }
        }
        ChannelKind::Discord => {
            if !digits(context, 20) {
                return Err(format!(
                    "`{}` is not a Discord thread id: use its digits",
                    crate::input::printable(context)
                ));
            }
        }
        ChannelKind::Pushover => {
            if !pushover::is_key(context) {
                return Err(format!(
                    "`{}` is not a Pushover user or group key: 30 letters and digits",
                    crate::input::printable(context)
                ));
            }
        }
        ChannelKind::Apprise => slug(context, "an Apprise tag")?,
        ChannelKind::Matrix => {
            if !matrix::is_room_id(context) {
                return Err(format!(
                    "`{}` is not a Matrix room id: use its id, `!…` (Room settings, Advanced)",
                    crate::input::printable(context)
                ));
            }
        }
        ChannelKind::Webhook | ChannelKind::Slack | ChannelKind::Teams | ChannelKind::Log => {
            crate::input::check_id("channel context", context).map_err(|e| e.reason)?;
        }
    }
    Ok(())
}

/// A name that goes into a URL path or a request as it is (an ntfy topic, an Apprise
/// tag): 1 to 64 letters, digits, `-` or `_`.
fn slug(context: &str, what: &str) -> Result<(), String> {
    let ok = (1..=64).contains(&context.len())
        && context
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "`{}` is not {what}: use 1 to 64 letters, digits, - or _",
            crate::input::printable(context)
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contexts_are_checked_for_their_channel() {
        for ok in ["-1001234567", "12345", "@my_channel", "-100123:42"] {
            assert!(check_context(ChannelKind::Telegram, ok).is_ok(), "{ok}");
        }
        for bad in ["", "abc", "-100:x", "@ab", "123/../x", "1 2"] {
            assert!(check_context(ChannelKind::Telegram, bad).is_err(), "{bad}");
        }
        assert!(check_context(ChannelKind::Ntfy, "alerts_1-a").is_ok());
        for bad in ["", "a/b", "../admin", "a?x=1", &"x".repeat(65)] {
            assert!(check_context(ChannelKind::Ntfy, bad).is_err(), "{bad}");
        }
    }
}
