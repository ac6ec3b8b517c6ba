//! Whether a finished run is worth telling the user about, and what to say.

pub use crate::spec::NotifyPolicy;

/// The text to send for a run that ended in `success` (or not), or `None` when the policy
/// says stay quiet. With the conditional policy the output must start with `marker`,
/// which is stripped.
pub fn run_message(
    policy: NotifyPolicy,
    success: bool,
    output: Option<&str>,
    previous_success: Option<&str>,
    marker: &str,
) -> Option<String> {
    let output = output.unwrap_or_default();
    match policy {
        NotifyPolicy::Never => None,
        // A digest tells every run, later and folded with the day's others.
        NotifyPolicy::Always | NotifyPolicy::Digest => Some(output.to_string()),
        NotifyPolicy::OnFailure => (!success).then(|| output.to_string()),
        NotifyPolicy::OnChange => {
            // A failure is always news; a success only when it differs from the last one.
            let changed = !success || previous_success.map(str::trim) != Some(output.trim());
            changed.then(|| output.to_string())
        }
        NotifyPolicy::Conditional => {
            let rest = output.trim_start().strip_prefix(marker)?;
            Some(rest.trim_start().to_string())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use NotifyPolicy::*;

    const SUCCEEDED: bool = true;
    const FAILED: bool = false;

    /// Policy, success, output, previous successful output, expected message.
    type Case<'a> = (
        NotifyPolicy,
        bool,
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
    );

    #[test]
    fn policy_matrix() {
        let m = "[NOTIFY]";
        let cases: &[Case] = &[
            (Always, SUCCEEDED, "ok", None, Some("ok")),
            (Always, FAILED, "", None, Some("")),
            (Digest, SUCCEEDED, "ok", Some("ok"), Some("ok")),
            (Digest, FAILED, "boom", None, Some("boom")),
            (Never, FAILED, "boom", None, None),
            (OnFailure, SUCCEEDED, "ok", None, None),
            (OnFailure, FAILED, "", None, Some("")),
            (OnFailure, FAILED, "", None, Some("")),
            (OnChange, SUCCEEDED, "42 items", Some("42 items"), None),
            (
                OnChange,
                SUCCEEDED,
                "43 items",
                Some("42 items"),
                Some("43 items"),
            ),
            (OnChange, SUCCEEDED, "first", None, Some("first")),
            (OnChange, FAILED, "", Some("x"), Some("")),
            (
                Conditional,
                SUCCEEDED,
                "[NOTIFY] rain at 3pm",
                None,
                Some("rain at 3pm"),
            ),
            (Conditional, SUCCEEDED, "nothing to report", None, None),
            (Conditional, SUCCEEDED, "note: [NOTIFY] later", None, None),
        ];
        for (policy, status, output, previous, expected) in cases {
            assert_eq!(
                run_message(*policy, *status, Some(output), *previous, m).as_deref(),
                *expected,
                "{policy} {status} {output:?}"
            );
        }
    }
}
