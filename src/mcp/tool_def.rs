//! What every MCP tool is made of, below the tool list and the tools themselves (which
//! all use it, so none calls back into the list): a tool's definition and annotations,
//! why a call gave no result, reading its arguments, and the result a model reads.

use std::sync::Arc;

use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool, ToolAnnotations};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::Value;
use utoipa::ToSchema;

use super::schema;
use crate::error::Error;

/// What a tool does to the user's data, told to clients as annotations (a client may ask
/// before a destructive call, and run read-only ones freely).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    Reads,
    Writes,
    Deletes,
}

/// One tool: what a model is told, and the schemas of what goes in and comes out.
pub struct ToolDef {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub effect: Effect,
    pub input: Arc<JsonObject>,
    pub output: Arc<JsonObject>,
}

impl ToolDef {
    /// A tool taking `I` and answering `O`.
    pub fn of<I: ToSchema, O: ToSchema>(
        name: &'static str,
        title: &'static str,
        effect: Effect,
        description: &'static str,
    ) -> Self {
        ToolDef {
            name,
            title,
            description,
            effect,
            input: schema::of::<I>(),
            output: schema::of::<O>(),
        }
    }

    pub fn tool(&self) -> Tool {
        let annotations = ToolAnnotations::with_title(self.title)
            .read_only(self.effect == Effect::Reads)
            .destructive(self.effect == Effect::Deletes)
            .idempotent(self.effect != Effect::Writes)
            .open_world(false);
        Tool::new(self.name, self.description, self.input.clone())
            .with_title(self.title)
            .with_raw_output_schema(self.output.clone())
            .with_annotations(annotations)
    }
}

/// Why a call did not give a result.
pub enum CallError {
    /// No such tool: a protocol error.
    UnknownTool(String),
    /// Bad input, not found, a conflict, the database away…: a tool result with `isError`.
    Failed(Error),
}

impl From<Error> for CallError {
    fn from(err: Error) -> Self {
        CallError::Failed(err)
    }
}

/// The arguments as `T`; a mismatch names the argument it is about.
pub fn args<T: DeserializeOwned>(arguments: Option<JsonObject>) -> Result<T, CallError> {
    let value = Value::Object(arguments.unwrap_or_default());
    crate::strict_json::from_value(value).map_err(|e| {
        let path = e.path().to_string();
        let at = if path == "." {
            String::new()
        } else {
            format!("{path}: ")
        };
        CallError::Failed(Error::new(
            crate::error::ErrorKind::BadInput,
            format!("invalid arguments: {at}{}", e.into_inner()),
        ))
    })
}

/// The result a model reads: a line of text, and the structured value for a client.
pub fn done<T: Serialize>(text: String, value: &T) -> Result<CallToolResult, CallError> {
    let value = serde_json::to_value(value).map_err(|e| {
        CallError::Failed(Error::new(crate::error::ErrorKind::Internal, e.to_string()))
    })?;
    let mut result = CallToolResult::structured(value);
    result.content = vec![ContentBlock::text(text)];
    Ok(result)
}
