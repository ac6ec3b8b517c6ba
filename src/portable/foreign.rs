//! Notes from elsewhere: mem0's `get_all` output (a JSON array of memories, or an object
//! whose `results` holds them: `id`, `memory`, `user_id`, `metadata`, `created_at`,
//! `updated_at` as ISO 8601) and a folder of Markdown files (one note each, optional front
//! matter). Each becomes a `note` line and its first `note_version` line, with an id
//! derived from the source (`mem0-ID`, `md-RELATIVE/PATH.md`), so importing twice changes
//! nothing.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use super::error::{PortableError, Result};
use super::format::ImportFormat;
use super::import::Line;
use super::rows::{Row, TYPE, USER};
use super::tables::table_of;
use crate::config::MemoryConfig;
use crate::input;

/// Lines of one user.
pub(super) type Batch = (String, Vec<Line>);

/// What `path` holds: a folder is Markdown; JSON with `results`, or an array of objects
/// with `memory`, is mem0; a first line naming `nightshift-export` is an archive.
pub(super) fn detect(path: &Path) -> Result<ImportFormat> {
    let meta = std::fs::metadata(path).map_err(|e| PortableError::io(path, e))?;
    if meta.is_dir() {
        return Ok(ImportFormat::Markdown);
    }
    let mut head = Vec::new();
    use std::io::Read as _;
    std::fs::File::open(path)
        .and_then(|f| f.take(64 * 1024).read_to_end(&mut head))
        .map_err(|e| PortableError::io(path, e))?;
    let text = String::from_utf8_lossy(&head);
    let first = text.lines().next().unwrap_or("");
    if first.contains("\"nightshift-export\"") {
        return Ok(ImportFormat::Nightshift);
    }
    let trimmed = text.trim_start();
    if trimmed.starts_with('[') || (trimmed.starts_with('{') && text.contains("\"results\"")) {
        return Ok(ImportFormat::Mem0);
    }
    Err(file(
        path,
        "neither a nightshift archive, mem0 JSON nor a Markdown folder; name its format \
         (--format, or ?format= over the API)"
            .to_string(),
    ))
}

fn file(path: &Path, reason: String) -> PortableError {
    PortableError::File {
        what: path.display().to_string(),
        reason,
    }
}

pub(super) fn mem0(path: &Path, user: Option<&str>, limits: &MemoryConfig) -> Result<Vec<Batch>> {
    let opened = std::fs::File::open(path).map_err(|e| PortableError::io(path, e))?;
    let bytes = input::read_limited("mem0 file", opened, limits.max_import_bytes)?;
    let value: Value = serde_json::from_slice(&bytes)
        .map_err(|e| PortableError::line(e.line() as u64, format!("not JSON: {e}")))?;
    let items = match value {
        Value::Array(items) => items,
        Value::Object(mut object) => match object.remove("results") {
            Some(Value::Array(items)) => items,
            _ => return Err(file(path, "`results` is not an array".to_string())),
        },
        _ => return Err(file(path, "not an array or an object".to_string())),
    };
    let mut batches: BTreeMap<String, Vec<Line>> = BTreeMap::new();
    for (i, item) in items.iter().enumerate() {
        let at = format!("memory {}", i + 1);
        let bad = |reason: String| PortableError::File {
            what: at.clone(),
            reason,
        };
        let text = |key: &str| item.get(key).and_then(Value::as_str);
        let id = text("id").ok_or_else(|| bad("no `id`".to_string()))?;
        let memory = text("memory").ok_or_else(|| bad("no `memory`".to_string()))?;
        let owner = match (user, text("user_id")) {
            (Some(user), _) | (None, Some(user)) => user.to_string(),
            (None, None) => return Err(bad("no `user_id`; give --user".to_string())),
        };
        let created = match text("created_at") {
            Some(t) => iso_ms(t).ok_or_else(|| bad(format!("created_at `{t}` is not ISO 8601")))?,
            None => 0,
        };
        let updated = match text("updated_at") {
            Some(t) => iso_ms(t).ok_or_else(|| bad(format!("updated_at `{t}` is not ISO 8601")))?,
            None => created,
        };
        let metadata = item.get("metadata");
        let tags = [
            metadata.and_then(|m| m.get("tags")),
            metadata.and_then(|m| m.get("categories")),
            item.get("categories"),
        ]
        .into_iter()
        .flatten()
        .find_map(Value::as_array)
        .map(|list| {
            list.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default();
        let category = metadata
            .and_then(|m| m.get("category"))
            .and_then(Value::as_str)
            .map(str::to_string);
        let note = Note {
            note_id: format!("mem0-{id}"),
            content: memory.to_string(),
            tags,
            key: None,
            category,
            created,
            updated,
        };
        let lines = batches.entry(owner.clone()).or_default();
        note.lines(&owner, (i + 1) as u64, limits, lines)
            .map_err(bad)?;
    }
    Ok(batches.into_iter().collect())
}

pub(super) fn markdown(
    dir: &Path,
    user: Option<&str>,
    limits: &MemoryConfig,
) -> Result<Vec<Batch>> {
    let user =
        user.ok_or_else(|| input::InputError::new("user", "--user is required for Markdown"))?;
    input::check_user_id(user)?;
    let mut files = Vec::new();
    collect_md(dir, dir, &mut files)?;
    files.sort();
    let mut lines = Vec::new();
    for (i, relative) in files.iter().enumerate() {
        let path = dir.join(relative);
        let bad = |reason: String| file(&path, reason);
        let opened = std::fs::File::open(&path).map_err(|e| bad(e.to_string()))?;
        let meta = opened.metadata().map_err(|e| bad(e.to_string()))?;
        let bytes = input::read_limited(
            "note file",
            opened,
            limits.max_text_bytes.saturating_add(4096),
        )?;
        let text = String::from_utf8(bytes).map_err(|_| bad("not UTF-8".to_string()))?;
        let (front, body) = front_matter(&text);
        let modified = meta
            .modified()
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .and_then(|d| i64::try_from(d.as_millis()).ok())
            .unwrap_or(0);
        let relative = relative.replace('\\', "/");
        let note = Note {
            note_id: format!("md-{relative}"),
            content: body.trim().to_string(),
            tags: front.tags,
            key: front.key,
            category: front.category,
            created: modified,
            updated: modified,
        };
        note.lines(user, (i + 1) as u64, limits, &mut lines)
            .map_err(bad)?;
    }
    Ok(vec![(user.to_string(), lines)])
}

fn collect_md(root: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    let entries = std::fs::read_dir(dir).map_err(|e| PortableError::io(dir, e))?;
    for entry in entries {
        let entry = entry.map_err(|e| file(dir, e.to_string()))?;
        let path = entry.path();
        let kind = entry.file_type().map_err(|e| file(&path, e.to_string()))?;
        if kind.is_dir() {
            collect_md(root, &path, out)?;
        } else if kind.is_file() && path.extension().is_some_and(|e| e == "md") {
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let relative = relative
                .to_str()
                .ok_or_else(|| file(&path, "the file name is not UTF-8".to_string()))?;
            out.push(relative.to_string());
        }
    }
    Ok(())
}

#[derive(Default)]
struct Front {
    tags: Vec<String>,
    key: Option<String>,
    category: Option<String>,
}

/// Front matter between a first line `---` and the next `---`: `tags: [a, b]` or a YAML
/// list under `tags:`, `key:`, `category:`; anything else is ignored.
fn front_matter(text: &str) -> (Front, &str) {
    let mut front = Front::default();
    let Some(rest) = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))
    else {
        return (front, text);
    };
    let Some(end) = rest.find("\n---") else {
        return (front, text);
    };
    let body = rest[end + 4..].trim_start_matches(['\r', '\n']);
    let mut in_tags = false;
    for line in rest[..end].lines() {
        let line = line.trim_end();
        if in_tags {
            if let Some(item) = line.trim_start().strip_prefix("- ") {
                front.tags.push(unquote(item));
                continue;
            }
            in_tags = false;
        }
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let value = value.trim();
        match name.trim() {
            "tags" if value.is_empty() => in_tags = true,
            "tags" => {
                let list = value.trim_start_matches('[').trim_end_matches(']');
                front.tags = list
                    .split(',')
                    .map(unquote)
                    .filter(|t| !t.is_empty())
                    .collect();
            }
            "key" if !value.is_empty() => front.key = Some(unquote(value)),
            "category" if !value.is_empty() => front.category = Some(unquote(value)),
            _ => {}
        }
    }
    (front, body)
}

fn unquote(text: &str) -> String {
    text.trim().trim_matches(['"', '\'']).to_string()
}

/// ISO 8601 with an offset (or without one, read as UTC), to UTC ms.
fn iso_ms(text: &str) -> Option<i64> {
    if let Ok(at) = chrono::DateTime::parse_from_rfc3339(text) {
        return Some(at.timestamp_millis());
    }
    chrono::NaiveDateTime::parse_from_str(text, "%Y-%m-%dT%H:%M:%S%.f")
        .ok()
        .map(|at| at.and_utc().timestamp_millis())
}

struct Note {
    note_id: String,
    content: String,
    tags: Vec<String>,
    key: Option<String>,
    category: Option<String>,
    created: i64,
    updated: i64,
}

impl Note {
    /// The note's line and its first version's, checked by the write paths' rules.
    fn lines(
        &self,
        user: &str,
        number: u64,
        limits: &MemoryConfig,
        out: &mut Vec<Line>,
    ) -> Result<(), String> {
        let e = |err: input::InputError| err.to_string();
        input::check_user_id(user).map_err(e)?;
        input::check_id("note id", &self.note_id).map_err(e)?;
        input::check_content("note content", &self.content, limits.max_text_bytes).map_err(e)?;
        for tag in &self.tags {
            input::check_id("tag", tag).map_err(e)?;
        }
        for (what, value) in [("key", &self.key), ("category", &self.category)] {
            if let Some(value) = value {
                input::check_id(what, value).map_err(e)?;
            }
        }
        input::check_instant("created_at", self.created).map_err(e)?;
        input::check_instant("updated_at", self.updated).map_err(e)?;
        let tags = serde_json::to_string(&self.tags).map_err(|err| err.to_string())?;
        let opt = |v: &Option<String>| v.clone().map_or(Value::Null, Value::from);
        let mut note = Row::new();
        for (k, v) in [
            ("note_id", Value::from(self.note_id.as_str())),
            ("user_id", Value::from(user)),
            ("content", Value::from(self.content.as_str())),
            ("tags_json", Value::from(tags.as_str())),
            ("key", opt(&self.key)),
            ("category", opt(&self.category)),
            ("source", Value::from("import")),
            ("fact_key", Value::Null),
            ("superseded_by", Value::Null),
            ("created_at", Value::from(self.created)),
            ("updated_at", Value::from(self.updated)),
            ("expires_at", Value::Null),
            (USER, Value::from(user)),
        ] {
            note.insert(k.to_string(), v);
        }
        let mut version: Row = note
            .iter()
            .filter(|(k, _)| {
                matches!(
                    k.as_str(),
                    "note_id"
                        | "user_id"
                        | "content"
                        | "tags_json"
                        | "key"
                        | "category"
                        | "source"
                        | "user"
                )
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        version.insert("version".to_string(), Value::from(1));
        version.insert("change".to_string(), Value::from("created"));
        version.insert("changed_by".to_string(), Value::from("import"));
        version.insert("changed_at".to_string(), Value::from(self.created));
        for (kind, mut row) in [("note", note), ("note_version", version)] {
            row.insert(TYPE.to_string(), Value::from(kind));
            let table = table_of(kind).ok_or_else(|| format!("no table for {kind}"))?;
            out.push(Line { number, table, row });
        }
        Ok(())
    }
}
