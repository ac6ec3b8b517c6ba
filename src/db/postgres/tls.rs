//! TLS to PostgreSQL, set in the URL as libpq sets it: `sslmode` and `sslrootcert`.
//!
//! tokio-postgres reads neither `sslmode=verify-full` nor `sslrootcert`, and a URL copied
//! from a managed offering holds both, so they are read here and the rest of the URL goes
//! to the driver. With TLS on, the server's certificate is always checked, its name
//! included (libpq's `verify-full`), against `sslrootcert` when set, else the system's
//! roots: an encrypted connection to a server nobody vouched for would only look safe.

use std::path::PathBuf;
use std::sync::Arc;

use tokio_postgres_rustls::MakeRustlsConnect;
use tokio_rustls::rustls;

/// How a connection is made, from the URL's TLS options.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsOptions {
    /// `sslmode=require`, `verify-ca` or `verify-full`: TLS or no connection.
    pub required: bool,
    /// `sslrootcert`: the certificates that vouch for the server (PEM), instead of the
    /// system's roots.
    pub root_cert: Option<PathBuf>,
}

/// libpq's TLS options nightshift does not offer, with why.
const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "sslcert",
        "client certificates are not supported: use a password",
    ),
    (
        "sslkey",
        "client certificates are not supported: use a password",
    ),
    (
        "sslpassword",
        "client certificates are not supported: use a password",
    ),
    ("sslcrl", "certificate revocation lists are not supported"),
    (
        "sslcrldir",
        "certificate revocation lists are not supported",
    ),
];

/// Splits the TLS options out of a `postgresql://` URL: the URL for the driver (without
/// them) and the options. A URL without a query comes back as it is.
pub fn split_url(url: &str) -> Result<(String, TlsOptions), String> {
    let mut options = TlsOptions {
        required: false,
        root_cert: None,
    };
    let Some((base, query)) = url.split_once('?') else {
        return Ok((url.to_string(), options));
    };
    let mut kept = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        let decoded = percent_encoding::percent_decode_str(value)
            .decode_utf8()
            .map_err(|_| format!("the URL's `{key}` is not UTF-8 once decoded"))?;
        match key {
            "sslmode" => {
                options.required = match decoded.as_ref() {
                    "disable" | "allow" | "prefer" => false,
                    "require" | "verify-ca" | "verify-full" => true,
                    other => {
                        return Err(format!(
                            "the URL's sslmode `{other}` is not one of disable, allow, \
                             prefer, require, verify-ca, verify-full"
                        ))
                    }
                }
            }
            "sslrootcert" if decoded.is_empty() => {
                return Err("the URL's sslrootcert is empty: name a PEM file".into())
            }
            "sslrootcert" if decoded == "system" => options.root_cert = None,
            "sslrootcert" => options.root_cert = Some(PathBuf::from(decoded.as_ref())),
            key => match UNSUPPORTED.iter().find(|(name, _)| *name == key) {
                Some((name, why)) => return Err(format!("the URL's `{name}`: {why}")),
                None => kept.push(pair),
            },
        }
    }
    if options.root_cert.is_some() && !options.required {
        return Err(
            "the URL names an sslrootcert but no sslmode that uses it: add \
             sslmode=verify-full"
                .into(),
        );
    }
    let url = if kept.is_empty() {
        base.to_string()
    } else {
        format!("{base}?{}", kept.join("&"))
    };
    Ok((url, options))
}

/// The connector for `options`: `None` for plain connections.
pub fn connector(options: &TlsOptions) -> Result<Option<MakeRustlsConnect>, String> {
    if !options.required {
        return Ok(None);
    }
    let mut roots = rustls::RootCertStore::empty();
    match &options.root_cert {
        Some(path) => {
            let pem = std::fs::read(path)
                .map_err(|e| format!("cannot read sslrootcert {}: {e}", path.display()))?;
            let mut found = 0;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert = cert.map_err(|e| {
                    format!(
                        "sslrootcert {} is not PEM certificates: {e}",
                        path.display()
                    )
                })?;
                roots.add(cert).map_err(|e| {
                    format!(
                        "sslrootcert {} holds a certificate rustls refuses: {e}",
                        path.display()
                    )
                })?;
                found += 1;
            }
            if found == 0 {
                return Err(format!(
                    "sslrootcert {} holds no PEM certificate",
                    path.display()
                ));
            }
        }
        None => {
            let native = rustls_native_certs::load_native_certs()
                .map_err(|e| format!("cannot read the system's root certificates: {e}"))?;
            let (added, _ignored) = roots.add_parsable_certificates(native);
            if added == 0 {
                return Err(
                    "the system has no root certificates to check the server's against: \
                     name the server's CA in the URL's sslrootcert"
                        .into(),
                );
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Some(MakeRustlsConnect::new(config)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn libpq_tls_options_are_read_and_the_rest_kept() {
        let (url, options) = split_url(
            "postgresql://u@h:5432/db?application_name=x&sslmode=verify-full&sslrootcert=%2Fetc%2Fca.pem&connect_timeout=3",
        )
        .unwrap();
        assert_eq!(
            url,
            "postgresql://u@h:5432/db?application_name=x&connect_timeout=3"
        );
        assert!(options.required);
        assert_eq!(options.root_cert, Some(PathBuf::from("/etc/ca.pem")));

        let (url, options) = split_url("postgresql://u@h/db?sslmode=prefer").unwrap();
        assert_eq!(url, "postgresql://u@h/db");
        assert!(!options.required);
    }

    #[test]
    fn bad_tls_options_name_the_option() {
        for (url, needle) in [
            (
                "postgresql://u@h/db?sslmode=sometimes",
                "sslmode `sometimes`",
            ),
            (
                "postgresql://u@h/db?sslmode=require&sslcert=/c.pem",
                "sslcert",
            ),
            (
                "postgresql://u@h/db?sslrootcert=/ca.pem",
                "sslmode=verify-full",
            ),
            ("postgresql://u@h/db?sslmode=require&sslrootcert=", "empty"),
            ("postgresql://u@h/db?sslmode=%FF", "UTF-8"),
        ] {
            let err = split_url(url).unwrap_err();
            assert!(err.contains(needle), "{url}: {err}");
        }
    }

    #[test]
    fn a_missing_or_empty_root_certificate_file_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("nope.pem");
        let err = connector(&TlsOptions {
            required: true,
            root_cert: Some(missing.clone()),
        })
        .err()
        .unwrap();
        assert!(err.contains(&missing.display().to_string()), "{err}");
        let empty = dir.path().join("empty.pem");
        std::fs::write(&empty, "not a certificate\n").unwrap();
        let err = connector(&TlsOptions {
            required: true,
            root_cert: Some(empty),
        })
        .err()
        .unwrap();
        assert!(err.contains("no PEM certificate"), "{err}");
    }

    proptest! {
        /// Any query: options read or an error naming one; whatever is kept is a part of
        /// the original query, in order, and holds no TLS option.
        #[test]
        fn any_query_splits_or_names_an_option(query in "[a-z&=%0-9A-F/._-]{0,60}") {
            let url = format!("postgresql://u@h/db?{query}");
            match split_url(&url) {
                Ok((kept, _)) => {
                    let rest = kept.strip_prefix("postgresql://u@h/db").unwrap();
                    let rest = rest.strip_prefix('?').unwrap_or(rest);
                    let original: Vec<&str> = query.split('&').collect();
                    let mut at = 0;
                    for pair in rest.split('&').filter(|p| !p.is_empty()) {
                        let key = pair.split('=').next().unwrap_or_default();
                        prop_assert!(key != "sslmode" && key != "sslrootcert", "{pair} kept");
                        let found = original[at..].iter().position(|p| *p == pair);
                        prop_assert!(found.is_some(), "{pair} not in {query}");
                        at += found.unwrap() + 1;
                    }
                }
                Err(err) => prop_assert!(err.contains("the URL"), "{err}"),
            }
        }
    }
}
