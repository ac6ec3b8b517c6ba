//! Telegram: a run's artifacts sent as documents (`sendDocument`, multipart) after its
//! text. Each document counts as one more part of the message, so a retry resumes after
//! the last one accepted (at least once, never the accepted ones again).

use super::{Channels, DeliveryError};
use crate::access::Actor;
use crate::artifact::{ascii_file_name, ArtifactError};
use crate::notify::outbox::Message;

/// The Bot API's limit on an uploaded document.
const TELEGRAM_DOCUMENT_LIMIT: i64 = 50 * 1024 * 1024;

/// A `multipart/form-data` body: text fields, then one file.
fn multipart(boundary: &str, fields: &[(&str, String)], file: (&str, &str, &[u8])) -> Vec<u8> {
    let mut body = Vec::with_capacity(file.2.len() + 512);
    for (name, value) in fields {
        body.extend_from_slice(
            format!(
                "--{boundary}\r\nContent-Disposition: form-data; name=\"{name}\"\r\n\r\n{value}\r\n"
            )
            .as_bytes(),
        );
    }
    let (name, mime_type, bytes) = file;
    body.extend_from_slice(
        format!(
            "--{boundary}\r\nContent-Disposition: form-data; name=\"document\"; \
             filename=\"{}\"\r\nContent-Type: {mime_type}\r\n\r\n",
            ascii_file_name(name)
        )
        .as_bytes(),
    );
    body.extend_from_slice(bytes);
    body.extend_from_slice(format!("\r\n--{boundary}--\r\n").as_bytes());
    body
}

impl Channels {
    /// Sends the documents listed in the message's payload; `first_part` is the number of
    /// text parts before them.
    pub(super) async fn telegram_documents(
        &self,
        url: &str,
        message: &Message,
        chat: &str,
        thread: Option<i64>,
        first_part: usize,
    ) -> Result<(), DeliveryError> {
        let Some(store) = &self.artifacts else {
            return Ok(());
        };
        let Some(files) = message.payload["artifacts"].as_array() else {
            return Ok(());
        };
        let owner = Actor::User(message.user_id.clone());
        for (i, file) in files.iter().enumerate() {
            let part = first_part + i;
            if (part as i64) < message.progress {
                continue;
            }
            let at_part = |mut e: DeliveryError| {
                e.progress = part as i64;
                e
            };
            let (Some(id), size) = (file["id"].as_str(), file["size"].as_i64().unwrap_or(0)) else {
                continue;
            };
            if size > TELEGRAM_DOCUMENT_LIMIT {
                // Too large for the Bot API: the text already lists it.
                continue;
            }
            let (artifact, bytes) = match store.get(&owner, id).await {
                Ok(found) => found,
                // Deleted since the run: nothing to send.
                Err(ArtifactError::NotFound(_)) => continue,
                Err(err) => {
                    return Err(at_part(DeliveryError {
                        reason: format!("cannot read artifact `{id}`: {err}"),
                        retry_after: None,
                        permanent: false,
                        progress: 0,
                    }))
                }
            };
            let boundary = format!("nightshift-{}", uuid::Uuid::now_v7().simple());
            let mut fields = vec![("chat_id", chat.to_string())];
            if let Some(thread) = thread {
                fields.push(("message_thread_id", thread.to_string()));
            }
            let body = multipart(
                &boundary,
                &fields,
                (&artifact.name, &artifact.mime_type, &bytes),
            );
            let request = self
                .client
                .post(url)
                .header(
                    "content-type",
                    format!("multipart/form-data; boundary={boundary}"),
                )
                .body(body);
            self.send(request, &[]).await.map_err(at_part)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_multipart_body_carries_fields_and_the_file() {
        let body = multipart(
            "B",
            &[("chat_id", "42".into())],
            ("r\"é.csv", "text/csv", b"a,b\n"),
        );
        let text = String::from_utf8(body).unwrap();
        assert!(text
            .starts_with("--B\r\nContent-Disposition: form-data; name=\"chat_id\"\r\n\r\n42\r\n"));
        assert!(text
            .contains("filename=\"r__.csv\"\r\nContent-Type: text/csv\r\n\r\na,b\n\r\n--B--\r\n"));
    }
}
