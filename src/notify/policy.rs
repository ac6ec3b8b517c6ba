//! Whether a finished run is worth telling the user about, and what to say.

use crate::schedule::types::{NotifyPolicy, RunStatus};

/// The text to send for a run, or `None` when the policy says stay quiet. With the
/// conditional policy the output must start with `marker`, which is stripped.
pub fn run_message(
    policy: NotifyPolicy,
    status: RunStatus,
    output: Option<&str>,
    previous_success: Option<&str>,
    marker: &str,
) -> Option<String> {
    let output = output.unwrap_or_default();
    let success = status.is_success();
    match policy {
        NotifyPolicy::Never => None,
        NotifyPolicy::Always => Some(output.to_string()),
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
    use RunStatus::*;

    /// Policy, status, output, previous successful output, expected message.
    type Case<'a> = (
        NotifyPolicy,
        RunStatus,
        &'a str,
        Option<&'a str>,
        Option<&'a str>,
    );

    #[test]
    fn policy_matrix() {
        let m = "[NOTIFY]";
        let cases: &[Case] = &[
            (Always, Succeeded, "ok", None, Some("ok")),
            (Always, Failed, "", None, Some("")),
            (Never, Failed, "boom", None, None),
            (OnFailure, Succeeded, "ok", None, None),
            (OnFailure, TimedOut, "", None, Some("")),
            (OnFailure, Interrupted, "", None, Some("")),
            (OnChange, Succeeded, "42 items", Some("42 items"), None),
            (
                OnChange,
                Succeeded,
                "43 items",
                Some("42 items"),
                Some("43 items"),
            ),
            (OnChange, Succeeded, "first", None, Some("first")),
            (OnChange, Failed, "", Some("x"), Some("")),
            (
                Conditional,
                Succeeded,
                "[NOTIFY] rain at 3pm",
                None,
                Some("rain at 3pm"),
            ),
            (Conditional, Succeeded, "nothing to report", None, None),
            (Conditional, Succeeded, "note: [NOTIFY] later", None, None),
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
