//! `nightshift eval`: a dev set ingested into a scratch database and its questions asked
//! through the real search, once, per stage of search (`--ablate`) or per search setting
//! (`--vary`).

use nightshift::app::App;
use nightshift::config::{Config, SearchConfig};
use nightshift::error::Error;
use nightshift::memory::Memory;
use serde_json::json;

use super::args::{EvalArgs, EvalCommand};
use super::output::print;

/// Largest dev-set file read.
const EVAL_FILE_LIMIT: usize = 256 * 1024 * 1024;

pub async fn eval(config: &Config, command: EvalCommand, json: bool) -> Result<(), Error> {
    use nightshift::eval;
    let (parse, args): (fn(&str) -> _, _) = match command {
        EvalCommand::Locomo(args) => (eval::locomo::parse, args),
        EvalCommand::Chats(args) => (eval::chats::parse, args),
    };
    let EvalArgs {
        file,
        k,
        ablate,
        vary,
    } = args;
    let ks = eval::parse_ks(&k, config.search.max_top_k)?;
    // Checked before anything is read or stored, so a typo costs no ingest.
    let most_hits = ks.iter().copied().max().unwrap_or(1);
    let variants = eval::variants(config, &vary, most_hits)?;
    let staged = ablate || !variants.is_empty();
    let bytes = super::input::file_arg(&file, EVAL_FILE_LIMIT)?;
    let text = nightshift::input::utf8(&file.display().to_string(), bytes)?;
    let conversations = parse(&text)?;
    // A scratch database: evaluation never touches the real one.
    let scratch =
        std::env::temp_dir().join(format!("{}.db", nightshift::ids::new_id("nightshift-eval")));
    let mut scratch_config = config.clone();
    scratch_config.database.path = scratch.display().to_string();
    // A cut turn's whole text is not searched: kept as an artifact it would only write
    // files (maybe in the real `[artifacts] dir`) that outlive the scratch database.
    if scratch_config.memory.oversize == nightshift::config::Oversize::Artifact {
        scratch_config.memory.oversize = nightshift::config::Oversize::Truncate;
    }
    let result = async {
        let app = App::open(&scratch_config).await?;
        let memory = app.memory().clone();
        let stages = if ablate {
            ablation_stages(config, memory.clone())
        } else if !variants.is_empty() {
            varied_stages(config, memory.clone(), variants)
        } else {
            vec![(String::new(), memory.clone())]
        };
        let reports = eval::evaluate_stages(&conversations, &ks, &stages).await?;
        Ok::<_, Error>((reports, memory.embedder().model_id().to_string()))
    }
    .await;
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", scratch.display()));
    }
    let (reports, model) = result?;
    let Some((_, first)) = reports.first() else {
        return Ok(());
    };
    let mut out = serde_json::json!({
        "questions": first.questions,
        "conversations": first.conversations,
        "turns": first.turns,
        "skipped": first.skipped,
        "refused_turns": first.refused_turns,
        "embedding_model": model,
    });
    let stage_json = |report: &eval::Report| {
        let mut out = serde_json::json!({
            "latency_ms_p50": report.latency_ms_p50,
            "latency_ms_p95": report.latency_ms_p95,
        });
        for (k, recall) in &report.recall {
            out[format!("recall@{k}")] = json!(recall);
        }
        let mut categories = serde_json::Map::new();
        for (category, score) in &report.per_category {
            let mut entry = json!({"questions": score.questions});
            for (k, recall) in &score.recall {
                entry[format!("recall@{k}")] = json!(recall);
            }
            categories.insert(category.to_string(), entry);
        }
        out["per_category"] = serde_json::Value::Object(categories);
        out
    };
    if staged {
        out["stages"] = reports
            .iter()
            .map(|(name, report)| {
                let mut entry = stage_json(report);
                entry["stage"] = json!(name);
                entry
            })
            .collect();
    } else if let serde_json::Value::Object(fields) = stage_json(first) {
        for (key, value) in fields {
            out[key] = value;
        }
    }
    print(json, &out, || {
        let mut lines = vec![format!(
            "{} questions over {} conversations ({} turns)",
            first.questions, first.conversations, first.turns
        )];
        if first.refused_turns > 0 {
            lines.push(format!(
                "{} turns refused as over memory.max_text_bytes (oversize = \"truncate\" keeps them); \
                 questions about them count as misses",
                first.refused_turns
            ));
        }
        for (name, report) in &reports {
            if !name.is_empty() {
                lines.push(String::new());
                lines.push(format!("{name}:"));
            }
            let ks: Vec<String> = report
                .recall
                .iter()
                .map(|(k, r)| format!("recall@{k} {r:.3}"))
                .collect();
            lines.push(format!(
                "overall       {}  latency p50 {:.1} ms  p95 {:.1} ms",
                ks.join("  "),
                report.latency_ms_p50,
                report.latency_ms_p95
            ));
            for (category, score) in &report.per_category {
                let ks: Vec<String> = score
                    .recall
                    .iter()
                    .map(|(k, r)| format!("recall@{k} {r:.3}"))
                    .collect();
                // LoCoMo's categories are numbers; the chats' kinds are words.
                let label = if category.bytes().all(|b| b.is_ascii_digit()) {
                    format!("category {category}")
                } else {
                    category.clone()
                };
                lines.push(format!(
                    "{label:<14}{}  ({} questions)",
                    ks.join("  "),
                    score.questions
                ));
            }
        }
        if staged {
            // The stages side by side, so a sweep reads at a glance.
            lines.push(String::new());
            let header: Vec<String> = first.recall.keys().map(|k| format!("@{k:<6}")).collect();
            lines.push(format!("{}  p95 ms  stage", header.join(" ")));
            for (name, report) in &reports {
                let cells: Vec<String> = report
                    .recall
                    .values()
                    .map(|r| format!("{r:.3}  "))
                    .collect();
                lines.push(format!(
                    "{} {:>6.1}  {name}",
                    cells.join(" "),
                    report.latency_ms_p95
                ));
            }
        }
        lines.join("\n")
    })
}

/// The stages `eval locomo --ablate` compares, each the configured search with the later
/// stages turned off: the fusion without the speaker cue (`search.speaker_weight` 0),
/// fusion only, + rerank (late interaction, whatever `search.rerank` says), + multi-hop
/// (`search.multi_hop_seeds`, at least 1).
fn ablation_stages(config: &Config, memory: Memory) -> Vec<(String, Memory)> {
    use nightshift::config::RerankMode;
    let memory = memory.with_rerank_stage(std::sync::Arc::new(
        nightshift::memory::RerankStage::late_interaction(
            config.embedding.clone(),
            config.search.rerank_cache_mib,
        ),
    ));
    let mut fusion = config.search.clone();
    fusion.rerank = RerankMode::None;
    let mut reranked = config.search.clone();
    reranked.rerank = RerankMode::LateInteraction;
    let mut multi_hop = reranked.clone();
    multi_hop.multi_hop_seeds = multi_hop.multi_hop_seeds.max(1);
    reranked.multi_hop_seeds = 0;
    fusion.multi_hop_seeds = 0;
    let mut unnamed = fusion.clone();
    unnamed.speaker_weight = 0.0;
    vec![
        (
            "fusion, no speaker cue".to_string(),
            memory.clone().with_search_config(unnamed),
        ),
        (
            "fusion only".to_string(),
            memory.clone().with_search_config(fusion),
        ),
        (
            "+ rerank".to_string(),
            memory.clone().with_search_config(reranked),
        ),
        (
            "+ multi-hop".to_string(),
            memory.with_search_config(multi_hop),
        ),
    ]
}

/// The stages `eval … --vary` compares: the configured search first, then each variant
/// (see `eval::variants`), with the second stage at hand for a variant that turns it on.
fn varied_stages(
    config: &Config,
    memory: Memory,
    variants: Vec<(String, SearchConfig)>,
) -> Vec<(String, Memory)> {
    use nightshift::config::RerankMode;
    let memory = if variants
        .iter()
        .any(|(_, search)| search.rerank != RerankMode::None)
    {
        memory.with_rerank_stage(std::sync::Arc::new(
            nightshift::memory::RerankStage::late_interaction(
                config.embedding.clone(),
                config.search.rerank_cache_mib,
            ),
        ))
    } else {
        memory
    };
    let configured = ("configured".to_string(), memory.clone());
    std::iter::once(configured)
        .chain(
            variants
                .into_iter()
                .map(|(name, search)| (name, memory.clone().with_search_config(search))),
        )
        .collect()
}
