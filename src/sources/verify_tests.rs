use super::*;
use axum::http::HeaderValue;
use proptest::prelude::*;

fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
    let mut map = HeaderMap::new();
    for (name, value) in pairs {
        map.insert(*name, HeaderValue::from_str(value).unwrap());
    }
    map
}

fn verifier(scheme: SourceVerify, secret: &str) -> Verifier {
    Verifier::new(scheme, secret, 300).unwrap()
}

/// GitHub's documented example ("Validating webhook deliveries"): the secret
/// "It's a Secret to Everybody" and the payload "Hello, World!".
#[test]
fn githubs_documented_example_verifies() {
    let v = verifier(SourceVerify::Github, "It's a Secret to Everybody");
    let signed = headers(&[
        (
            "x-hub-signature-256",
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17",
        ),
        ("x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958"),
    ]);
    // Known by its body: the same body under another X-GitHub-Delivery is the same.
    let known_as = v.verify(&signed, b"Hello, World!", 0).unwrap().delivery_id;
    assert_eq!(
        known_as,
        Some("sha256:dffd6021bb2bd5b0af676290809ec3a53191dd81c7f70a4b28688a362182986f".into())
    );
    assert!(matches!(
        v.verify(&signed, b"Hello, World?", 0),
        Err(SourceError::Refused(_))
    ));
    let other = verifier(SourceVerify::Github, "another secret");
    assert!(other.verify(&signed, b"Hello, World!", 0).is_err());
    // The older SHA-1 header alone is not enough.
    let sha1 = headers(&[(
        "x-hub-signature",
        "sha1=01dc10d0c83e72ed246219cdd91669667fe2ca59",
    )]);
    assert!(v.verify(&sha1, b"Hello, World!", 0).is_err());
}

/// Slack's documented example ("Verifying requests from Slack"): a slash command's body,
/// timestamp 1531420618 and its signature.
#[test]
fn slacks_documented_example_verifies_while_fresh() {
    let body = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
    let v = verifier(SourceVerify::Slack, "8f742231b10e8888abcd99yyyzzz85a5");
    let signed = headers(&[
        ("x-slack-request-timestamp", "1531420618"),
        (
            "x-slack-signature",
            "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503",
        ),
    ]);
    let at = 1531420618;
    assert!(v.verify(&signed, body.as_bytes(), at + 300).is_ok());
    let stale = v.verify(&signed, body.as_bytes(), at + 301).unwrap_err();
    assert!(stale.to_string().contains("301 s ago"), "{stale}");
    assert!(v.verify(&signed, body.as_bytes(), at - 301).is_err());
    let mut tampered = body.to_string();
    tampered.push('x');
    assert!(v.verify(&signed, tampered.as_bytes(), at).is_err());
}

/// The Standard Webhooks spec's example, as the scheme's libraries test it.
#[test]
fn the_standard_schemes_example_verifies_and_a_rolled_list_is_read() {
    let v = verifier(
        SourceVerify::Standard,
        "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
    );
    let body = br#"{"test": 2432232314}"#;
    let signed = |signature: &str| {
        headers(&[
            ("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek"),
            ("webhook-timestamp", "1614265330"),
            ("webhook-signature", signature),
        ])
    };
    let good = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";
    assert_eq!(
        v.verify(&signed(good), body, 1614265330)
            .unwrap()
            .delivery_id,
        Some("msg_p5jXN8AQM9LWM0D4loKWxJek".into())
    );
    let rolled = format!("v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc= {good}");
    assert!(v.verify(&signed(&rolled), body, 1614265330).is_ok());
    assert!(v
        .verify(
            &signed("v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc="),
            body,
            1614265330
        )
        .is_err());
    assert!(v.verify(&signed(good), body, 1614265330 + 301).is_err());
    assert!(Verifier::new(SourceVerify::Standard, "not-whsec", 300).is_err());
}

/// Stripe's scheme: `t=…,v1=…` (several v1 while a secret rolls), over `t.body` under the
/// secret's own text.
#[test]
fn stripes_scheme_takes_any_listed_signature_and_holds_the_tolerance() {
    let secret = "whsec_test_secret";
    let v = verifier(SourceVerify::Stripe, secret);
    let body = br#"{"id": "evt_test_webhook", "object": "event"}"#;
    let sign = |t: i64, key: &str| {
        let mut mac = mac(key.as_bytes());
        mac.update(format!("{t}.").as_bytes());
        mac.update(body);
        hex::encode(mac.finalize().into_bytes())
    };
    let t = 1_700_000_000;
    let header = format!(
        "t={t},v1={},v1={},v0=ignored",
        sign(t, "old"),
        sign(t, secret)
    );
    let signed = headers(&[("stripe-signature", &header)]);
    assert!(v.verify(&signed, body, t).is_ok());
    assert!(v.verify(&signed, body, t + 301).is_err());
    let only_old = headers(&[("stripe-signature", &format!("t={t},v1={}", sign(t, "old")))]);
    assert!(v.verify(&only_old, body, t).is_err());
    // The timestamp is signed: moving it breaks the signature.
    let moved = headers(&[(
        "stripe-signature",
        &format!("t={},v1={}", t + 10, sign(t, secret)),
    )]);
    assert!(v.verify(&moved, body, t).is_err());
}

#[test]
fn bearer_takes_its_token_only_and_reads_an_idempotency_key() {
    let v = verifier(SourceVerify::Bearer, "s3cret-token");
    let ok = headers(&[
        ("authorization", "Bearer s3cret-token"),
        ("idempotency-key", "form-42"),
    ]);
    assert_eq!(
        v.verify(&ok, b"{}", 0).unwrap().delivery_id,
        Some("form-42".into())
    );
    let shouted = headers(&[("authorization", "BEARER s3cret-token")]);
    assert!(v.verify(&shouted, b"{}", 0).is_ok());
    for wrong in [
        "Bearer",
        "Bearer s3cret-toke",
        "Bearer s3cret-token2",
        "Basic czNjcmV0",
        "",
    ] {
        let h = headers(&[("authorization", wrong)]);
        assert!(v.verify(&h, b"{}", 0).is_err(), "{wrong}");
    }
    assert!(v.verify(&HeaderMap::new(), b"{}", 0).is_err());
}

#[test]
fn a_refusal_never_shows_the_secret() {
    for scheme in [
        SourceVerify::Github,
        SourceVerify::Stripe,
        SourceVerify::Slack,
        SourceVerify::Bearer,
    ] {
        let v = verifier(scheme, "very-secret-value");
        let h = headers(&[
            ("authorization", "Bearer nope"),
            ("x-hub-signature-256", "sha256=00"),
            ("stripe-signature", "t=1,v1=00"),
            ("x-slack-signature", "v0=00"),
            ("x-slack-request-timestamp", "1"),
        ]);
        let err = v.verify(&h, b"body", 1).unwrap_err().to_string();
        assert!(!err.contains("very-secret-value"), "{err}");
    }
}

proptest! {
    /// Whatever headers and body arrive, a verifier answers (no panic), and refuses all
    /// but the signed delivery.
    #[test]
    fn any_delivery_is_answered_and_a_forged_one_refused(
        signature in "\\PC{0,100}",
        timestamp in "\\PC{0,20}",
        body in proptest::collection::vec(any::<u8>(), 0..256),
        now in any::<i64>(),
    ) {
        for scheme in [
            SourceVerify::Github,
            SourceVerify::Stripe,
            SourceVerify::Slack,
            SourceVerify::Standard,
            SourceVerify::Bearer,
        ] {
            let secret = if scheme == SourceVerify::Standard {
                "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
            } else {
                "a-secret"
            };
            let v = verifier(scheme, secret);
            let mut h = HeaderMap::new();
            if let Ok(value) = HeaderValue::from_str(&signature) {
                for name in ["x-hub-signature-256", "stripe-signature", "x-slack-signature",
                             "webhook-signature", "authorization"] {
                    h.insert(name, value.clone());
                }
            }
            if let Ok(value) = HeaderValue::from_str(&timestamp) {
                h.insert("x-slack-request-timestamp", value.clone());
                h.insert("webhook-timestamp", value);
            }
            h.insert("webhook-id", HeaderValue::from_static("msg_1"));
            h.insert("x-github-delivery", HeaderValue::from_static("d1"));
            prop_assert!(v.verify(&h, &body, now).is_err());
        }
    }

    /// A timestamp is fresh exactly within the tolerance, either way, at every instant.
    #[test]
    fn freshness_holds_the_tolerance(at in any::<i64>(), now in any::<i64>(), tolerance in 1u64..=86_400) {
        let v = Verifier::new(SourceVerify::Slack, "k", tolerance).unwrap();
        let fresh = v.fresh(&at.to_string(), now).is_ok();
        let skew = (now as i128 - at as i128).unsigned_abs();
        // Past i64's range the difference saturates, and is far outside any tolerance.
        prop_assert_eq!(fresh, skew <= tolerance as u128);
    }
}
