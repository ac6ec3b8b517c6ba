//! A deterministic embedder with no model: feature hashing of stemmed words and character
//! trigrams into a fixed number of dimensions with blake3. Unlike hashing a whole text into
//! one vector, two texts that share words (or word pieces) land close together.

use std::num::NonZeroUsize;
use std::sync::{Arc, Mutex};

use lru::LruCache;
use rust_stemmers::{Algorithm, Stemmer};

use super::{l2_normalize, EmbedError, Embedder};
use crate::text;

const WORD_WEIGHT: f32 = 1.0;
const TRIGRAM_WEIGHT: f32 = 0.35;
/// Distinct words whose features are remembered; word frequencies are skewed, so a small
/// cache saves most of the hashing.
const CACHE_WORDS: usize = 65_536;

/// A word's contribution: (dimension, signed weight) pairs.
type WordFeatures = Arc<[(u32, f32)]>;

pub struct HashEmbedder {
    dimensions: usize,
    model_id: String,
    stemmer: Stemmer,
    cache: Mutex<LruCache<String, WordFeatures>>,
}

impl HashEmbedder {
    pub fn new(dimensions: usize) -> Self {
        Self {
            dimensions,
            model_id: format!("hash-v1-{dimensions}"),
            stemmer: Stemmer::create(Algorithm::English),
            cache: Mutex::new(LruCache::new(
                NonZeroUsize::new(CACHE_WORDS).expect("non-zero"),
            )),
        }
    }

    fn feature(&self, kind: u8, feature: &str, weight: f32) -> (u32, f32) {
        let mut hasher = blake3::Hasher::new();
        hasher.update(&[kind]);
        hasher.update(feature.as_bytes());
        let hash = hasher.finalize();
        let bytes: [u8; 8] = hash.as_bytes()[..8].try_into().expect("8 bytes");
        let h = u64::from_le_bytes(bytes);
        let index = (h % self.dimensions as u64) as u32;
        // The sign bit keeps collisions from only ever adding up (the "hashing trick").
        let sign = if h >> 63 == 0 { 1.0 } else { -1.0 };
        (index, sign * weight)
    }

    /// The stemmed word, plus trigrams of the padded word, which catch shared word pieces
    /// the stemmer misses ("deploy" / "deployment", typos, compounds).
    fn word_features(&self, token: &str) -> WordFeatures {
        if let Some(hit) = self.cache.lock().expect("cache lock").get(token) {
            return hit.clone();
        }
        let mut features = vec![self.feature(b'w', &self.stemmer.stem(token), WORD_WEIGHT)];
        let padded: Vec<char> = std::iter::once('^')
            .chain(token.chars())
            .chain(std::iter::once('$'))
            .collect();
        if padded.len() >= 5 {
            let mut gram = String::with_capacity(12);
            for window in padded.windows(3) {
                gram.clear();
                gram.extend(window);
                features.push(self.feature(b'g', &gram, TRIGRAM_WEIGHT));
            }
        }
        let features: WordFeatures = features.into();
        self.cache
            .lock()
            .expect("cache lock")
            .put(token.to_string(), features.clone());
        features
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut vector = vec![0.0f32; self.dimensions];
        for token in text::tokens(text) {
            if text::is_stop_word(&token) {
                continue;
            }
            for (index, weight) in self.word_features(&token).iter() {
                vector[*index as usize] += weight;
            }
        }
        l2_normalize(&mut vector);
        vector
    }
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }

    fn is_cheap(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cosine(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    #[test]
    fn deterministic_and_normalised() {
        let e = HashEmbedder::new(256);
        let a = e.embed(&["The deploy failed on Friday"]).unwrap();
        let b = e.embed(&["The deploy failed on Friday"]).unwrap();
        assert_eq!(a, b);
        let norm: f32 = a[0].iter().map(|x| x * x).sum();
        assert!((norm - 1.0).abs() < 1e-4);
    }

    #[test]
    fn lexical_overlap_gives_similarity() {
        let e = HashEmbedder::new(256);
        let v = e
            .embed(&[
                "Alice prefers green tea in the morning",
                "what tea does alice prefer?",
                "the quarterly budget review is on thursday",
            ])
            .unwrap();
        let related = cosine(&v[0], &v[1]);
        let unrelated = cosine(&v[0], &v[2]);
        assert!(related > 0.4, "related {related}");
        assert!(
            related > unrelated + 0.3,
            "related {related} unrelated {unrelated}"
        );
    }

    #[test]
    fn text_without_words_is_a_zero_vector() {
        let e = HashEmbedder::new(64);
        let v = e.embed(&["?!  ..."]).unwrap();
        assert!(v[0].iter().all(|x| *x == 0.0));
    }
}
