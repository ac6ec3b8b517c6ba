//! `eval … --vary search.KEY=V1,V2`: several search settings scored over one ingest. The
//! ingest (above all embedding every chunk) is most of an evaluation's time, while search
//! settings are read at query time only; so each value of each varied key is one more
//! stage of [`super::evaluate_stages`], the configured settings with that one key changed.

use crate::config::{Config, SearchConfig};

use super::EvalError;

/// Most values one evaluation compares, over all `--vary` keys: each is a full pass over
/// the questions.
pub const MAX_VARIANTS: usize = 64;

/// One `--vary` argument: a search key and the values it takes in turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Variation {
    /// The key within `[search]` (without the `search.` prefix).
    pub key: String,
    /// Each value as written (TOML: a number, `true`, or a word such as
    /// `late-interaction`).
    pub values: Vec<String>,
}

/// Reads `search.KEY=V1,V2,…`. The key is checked against the settings by [`variants`].
pub fn parse_variation(text: &str) -> Result<Variation, EvalError> {
    let bad = |why: &str| EvalError::BadVary(format!("`{text}`: {why}"));
    let (key, values) = text
        .split_once('=')
        .ok_or_else(|| bad("write search.KEY=V1,V2, like search.keyword_weight=0.5,0.7"))?;
    let key = key
        .trim()
        .strip_prefix("search.")
        .ok_or_else(|| {
            bad("only `search.` keys can vary over one ingest (the rest change what is stored)")
        })?
        .to_string();
    if key.is_empty() {
        return Err(bad("no key after `search.`"));
    }
    let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(String::is_empty) {
        return Err(bad("an empty value: separate values with single commas"));
    }
    if values.iter().any(|v| v.chars().any(char::is_control)) {
        return Err(bad("a value holds a control character"));
    }
    Ok(Variation { key, values })
}

/// The settings each variation names: for each value of each key, the configured search
/// settings with that key set to it, named `search.KEY = VALUE`, each valid as a whole
/// config (the same checks as loading one). An unknown key, a value of the wrong type or
/// out of range is an error naming it; more than [`MAX_VARIANTS`] values in all too.
pub fn variants(
    config: &Config,
    variations: &[Variation],
    most_hits: usize,
) -> Result<Vec<(String, SearchConfig)>, EvalError> {
    let count: usize = variations.iter().map(|v| v.values.len()).sum();
    if count > MAX_VARIANTS {
        return Err(EvalError::BadVary(format!(
            "{count} values in all: at most {MAX_VARIANTS}, each is a pass over every question"
        )));
    }
    let configured = toml::Value::try_from(&config.search)
        .map_err(|err| EvalError::BadVary(format!("the configured [search]: {err}")))?;
    let mut out = Vec::with_capacity(count);
    for variation in variations {
        let key = &variation.key;
        if let Some(why) = FIXED.iter().find(|(k, _)| k == key).map(|(_, why)| why) {
            return Err(EvalError::BadVary(format!(
                "`search.{key}` cannot vary within one run: {why}"
            )));
        }
        if configured.get(key).is_none() {
            let known: Vec<&str> = configured
                .as_table()
                .map(|t| t.keys().map(String::as_str).collect())
                .unwrap_or_default();
            return Err(EvalError::BadVary(format!(
                "`search.{key}` is not a search setting; these are: {}",
                known.join(", ")
            )));
        }
        for text in &variation.values {
            let name = format!("search.{key} = {text}");
            let bad = |why: String| EvalError::BadVary(format!("`{name}`: {why}"));
            let mut table = configured.clone();
            table
                .as_table_mut()
                .expect("a struct serializes as a table")
                .insert(key.clone(), toml_value(text));
            let search: SearchConfig = table.try_into().map_err(|err| bad(err.to_string()))?;
            let mut whole = config.clone();
            whole.search = search.clone();
            whole.validate().map_err(|err| bad(err.to_string()))?;
            if search.max_top_k < most_hits {
                return Err(bad(format!(
                    "below the largest --k ({most_hits}), which every stage is asked for"
                )));
            }
            out.push((name, search));
        }
    }
    Ok(out)
}

/// Search keys a stage cannot change, and why: the caches are sized when the store
/// opens, and `eval` asks each question for its largest k itself.
const FIXED: [(&str, &str); 4] = [
    (
        "vector_cache_mib",
        "the cache is sized when the store opens",
    ),
    (
        "keyword_cache_mib",
        "the cache is sized when the store opens",
    ),
    (
        "rerank_cache_mib",
        "the cache is sized when the store opens",
    ),
    (
        "default_top_k",
        "every question is asked for the largest --k",
    ),
];

/// A value as TOML reads it (`0.5`, `200`, `true`), else as the word it is
/// (`late-interaction`), which is how the config file would quote it.
fn toml_value(text: &str) -> toml::Value {
    format!("v = {text}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut table| table.remove("v"))
        .unwrap_or_else(|| toml::Value::String(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vary(text: &str) -> Result<Vec<(String, SearchConfig)>, EvalError> {
        variants(&Config::default(), &[parse_variation(text)?], 10)
    }

    #[test]
    fn each_value_is_the_configured_settings_with_one_key_changed() {
        let out = vary("search.keyword_weight=0.5, 0.8").unwrap();
        let names: Vec<&str> = out.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            ["search.keyword_weight = 0.5", "search.keyword_weight = 0.8"]
        );
        let expected = SearchConfig {
            keyword_weight: 0.8,
            ..Default::default()
        };
        assert_eq!(out[1].1, expected);
        let out = vary("search.rerank=late-interaction").unwrap();
        assert_eq!(out[0].1.rerank, crate::config::RerankMode::LateInteraction);
        assert_eq!(vary("search.candidates=200").unwrap()[0].1.candidates, 200);
    }

    #[test]
    fn a_bad_key_or_value_is_refused_naming_it() {
        let message = |text: &str| vary(text).unwrap_err().to_string();
        assert!(message("search.keywrd_weight=1").contains("search.keywrd_weight"));
        assert!(message("search.keywrd_weight=1").contains("keyword_weight"));
        assert!(message("memory.chunk_chars=320").contains("only `search.` keys"));
        assert!(message("search.keyword_weight").contains("search.KEY=V1,V2"));
        assert!(message("search.keyword_weight=0.5,,1").contains("empty value"));
        assert!(message("search.keyword_weight=0.5\n[x]").contains("control character"));
        assert!(message("search.keyword_weight=nan").contains("search.keyword_weight"));
        assert!(message("search.keyword_weight=1.5").contains("search.keyword_weight"));
        assert!(message("search.candidates=ten").contains("search.candidates = ten"));
        assert!(message("search.candidates=-1").contains("search.candidates"));
        assert!(message("search.rerank=sometimes").contains("search.rerank"));
        assert!(message("search.max_top_k=5").contains("largest --k (10)"));
        assert!(message("search.multi_hop_weight=nan").contains("search.multi_hop_weight"));
        assert!(message("search.multi_hop_seeds=50").contains("search.multi_hop_seeds"));
        assert!(message("search.keyword_cache_mib=1").contains("cannot vary"));
        let many = format!("search.candidates={}", vec!["100"; 65].join(","));
        assert!(message(&many).contains("at most 64"));
    }
}
