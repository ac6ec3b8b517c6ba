//! An email channel's server as its URL names it: `smtp[s]://[USER@]HOST[:PORT][?tls=…]`.
//! A value type below the config (which checks it) and the channel (which connects with
//! it), so both read a URL the same way.

/// How the connection is secured, as the URL says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Security {
    StartTls,
    Tls,
    None,
}

/// The server a URL names: `smtp[s]://[USER@]HOST[:PORT][?tls=none|starttls]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SmtpServer {
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    pub security: Security,
}

/// Whether `host` is this machine.
fn is_loopback(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// Reads an email channel's URL, saying what is wrong with one that is not usable.
pub fn parse(text: &str) -> Result<SmtpServer, String> {
    let url = reqwest::Url::parse(text).map_err(|e| format!("not a URL: {e}"))?;
    let tls = url
        .query_pairs()
        .find(|(key, _)| key == "tls")
        .map(|(_, value)| value.into_owned());
    if let Some((key, _)) = url.query_pairs().find(|(key, _)| key != "tls") {
        return Err(format!("unknown parameter `{key}`: only `tls` is read"));
    }
    let security = match (url.scheme(), tls.as_deref()) {
        ("smtp", None | Some("starttls")) => Security::StartTls,
        ("smtp", Some("none")) => Security::None,
        ("smtps", None) => Security::Tls,
        ("smtp" | "smtps", Some(other)) => {
            return Err(format!(
                "`tls={other}` is not one of starttls (smtp://, the default) or none (a local \
                 relay only); smtps:// is TLS from the start"
            ))
        }
        (scheme, _) => {
            return Err(format!(
                "`{scheme}://` is not an SMTP URL: use smtp:// (STARTTLS) or smtps:// (TLS)"
            ))
        }
    };
    // An IPv6 address without its brackets, as a connection wants it.
    let host = url
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or("the URL names no server")?
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    if security == Security::None && !is_loopback(&host) {
        return Err(format!(
            "`tls=none` sends mail and any password in the clear: only for a relay on this \
             machine (127.0.0.1, ::1, localhost), not `{host}`"
        ));
    }
    if url.password().is_some() {
        return Err("put the password in secret_env or secret_file, not in the URL".into());
    }
    let user = match url.username() {
        "" => None,
        user => Some(
            percent_encoding::percent_decode_str(user)
                .decode_utf8()
                .map_err(|_| "the user name is not UTF-8")?
                .into_owned(),
        ),
    };
    let port = url.port().unwrap_or(match security {
        Security::StartTls => 587,
        Security::Tls => 465,
        Security::None => 25,
    });
    Ok(SmtpServer {
        host,
        port,
        user,
        security,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_say_how_the_connection_is_secured() {
        let server = parse("smtp://robot%40example.org@mail.example.org").unwrap();
        assert_eq!(server.security, Security::StartTls);
        assert_eq!(server.port, 587);
        assert_eq!(server.user.as_deref(), Some("robot@example.org"));
        let server = parse("smtps://mail.example.org").unwrap();
        assert_eq!((server.security, server.port), (Security::Tls, 465));
        let server = parse("smtp://127.0.0.1:2525?tls=none").unwrap();
        assert_eq!((server.security, server.port), (Security::None, 2525));
        let server = parse("smtp://[::1]:2525?tls=none").unwrap();
        assert_eq!(server.host, "::1");
        for (url, says) in [
            ("http://mail.example.org", "not an SMTP URL"),
            ("smtp://mail.example.org?tls=maybe", "tls=maybe"),
            ("smtps://mail.example.org?tls=none", "tls=none"),
            ("smtp://me:pw@mail.example.org", "secret_env"),
            ("smtp://mail.example.org?from=x", "unknown parameter"),
            ("smtp:///", "names no server"),
            ("mail.example.org", "not a URL"),
            ("smtp://mail.example.org:25?tls=none", "in the clear"),
        ] {
            let err = parse(url).unwrap_err();
            assert!(err.contains(says), "{url}: {err}");
        }
    }

    proptest::proptest! {
        /// Any text: a server or an error, never a panic; a server has a host and says
        /// how it is secured as its scheme does.
        #[test]
        fn any_text_is_a_server_or_an_error(
            text in proptest::prop_oneof![
                "\\PC{0,40}",
                "smtps?://[a-z0-9.%@:]{0,24}(\\?tls=[a-z]{0,10})?",
            ]
        ) {
            if let Ok(server) = parse(&text) {
                proptest::prop_assert!(!server.host.is_empty());
                let scheme = reqwest::Url::parse(&text).map(|u| u.scheme().to_string());
                proptest::prop_assert_eq!(server.security == Security::Tls, scheme.as_deref() == Ok("smtps"));
            }
        }
    }
}
