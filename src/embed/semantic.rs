//! The semantic backend: a local ONNX sentence-embedding model (all-MiniLM-L6-v2 by
//! default) run through the `fastembed` crate with mean pooling. Nothing is downloaded:
//! the model files come from a folder and ONNX Runtime from a shared library path, both
//! put in place by `scripts/fetch-model.sh`.

use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use fastembed::{
    InitOptionsUserDefined, Pooling, QuantizationMode, TextEmbedding, TokenizerFiles,
    UserDefinedEmbeddingModel,
};

use super::{l2_normalize, EmbedError, Embedder};
use crate::config::EmbeddingConfig;

/// The files a model folder must hold.
const MODEL_FILES: [&str; 5] = [
    "model.onnx",
    "tokenizer.json",
    "config.json",
    "special_tokens_map.json",
    "tokenizer_config.json",
];

/// ONNX Runtime can be loaded once per process; this is the library that was.
static LOADED_RUNTIME: OnceLock<PathBuf> = OnceLock::new();

pub struct SemanticEmbedder {
    model_id: String,
    dimensions: usize,
    batch_size: usize,
    /// `TextEmbedding::embed` takes `&mut self`; one model call at a time is also what
    /// two cores can usefully run.
    model: Mutex<TextEmbedding>,
}

impl SemanticEmbedder {
    /// Loads ONNX Runtime and the model; every missing piece is an error naming its path.
    pub fn load(config: &EmbeddingConfig) -> Result<Self, EmbedError> {
        let loaded = load_model(config)?;
        Ok(Self {
            model_id: loaded.model_id,
            dimensions: loaded.dimensions,
            batch_size: config.batch_size,
            model: Mutex::new(loaded.model),
        })
    }
}

/// A loaded model with what describes it.
pub(super) struct LoadedModel {
    pub model: TextEmbedding,
    pub model_id: String,
    pub dimensions: usize,
}

/// Loads ONNX Runtime and the configured model folder (mean pooling); every missing piece
/// is an error naming its path. The embedder and the late-interaction reranker each load
/// their own instance, so a search never waits behind a batch of the background queue.
pub(super) fn load_model(config: &EmbeddingConfig) -> Result<LoadedModel, EmbedError> {
    load_model_file(config, MODEL_FILES[0])
}

/// [`load_model`] with the network read from `onnx_file` of the model folder instead of
/// `model.onnx` (the same tokenizer and configuration).
pub(super) fn load_model_file(
    config: &EmbeddingConfig,
    onnx_file: &str,
) -> Result<LoadedModel, EmbedError> {
    load_runtime(&config.onnxruntime)?;
    let dir = &config.model_dir;
    if !dir.is_dir() {
        return Err(EmbedError::Model(format!(
            "model folder {} does not exist (run scripts/fetch-model.sh, or set embedding.model_dir)",
            dir.display()
        )));
    }
    let read = |name: &str| -> Result<Vec<u8>, EmbedError> {
        let path = dir.join(name);
        std::fs::read(&path).map_err(|e| {
            EmbedError::Model(format!(
                "cannot read {}: {e} (run scripts/fetch-model.sh)",
                path.display()
            ))
        })
    };
    let files: Vec<Vec<u8>> = std::iter::once(onnx_file)
        .chain(MODEL_FILES[1..].iter().copied())
        .map(read)
        .collect::<Result<_, _>>()?;
    let [onnx, tokenizer, model_config, special_tokens, tokenizer_config]: [Vec<u8>; 5] =
        files.try_into().expect("five files");
    let dimensions = hidden_size(&model_config, &dir.join("config.json"))?;
    // The id names the folder and the model's bytes: a different model, or the same
    // folder holding new weights, is a model change that triggers a re-embed.
    let digest = blake3::hash(&onnx).to_hex();
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "model".into());
    let model_id = format!("fastembed-{name}-{}-{}", &digest[..12], config.max_length);

    let model = UserDefinedEmbeddingModel::new(
        onnx,
        TokenizerFiles {
            tokenizer_file: tokenizer,
            config_file: model_config,
            special_tokens_map_file: special_tokens,
            tokenizer_config_file: tokenizer_config,
        },
    )
    .with_pooling(Pooling::Mean)
    // The int8 model quantizes activations per call; declaring it `None` lets fastembed
    // batch. A text's vector then varies in the last digits with its batch-mates,
    // which search does not notice.
    .with_quantization(QuantizationMode::None);
    let mut options = InitOptionsUserDefined::new().with_max_length(config.max_length);
    if config.threads > 0 {
        options = options.with_intra_threads(config.threads);
    }
    let model = TextEmbedding::try_new_from_user_defined(model, options).map_err(|e| {
        EmbedError::Model(format!("cannot load the model in {}: {e}", dir.display()))
    })?;
    Ok(LoadedModel {
        model,
        model_id,
        dimensions,
    })
}

/// Loads the ONNX Runtime library once per process, checking it is a compatible version.
fn load_runtime(path: &Path) -> Result<(), EmbedError> {
    if let Some(loaded) = LOADED_RUNTIME.get() {
        return if same_file(loaded, path) {
            Ok(())
        } else {
            Err(EmbedError::Runtime(format!(
                "ONNX Runtime is already loaded from {}; cannot load {} too",
                loaded.display(),
                path.display()
            )))
        };
    }
    if !path.is_file() {
        return Err(EmbedError::Runtime(format!(
            "ONNX Runtime library {} does not exist (run scripts/fetch-model.sh, or set embedding.onnxruntime)",
            path.display()
        )));
    }
    ort::init_from(path).map_err(|e| {
        EmbedError::Runtime(format!(
            "cannot load ONNX Runtime from {}: {e}",
            path.display()
        ))
    })?;
    let _ = LOADED_RUNTIME.set(path.to_path_buf());
    Ok(())
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// The model's output width, from its config.json (`hidden_size`).
fn hidden_size(config: &[u8], path: &Path) -> Result<usize, EmbedError> {
    let value: serde_json::Value = serde_json::from_slice(config)
        .map_err(|e| EmbedError::Model(format!("{} is not valid JSON: {e}", path.display())))?;
    value
        .get("hidden_size")
        .and_then(serde_json::Value::as_u64)
        .filter(|n| (1..=8192).contains(n))
        .map(|n| n as usize)
        .ok_or_else(|| {
            EmbedError::Model(format!(
                "{} has no usable `hidden_size` (the embedding width)",
                path.display()
            ))
        })
}

impl Embedder for SemanticEmbedder {
    fn model_id(&self) -> &str {
        &self.model_id
    }

    fn dimensions(&self) -> usize {
        self.dimensions
    }

    fn embed(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        // A text with nothing to read gets the zero vector, as with the hash backend, so
        // it matches nothing instead of matching everything a little.
        let mut out = vec![Vec::new(); texts.len()];
        let mut order: Vec<usize> = (0..texts.len())
            .filter(|&i| !texts[i].trim().is_empty())
            .collect();
        // Batch texts of similar length together: padding is wasted work.
        order.sort_by_key(|&i| texts[i].len());
        let mut model = self.model.lock().expect("model lock");
        for batch in order.chunks(self.batch_size) {
            let inputs: Vec<&str> = batch.iter().map(|&i| texts[i]).collect();
            let vectors = model
                .embed(&inputs, Some(self.batch_size))
                .map_err(|e| EmbedError::Failed(e.to_string()))?;
            if vectors.len() != inputs.len() {
                return Err(EmbedError::Failed(format!(
                    "the model returned {} vectors for {} texts",
                    vectors.len(),
                    inputs.len()
                )));
            }
            for (&i, mut vector) in batch.iter().zip(vectors) {
                if vector.len() != self.dimensions {
                    return Err(EmbedError::Failed(format!(
                        "the model returned {} dimensions, its config says {}",
                        vector.len(),
                        self.dimensions
                    )));
                }
                l2_normalize(&mut vector);
                out[i] = vector;
            }
        }
        for vector in out.iter_mut().filter(|v| v.is_empty()) {
            *vector = vec![0.0; self.dimensions];
        }
        Ok(out)
    }
}
