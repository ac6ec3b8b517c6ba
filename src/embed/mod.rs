//! Embedders turn text into vectors for the vector leg of search. Embedding is CPU work:
//! callers run it outside write transactions (and, for slow models, on a blocking thread).

mod hash;
mod late_interaction;
mod semantic;

pub use hash::HashEmbedder;
pub use late_interaction::{LateInteraction, FAST_READER_FILE};
pub use semantic::SemanticEmbedder;

use std::sync::Arc;

use crate::config::{EmbeddingBackend, EmbeddingConfig};

#[derive(Debug, thiserror::Error)]
pub enum EmbedError {
    #[error("embedding failed: {0}")]
    Failed(String),
    #[error("embedding model: {0}")]
    Model(String),
    #[error("embedding runtime: {0}")]
    Runtime(String),
}

impl crate::error::Kind for EmbedError {
    fn kind(&self) -> crate::error::ErrorKind {
        match self {
            EmbedError::Failed(_) => crate::error::ErrorKind::Internal,
            // A missing or wrong model or ONNX Runtime library is a setup problem.
            EmbedError::Model(_) | EmbedError::Runtime(_) => crate::error::ErrorKind::Config,
        }
    }
}

pub trait Embedder: Send + Sync {
    /// Identifies the model and its settings; vectors of different ids are never compared.
    fn model_id(&self) -> &str;
    fn dimensions(&self) -> usize;
    /// One L2-normalised vector per text (all zeros for a text with no features).
    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// True for an embedder cheap enough to call on an async task (microseconds a text);
    /// a model is run on a blocking thread instead.
    fn is_cheap(&self) -> bool {
        false
    }
}

/// The embedder the configuration asks for.
pub fn from_config(config: &EmbeddingConfig) -> Result<Arc<dyn Embedder>, EmbedError> {
    match config.backend {
        EmbeddingBackend::Hash => Ok(Arc::new(HashEmbedder::new(config.dimensions))),
        EmbeddingBackend::Fastembed => Ok(Arc::new(SemanticEmbedder::load(config)?)),
    }
}

/// Little-endian f32s, the on-disk vector format.
pub fn vector_to_blob(vector: &[f32]) -> Vec<u8> {
    vector.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// Reads a little-endian f32 blob; `None` if its length is not a whole number of floats.
pub fn blob_to_vector(blob: &[u8]) -> Option<Vec<f32>> {
    if !blob.len().is_multiple_of(4) {
        return None;
    }
    Some(
        blob.chunks_exact(4)
            .map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
            .collect(),
    )
}

/// Several vectors of one width in one blob, one after another: a chunk's own vector and
/// its sentences' (`memory::sentences`).
pub fn vectors_to_blob<V: AsRef<[f32]>>(vectors: &[V]) -> Vec<u8> {
    vectors
        .iter()
        .flat_map(|v| v.as_ref().iter().flat_map(|x| x.to_le_bytes()))
        .collect()
}

/// The vectors of `dimensions` floats a blob holds (one for a blob of one vector); `None`
/// if it is empty or not a whole number of them (a vector of another model's width).
pub fn blob_to_vectors(blob: &[u8], dimensions: usize) -> Option<Vec<Vec<f32>>> {
    let floats = blob_to_vector(blob)?;
    if dimensions == 0 || floats.is_empty() || !floats.len().is_multiple_of(dimensions) {
        return None;
    }
    Some(
        floats
            .chunks_exact(dimensions)
            .map(<[f32]>::to_vec)
            .collect(),
    )
}

/// Scales a vector to unit length in place (a zero vector stays zero).
pub fn l2_normalize(vector: &mut [f32]) {
    let norm = vector.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        vector.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_round_trips() {
        let v = vec![0.25f32, -1.5, 3.0];
        assert_eq!(blob_to_vector(&vector_to_blob(&v)).unwrap(), v);
        assert!(blob_to_vector(&[1, 2, 3]).is_none());
        let several = [vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0, 6.0]];
        assert_eq!(
            blob_to_vectors(&vectors_to_blob(&several), 2).unwrap(),
            several
        );
        assert_eq!(
            blob_to_vectors(&vector_to_blob(&v), v.len()).unwrap(),
            vec![v.clone()]
        );
        // Three floats are not a whole number of vectors of two.
        assert!(blob_to_vectors(&vector_to_blob(&[1.0, 2.0, 3.0]), 2).is_none());
        assert!(blob_to_vectors(&[], 2).is_none());
    }
}
