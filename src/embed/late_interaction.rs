//! Late interaction (MaxSim) scoring over the token embeddings of the local sentence model.
//!
//! The embedder pools a text's tokens into one vector, which finds the topic but blurs
//! which turn states the answer. Here the query and each candidate are read token by token
//! (the model's `last_hidden_state`, each token scaled to unit length) and a candidate
//! scores the mean, over the query's content tokens, of the best cosine any of its tokens
//! reaches: every word of the question must be met somewhere in the candidate. Candidates
//! are encoded without the query, so their token matrices are cached by text and a
//! conversation's turns are read once however many questions touch them.

use std::sync::{Arc, Mutex};

use fastembed::TextEmbedding;
use lru::LruCache;

use super::semantic::load_model_file;
use super::EmbedError;
use crate::config::EmbeddingConfig;

/// A text's kept tokens, each a unit vector of `dims` floats, row after row.
struct TokenMatrix {
    dims: usize,
    data: Vec<f32>,
}

impl TokenMatrix {
    fn rows(&self) -> impl Iterator<Item = &[f32]> {
        self.data.chunks_exact(self.dims.max(1))
    }

    fn bytes(&self) -> usize {
        self.data.len() * 4 + 64
    }
}

/// Which of a text's tokens take part in scoring.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// A query: words that carry meaning (stop words would match every candidate a little
    /// and drown the few that matter).
    Content,
    /// A candidate: every real token (not special, not punctuation).
    Words,
}

/// Candidate texts the scorer encodes per model call.
const BATCH: usize = 16;

/// The network the scorer reads with when the model folder holds it: the same model with
/// its matrix products in int8 on the fly (ONNX Runtime's dynamic quantisation, derived by
/// `scripts/fetch-model.sh`), about twice as fast on a CPU as `model.onnx`, whose int8
/// weights are widened to f32 when loaded. The embedder keeps `model.onnx`: its vectors
/// are stored, and a new network would mean embedding every chunk again.
pub const FAST_READER_FILE: &str = "model-dynamic-int8.onnx";

pub struct LateInteraction {
    /// One model call at a time; `transform` takes `&mut self`.
    model: Mutex<TextEmbedding>,
    /// Candidates' token matrices by the blake3 of their text, bounded by bytes.
    cache: Mutex<TokenCache>,
}

struct TokenCache {
    entries: LruCache<[u8; 32], Arc<TokenMatrix>>,
    bytes: usize,
    max_bytes: usize,
}

impl TokenCache {
    fn get(&mut self, key: &[u8; 32]) -> Option<Arc<TokenMatrix>> {
        self.entries.get(key).cloned()
    }

    fn put(&mut self, key: [u8; 32], value: Arc<TokenMatrix>) {
        self.bytes += value.bytes();
        if let Some(old) = self.entries.put(key, value) {
            self.bytes -= old.bytes();
        }
        while self.bytes > self.max_bytes {
            match self.entries.pop_lru() {
                Some((_, old)) => self.bytes -= old.bytes(),
                None => break,
            }
        }
    }
}

impl LateInteraction {
    /// Loads its own instance of the configured model ([`FAST_READER_FILE`] when the
    /// folder holds it, else `model.onnx`), with a cache of candidates' token matrices of
    /// at most `cache_mib` MiB.
    pub fn load(config: &EmbeddingConfig, cache_mib: usize) -> Result<Self, EmbedError> {
        let file = if config.model_dir.join(FAST_READER_FILE).is_file() {
            FAST_READER_FILE
        } else {
            tracing::info!(
                "{} has no {FAST_READER_FILE} (scripts/fetch-model.sh derives it); the search reranker reads with model.onnx, about half as fast",
                config.model_dir.display()
            );
            "model.onnx"
        };
        let loaded = load_model_file(config, file)?;
        Ok(Self {
            model: Mutex::new(loaded.model),
            cache: Mutex::new(TokenCache {
                entries: LruCache::unbounded(),
                bytes: 0,
                max_bytes: cache_mib.saturating_mul(1024 * 1024),
            }),
        })
    }

    /// One score per candidate, higher is better: the mean over the query's content
    /// tokens of their best cosine with the candidate's tokens. A query without content
    /// tokens scores every candidate 0.
    pub fn score(&self, query: &str, candidates: &[&str]) -> Result<Vec<f32>, EmbedError> {
        Ok(self
            .token_scores(query, candidates)?
            .iter()
            .map(|row| {
                if row.is_empty() {
                    0.0
                } else {
                    row.iter().sum::<f32>() / row.len() as f32
                }
            })
            .collect())
    }

    /// For each candidate, each query content token's best cosine with the candidate's
    /// tokens (the same number of tokens for every candidate; none when the query has no
    /// content token).
    fn token_scores(&self, query: &str, candidates: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let query = self
            .encode(&[query], Keep::Content)?
            .pop()
            .ok_or_else(|| EmbedError::Failed("the model returned no query tokens".into()))?;
        if query.data.is_empty() {
            return Ok(vec![Vec::new(); candidates.len()]);
        }
        let keys: Vec<[u8; 32]> = candidates
            .iter()
            .map(|t| *blake3::hash(t.as_bytes()).as_bytes())
            .collect();
        let mut matrices: Vec<Option<Arc<TokenMatrix>>> = {
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            keys.iter().map(|k| cache.get(k)).collect()
        };
        let mut missing: Vec<usize> = (0..candidates.len())
            .filter(|&i| matrices[i].is_none())
            .collect();
        // Similar lengths together: padding is wasted work.
        missing.sort_by_key(|&i| candidates[i].len());
        for batch in missing.chunks(BATCH) {
            let texts: Vec<&str> = batch.iter().map(|&i| candidates[i]).collect();
            let encoded = self.encode(&texts, Keep::Words)?;
            let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
            for (&i, matrix) in batch.iter().zip(encoded) {
                let matrix = Arc::new(matrix);
                cache.put(keys[i], matrix.clone());
                matrices[i] = Some(matrix);
            }
        }
        Ok(matrices
            .iter()
            .map(|m| match m {
                Some(m) => max_sims(&query, m),
                None => vec![0.0; query.rows().count()],
            })
            .collect())
    }

    /// Token matrices of `texts`, keeping the tokens `keep` asks for.
    fn encode(&self, texts: &[&str], keep: Keep) -> Result<Vec<TokenMatrix>, EmbedError> {
        let failed = |e: &dyn std::fmt::Display| EmbedError::Failed(e.to_string());
        let mut model = self.model.lock().unwrap_or_else(|e| e.into_inner());
        // The same call `transform` makes, so positions line up with its output.
        let encodings = model
            .tokenizer
            .encode_batch(texts.to_vec(), true)
            .map_err(|e| failed(&e))?;
        let output = model
            .transform(texts, Some(texts.len().max(1)))
            .map_err(|e| failed(&e))?;
        let mut out = Vec::with_capacity(texts.len());
        let mut offset = 0;
        for batch in output.into_raw() {
            let value = batch
                .outputs
                .iter()
                .find(|(name, _)| name == "last_hidden_state")
                .or_else(|| batch.outputs.first())
                .map(|(_, v)| v)
                .ok_or_else(|| EmbedError::Failed("the model has no output".into()))?;
            let (shape, data) = value.try_extract_tensor::<f32>().map_err(|e| failed(&e))?;
            let [rows, width, dims] = shape[..] else {
                return Err(EmbedError::Failed(format!(
                    "expected token embeddings [batch, tokens, dims], got {shape:?}"
                )));
            };
            let (rows, width, dims) = (rows as usize, width as usize, dims as usize);
            if data.len() != rows * width * dims {
                return Err(EmbedError::Failed(
                    "token embeddings of the wrong size".into(),
                ));
            }
            for row in 0..rows {
                let encoding = encodings.get(offset + row).ok_or_else(|| {
                    EmbedError::Failed("more outputs than texts from the model".into())
                })?;
                let tokens = encoding.get_tokens();
                let special = encoding.get_special_tokens_mask();
                let mut kept = Vec::new();
                for (position, token) in tokens.iter().enumerate().take(width) {
                    let real = batch.attention_mask_array[[row, position]] != 0
                        && special.get(position) == Some(&0);
                    if !real || !keeps(token, keep) {
                        continue;
                    }
                    let start = (row * width + position) * dims;
                    let mut vector = data[start..start + dims].to_vec();
                    super::l2_normalize(&mut vector);
                    kept.extend(vector);
                }
                out.push(TokenMatrix { dims, data: kept });
            }
            offset += rows;
        }
        if out.len() != texts.len() {
            return Err(EmbedError::Failed(format!(
                "the model returned {} token matrices for {} texts",
                out.len(),
                texts.len()
            )));
        }
        Ok(out)
    }
}

/// Whether a word piece takes part in scoring.
fn keeps(token: &str, keep: Keep) -> bool {
    if !token.chars().any(char::is_alphanumeric) {
        return false;
    }
    match keep {
        Keep::Words => true,
        // A continuation piece belongs to a longer word, never a stop word.
        Keep::Content => token.starts_with("##") || !crate::text::is_stop_word(token),
    }
}

/// Each query token's best dot product (cosine: rows are unit length) with the
/// candidate's tokens; 0 each for a candidate without tokens.
fn max_sims(query: &TokenMatrix, candidate: &TokenMatrix) -> Vec<f32> {
    query
        .rows()
        .map(|q| {
            if candidate.data.is_empty() || query.dims != candidate.dims {
                return 0.0;
            }
            candidate
                .rows()
                .map(|c| q.iter().zip(c).map(|(a, b)| a * b).sum::<f32>())
                .fold(f32::MIN, f32::max)
        })
        .collect()
}

impl std::fmt::Debug for LateInteraction {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LateInteraction").finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(rows: &[&[f32]]) -> TokenMatrix {
        TokenMatrix {
            dims: rows[0].len(),
            data: rows.iter().flat_map(|r| r.iter().copied()).collect(),
        }
    }

    #[test]
    fn each_query_token_takes_its_best_match() {
        let query = matrix(&[&[1.0, 0.0], &[0.0, 1.0]]);
        let both = matrix(&[&[1.0, 0.0], &[0.0, 1.0]]);
        let one = matrix(&[&[1.0, 0.0], &[1.0, 0.0]]);
        assert_eq!(max_sims(&query, &both), [1.0, 1.0]);
        assert_eq!(max_sims(&query, &one), [1.0, 0.0]);
        let empty = TokenMatrix {
            dims: 2,
            data: vec![],
        };
        assert_eq!(max_sims(&query, &empty), [0.0, 0.0]);
    }

    #[test]
    fn queries_keep_content_words_and_candidates_every_word() {
        assert!(!keeps("what", Keep::Content));
        assert!(keeps("what", Keep::Words));
        assert!(keeps("pottery", Keep::Content));
        assert!(keeps("##ing", Keep::Content));
        assert!(!keeps("?", Keep::Words));
    }
}
