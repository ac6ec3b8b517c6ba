//! The memory and state tools offered to the model (seed 002's names and schemas for
//! memory), always scoped to the schedule's user, its session and the run.

use serde_json::{json, Value};

use crate::db::run_to_completion;
use crate::memory::{Memory, NewNote, SearchRequest};
use crate::state::{StateAccess, StateStore};

/// Who a tool call acts for: the schedule's user, the schedule's session, the run; and,
/// for a rerun that sees memory as it was, the instant it sees.
pub(super) struct ToolScope<'a> {
    pub user_id: &'a str,
    pub session_id: &'a str,
    pub run_id: &'a str,
    pub memory_as_of: Option<i64>,
}

/// The one tool a run seeing memory as it was is offered: search reads the notes'
/// versions of then. Writes would change memory as it is from a view of the past, and
/// state keeps no history to read.
const AS_OF_TOOLS: &[&str] = &["memory_search"];

/// The names of the tools [`definitions`] offers.
pub(super) const NAMES: &[&str] = &[
    "memory_search",
    "memory_save",
    "memory_update",
    "memory_delete",
    "state_get",
    "state_set",
    "state_delete",
    "state_list",
];

/// Why a run seeing memory as of `at` may not call `name`, unless it is a tool that reads
/// that memory: it changes nothing and acts on nothing (no writes, no state of now, no
/// schedule tools, no MCP server's tools).
pub(super) fn refused_as_of(name: &str, at: i64) -> Option<String> {
    (!AS_OF_TOOLS.contains(&name)).then(|| {
        format!(
            "`{name}` is not available: this run sees memory as it was at {} (a rerun with \
             memory as of the original) and changes nothing; memory_search reads that memory",
            crate::db::clock::to_rfc3339(at)
        )
    })
}

/// The tools offered to a run: all of them, or for a run seeing memory as of an instant,
/// the ones that can read it.
pub(super) fn definitions_for(memory_as_of: Option<i64>) -> Value {
    let mut all = definitions();
    if memory_as_of.is_some() {
        if let Some(list) = all.as_array_mut() {
            list.retain(|tool| {
                AS_OF_TOOLS.contains(&tool["function"]["name"].as_str().unwrap_or_default())
            });
        }
    }
    all
}

fn definitions() -> Value {
    json!([
        {"type": "function", "function": {
            "name": "memory_search",
            "description": "Search the user's saved notes (and optionally this task's earlier runs) by meaning and keywords.",
            "parameters": {"type": "object", "properties": {
                "query": {"type": "string", "description": "Natural language search query"},
                "top_k": {"type": "integer", "description": "Max results (default 5, max 20)"},
                "include_conversation": {"type": "boolean", "description": "Also search this task's earlier runs"}
            }, "required": ["query"]}}},
        {"type": "function", "function": {
            "name": "memory_save",
            "description": "Save a note (fact, preference, decision) to the user's memory. Returns its note_id.",
            "parameters": {"type": "object", "properties": {
                "content": {"type": "string", "description": "Natural language text to save"}
            }, "required": ["content"]}}},
        {"type": "function", "function": {
            "name": "memory_update",
            "description": "Replace the text of a saved note, keeping its id.",
            "parameters": {"type": "object", "properties": {
                "note_id": {"type": "string"},
                "content": {"type": "string"}
            }, "required": ["note_id", "content"]}}},
        {"type": "function", "function": {
            "name": "memory_delete",
            "description": "Delete a saved note.",
            "parameters": {"type": "object", "properties": {
                "note_id": {"type": "string"}
            }, "required": ["note_id"]}}},
        {"type": "function", "function": {
            "name": "state_get",
            "description": "Read a state value. A key without a prefix is this task's; `user:` keys are shared by all of the user's tasks; `app:` keys by everyone (read-only); `temp:` keys last for this run only.",
            "parameters": {"type": "object", "properties": {
                "key": {"type": "string"}
            }, "required": ["key"]}}},
        {"type": "function", "function": {
            "name": "state_set",
            "description": "Set a state key to any JSON value; returns its new version. Give expected_version (0: the key must not exist) to write only if no one changed it since you read it.",
            "parameters": {"type": "object", "properties": {
                "key": {"type": "string"},
                "value": {"description": "Any JSON value"},
                "expected_version": {"type": "integer"}
            }, "required": ["key", "value"]}}},
        {"type": "function", "function": {
            "name": "state_delete",
            "description": "Delete a state key (optionally only at expected_version).",
            "parameters": {"type": "object", "properties": {
                "key": {"type": "string"},
                "expected_version": {"type": "integer"}
            }, "required": ["key"]}}},
        {"type": "function", "function": {
            "name": "state_list",
            "description": "The state keys visible to this run that start with a prefix (all when empty), with their values.",
            "parameters": {"type": "object", "properties": {
                "prefix": {"type": "string"}
            }}}}
    ])
}

fn arg<'a>(args: &'a Value, name: &str) -> Result<&'a str, String> {
    args.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("missing string argument `{name}`"))
}

/// An optional version argument: absent or null is none; anything but an integer is
/// refused.
fn version_arg(args: &Value, name: &str) -> Result<Option<i64>, String> {
    match args.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => value
            .as_i64()
            .map(Some)
            .ok_or_else(|| format!("`{name}` must be an integer, got {value}")),
    }
}

/// Runs one tool call for the scope's user; the result (or the error) is JSON for the
/// model. Arguments over `max_arguments_bytes` are not read: the model is told so, as it
/// is of an unknown tool.
pub(super) async fn call(
    memory: &Memory,
    scope: &ToolScope<'_>,
    name: &str,
    arguments: &str,
    max_arguments_bytes: usize,
) -> String {
    let (user_id, session_id) = (scope.user_id, scope.session_id);
    let memory = &memory.by(crate::memory::Origin::Run(scope.run_id.to_string()));
    let state = || {
        (
            StateStore::new(memory.clone()),
            StateAccess::run(scope.user_id, scope.session_id, scope.run_id),
        )
    };
    let result = async {
        if arguments.len() > max_arguments_bytes {
            return Err(format!(
                "arguments are {} bytes, over the limit of {max_arguments_bytes} bytes \
                 (runtime.max_tool_arguments_bytes)",
                arguments.len()
            ));
        }
        if let Some(refused) = scope.memory_as_of.and_then(|at| refused_as_of(name, at)) {
            return Err(refused);
        }
        let args: Value =
            serde_json::from_str(arguments).map_err(|e| format!("arguments are not JSON: {e}"))?;
        match name {
            "memory_search" => {
                let include = args
                    .get("include_conversation")
                    .and_then(Value::as_bool)
                    .unwrap_or(false);
                let request = SearchRequest {
                    user_id: user_id.to_string(),
                    query: arg(&args, "query")?.to_string(),
                    top_k: args
                        .get("top_k")
                        .and_then(Value::as_u64)
                        .map(|k| k.clamp(1, 20) as usize),
                    // The transcript session exists only after a first run. A search as of
                    // an instant reads the notes' versions of then, and no session.
                    session_id: (include
                        && scope.memory_as_of.is_none()
                        && memory.session(session_id, Some(user_id)).await.is_ok())
                    .then(|| session_id.to_string()),
                    tags: Vec::new(),
                    as_of: scope.memory_as_of,
                    ..Default::default()
                };
                let hits = memory.search(&request).await.map_err(|e| e.to_string())?;
                Ok(json!(hits))
            }
            // Writes run to their end even if the run's deadline drops this call.
            "memory_save" => {
                let (memory, user_id) = (memory.clone(), user_id.to_string());
                let note = NewNote::new(arg(&args, "content")?);
                let saved =
                    run_to_completion(async move { memory.save_note(&user_id, &note).await })
                        .await
                        .map_err(|e| e.to_string())?;
                Ok(json!({"note_id": saved.note_id, "message": "saved"}))
            }
            "memory_update" => {
                let (memory, user_id) = (memory.clone(), user_id.to_string());
                let note_id = arg(&args, "note_id")?.to_string();
                let content = arg(&args, "content")?.to_string();
                let note = run_to_completion(async move {
                    memory.update_note(&user_id, &note_id, &content, None).await
                })
                .await
                .map_err(|e| e.to_string())?;
                Ok(json!({"note_id": note.note_id, "message": "updated"}))
            }
            "memory_delete" => {
                let note_id = arg(&args, "note_id")?.to_string();
                let (memory, user_id, id) = (memory.clone(), user_id.to_string(), note_id.clone());
                run_to_completion(async move { memory.delete_note(&user_id, &id).await })
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(json!({"note_id": note_id, "message": "deleted"}))
            }
            "state_get" => {
                let (state, access) = state();
                let entry = state
                    .get(&access, arg(&args, "key")?)
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(json!({"key": entry.key, "value": entry.value, "version": entry.version}))
            }
            "state_set" => {
                let (state, access) = state();
                let key = arg(&args, "key")?.to_string();
                let value = args
                    .get("value")
                    .cloned()
                    .ok_or("missing argument `value`")?;
                let expected = version_arg(&args, "expected_version")?;
                let entry =
                    run_to_completion(
                        async move { state.set(&access, &key, &value, expected).await },
                    )
                    .await
                    .map_err(|e| e.to_string())?;
                Ok(json!({"key": entry.key, "version": entry.version, "message": "set"}))
            }
            "state_delete" => {
                let (state, access) = state();
                let key = arg(&args, "key")?.to_string();
                let expected = version_arg(&args, "expected_version")?;
                let deleted =
                    run_to_completion(async move { state.delete(&access, &key, expected).await })
                        .await
                        .map_err(|e| e.to_string())?;
                Ok(json!({"key": deleted.key, "message": "deleted"}))
            }
            "state_list" => {
                let (state, access) = state();
                let prefix = match args.get("prefix") {
                    None | Some(Value::Null) => "",
                    Some(_) => arg(&args, "prefix")?,
                };
                let list = state
                    .list(&access, prefix)
                    .await
                    .map_err(|e| e.to_string())?;
                let entries: Vec<Value> = list
                    .entries
                    .into_iter()
                    .map(|e| json!({"key": e.key, "value": e.value, "version": e.version}))
                    .collect();
                Ok(json!({ "entries": entries }))
            }
            other => Err(format!("unknown tool `{other}`")),
        }
    }
    .await;
    match result {
        Ok(value) => value.to_string(),
        Err(error) => json!({ "error": error }).to_string(),
    }
}
