use serde_json::json;

use super::*;

fn turn(sequence: i64, role: Role, payload: Value) -> Turn {
    Turn {
        sequence,
        role,
        payload,
        created_at: 1_000 + sequence,
    }
}

fn calls(names: &[(&str, Value)]) -> Value {
    let calls: Vec<Value> = names
        .iter()
        .map(|(name, args)| {
            json!({"id": "c", "type": "function",
            "function": {"name": name, "arguments": args.to_string()}})
        })
        .collect();
    json!({"tool_calls": calls})
}

fn transcript() -> Vec<Turn> {
    let q = json!({"query": "x"});
    vec![
        turn(1, Role::User, json!({})),
        turn(2, Role::Assistant, calls(&[("search", q.clone())])),
        turn(3, Role::Tool, json!({"name": "search"})),
        turn(
            4,
            Role::Assistant,
            calls(&[("save", json!({"content": "a"}))]),
        ),
        turn(5, Role::Tool, json!({"name": "save"})),
        turn(6, Role::Assistant, json!({})),
        turn(7, Role::User, json!({})),
        turn(8, Role::User, json!({})),
        turn(
            9,
            Role::Assistant,
            calls(&[("search", q), ("forget", json!({}))]),
        ),
        turn(10, Role::Assistant, json!({"omitted": "big"})),
        turn(
            11,
            Role::Assistant,
            calls(&[("save", json!({"content": "b"}))]),
        ),
    ]
}

#[test]
fn runs_begin_at_the_opening_user_turns() {
    let turns = transcript();
    assert_eq!(run_starts(&turns), vec![0, 6]);
    let runs = split_runs(&turns);
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0].calls.len(), 2);
    assert_eq!(runs[1].calls.len(), 4);
    assert_eq!(runs[1].calls[2], None);
    assert_eq!(runs[0].calls[0].as_ref().unwrap().pattern, "query");
}

#[test]
fn a_full_batch_keeps_whole_runs_only() {
    let turns = transcript();
    assert_eq!(complete_prefix(&turns, 100), 11);
    assert_eq!(complete_prefix(&turns, 11), 6);
    assert_eq!(complete_prefix(&turns[..6], 6), 6);
}

#[test]
fn a_left_out_payload_breaks_the_chain() {
    let runs = split_runs(&transcript());
    let seen = observe(&runs[1]);
    let search = ("search".to_string(), "query".to_string());
    let forget = ("forget".to_string(), String::new());
    assert!(seen.triggers.contains(&search));
    assert!(seen
        .chains
        .contains_key(&(search.clone(), ("forget".into(), String::new()))));
    // forget → save crosses the left-out turn.
    assert!(!seen.chains.keys().any(|(t, _)| *t == forget));
    let first = observe(&runs[0]);
    assert_eq!(
        first.chains[&(search, ("save".into(), String::new()))],
        vec![json!({"content": "a"})]
    );
}

#[test]
fn argument_templates_keep_constants_and_null_what_varies() {
    let mut template = json!({});
    merge_args(&mut template, &json!({"tag": "daily", "content": "a"}));
    merge_args(&mut template, &json!({"tag": "daily", "content": "b"}));
    assert_eq!(template, json!({"tag": "daily", "content": null}));
}

#[test]
fn counts_decay_with_runs_of_the_trigger_only() {
    let mut learning = Learning {
        decay: 0.5,
        triggers: Default::default(),
        rows: Default::default(),
    };
    let call = |tool: &str| {
        Some(Call {
            tool: tool.into(),
            pattern: String::new(),
            arguments: json!({}),
        })
    };
    let ab = Run {
        at: 1,
        calls: vec![call("a"), call("b")],
    };
    let ac = Run {
        at: 2,
        calls: vec![call("a"), call("c")],
    };
    let other = Run {
        at: 3,
        calls: vec![call("x"), call("y")],
    };
    learning.add(&ab);
    learning.add(&ab);
    learning.add(&other);
    let a = ("a".to_string(), String::new());
    let b = ("b".to_string(), String::new());
    assert_eq!(learning.triggers[&a].runs, 1.5);
    assert_eq!(learning.rows[&a][&b].support, 1.5);
    learning.add(&ac);
    assert_eq!(learning.triggers[&a].runs, 1.75);
    assert_eq!(learning.rows[&a][&b].support, 0.75);
    assert_eq!(learning.rows[&a][&b].seen_count, 2);
}
