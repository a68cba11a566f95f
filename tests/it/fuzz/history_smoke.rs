//! A bounded fuzz run of the history reader inside `cargo test`: thousands of history files
//! mutated from real ones (the `--trace` of bundled scenarios, with and without bug switches, and
//! the hand-written external history), each checked by `support/history_props.rs`: no panic,
//! every refusal a short message naming the file (exit 2 as `verify` shows it), every accepted
//! history judged and written back to the same records. Deterministic (a fixed seed), a few
//! seconds. The open-ended fuzzer is `cargo fuzz run history` (fuzz/README.md).
//!
//! `FUZZ_SMOKE_INPUTS=N` runs N inputs instead of the default.

use crate::support::history::run_request_with_history;
use crate::support::history_props::check_history_bytes;
use crate::support::splitmix::Rng;
use crate::support::{enable_bug, load, read, root};
use durasim::run::RunRequest;

const DEFAULT_INPUTS: usize = 3000;

/// Values on the edges of what a field accepts, and of what JSON can say.
const VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "9007199254740991",
    "9007199254740992",
    "18446744073709551615",
    "18446744073709551616",
    "4294967295",
    "4294967296",
    "0.5",
    "1e308",
    "true",
    "null",
    "\"\"",
    "\"x\"",
    "\"evil\u{202e}gnp\"",
    "\"\\u0007bell\"",
    "\"acme:doc-1:v1\"",
    "\"doc-1:v0\"",
    "\"acme:doc-1:v65536\"",
    "\"Acme:doc-1:v1\"",
    "\"ffffffffffffffff\"",
    "\"0123456789abcdef0\"",
    "\"provider_unavailable\"",
    "\"stale_fence\"",
    "[]",
    "{}",
    "{\"max\": 1, \"window\": 0}",
];

/// Record types, to swap in.
const TYPES: &[&str] = &[
    "enqueued",
    "leased",
    "heartbeat",
    "acked",
    "retry_scheduled",
    "dead_lettered",
    "cancelled",
    "dlq_evicted",
    "lease_expired",
    "visible",
    "depth_sampled",
    "reprocessed",
    "reprocess_refused",
    "attempt_failed",
    "result_committed",
    "commit_deduped",
    "published",
    "effect_applied",
    "run_ended",
    "run_started",
    "teleported",
];

/// One mutation of a history's text.
fn mutate(r: &mut Rng, text: &str, others: &[String]) -> Vec<u8> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    match r.below(10) {
        // Replace one field's value (header included).
        0..=3 => {
            let i = r.below(lines.len());
            if let Ok(serde_json::Value::Object(mut m)) =
                serde_json::from_str::<serde_json::Value>(&lines[i])
            {
                let keys: Vec<String> = m.keys().cloned().collect();
                if let Some(k) = keys.get(r.below(keys.len())) {
                    let v = r.pick(VALUES);
                    m.insert(
                        k.clone(),
                        serde_json::from_str(v).unwrap_or(serde_json::Value::Null),
                    );
                    if k == "config" && r.below(2) == 0 {
                        // Or one setting of the configuration.
                        let mut c = serde_json::Map::new();
                        c.insert("lease".into(), serde_json::from_str(v).unwrap_or_default());
                        m.insert(k.clone(), serde_json::Value::Object(c));
                    }
                }
                lines[i] = serde_json::to_string(&m).unwrap();
            }
        }
        // Change a record's type.
        4 => {
            let i = 1 + r.below(lines.len().saturating_sub(1).max(1));
            if let Some(l) = lines.get_mut(i) {
                if let Ok(serde_json::Value::Object(mut m)) = serde_json::from_str(l) {
                    m.insert("type".into(), serde_json::json!(r.pick(TYPES)));
                    *l = serde_json::to_string(&m).unwrap();
                }
            }
        }
        // Delete, duplicate or swap lines.
        5 | 6 => {
            let i = r.below(lines.len());
            let j = r.below(lines.len());
            match r.below(3) {
                0 => {
                    lines.remove(i);
                }
                1 => {
                    let l = lines[i].clone();
                    lines.insert(j, l);
                }
                _ => lines.swap(i, j),
            }
        }
        // Splice in lines of another history (ids, keys and times that do not fit).
        7 => {
            let other: Vec<&str> = r.pick(others).lines().collect();
            let from = r.below(other.len());
            let at = r.below(lines.len() + 1);
            for (k, l) in other.iter().skip(from).take(1 + r.below(5)).enumerate() {
                lines.insert(at + k, l.to_string());
            }
        }
        // Add an unknown field, or remove one.
        8 => {
            let i = r.below(lines.len());
            if let Ok(serde_json::Value::Object(mut m)) =
                serde_json::from_str::<serde_json::Value>(&lines[i])
            {
                if r.below(2) == 0 {
                    m.insert("colour\u{15}".into(), serde_json::json!(1));
                } else if let Some(k) = m.keys().nth(r.below(m.len().max(1))).cloned() {
                    m.remove(&k);
                }
                lines[i] = serde_json::to_string(&m).unwrap();
            }
        }
        // Raw bytes: truncate, flip a byte, or a very long line.
        _ => {
            let mut b = (lines.join("\n") + "\n").into_bytes();
            match r.below(3) {
                0 if !b.is_empty() => {
                    let i = r.below(b.len());
                    b.truncate(i);
                }
                1 if !b.is_empty() => {
                    let i = r.below(b.len());
                    b[i] = *r.pick(b"{}[]\":,0z\n\r\x00\x7f\xff");
                }
                _ => b.extend(std::iter::repeat_n(b'x', 5000)),
            }
            return b;
        }
    }
    (lines.join("\n") + "\n").into_bytes()
}

/// Real histories: the traces of a few bundled scenarios (some with a bug switch on) and the
/// hand-written external one.
fn bases() -> Vec<String> {
    let mut out = Vec::new();
    for (name, bug) in [
        ("incident-crash-before-ack", None),
        ("zombie-worker", Some("no_fencing")),
        ("paused-holder", None),
        ("dlq-reprocess", None),
        ("payload-conflict", Some("hash_ignores_content")),
        ("dlq-eviction", None),
        ("deadline-cancel", None),
    ] {
        let s = load(name);
        let mut request = RunRequest::for_scenario(&s);
        if let Some(b) = bug {
            enable_bug(&mut request.bugs, b);
        }
        let (_, lines) = run_request_with_history(&s, request);
        out.push(lines.join("\n") + "\n");
    }
    out.push(read(&root().join("tests/data/external-history.jsonl")));
    out
}

#[test]
fn mutated_histories_never_panic_and_are_refused_clearly_or_judged() {
    let bases = bases();
    for b in &bases {
        assert_eq!(
            check_history_bytes(b.as_bytes()),
            Ok(true),
            "a base is a history"
        );
    }
    let n: usize = std::env::var("FUZZ_SMOKE_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_INPUTS);
    let mut r = Rng(0x0068_6973_746f_7279);
    let (mut accepted, mut refused) = (0, 0);
    let started = std::time::Instant::now();
    for i in 0..n {
        let base = r.pick(&bases).clone();
        let mut input = mutate(&mut r, &base, &bases);
        // Sometimes mutate again.
        while r.below(3) == 0 {
            input = mutate(&mut r, &String::from_utf8_lossy(&input), &bases);
        }
        let result = std::panic::catch_unwind(|| check_history_bytes(&input));
        match result {
            Ok(Ok(true)) => accepted += 1,
            Ok(Ok(false)) => refused += 1,
            Ok(Err(broken)) => panic!(
                "input {i} broke a property: {broken}\n{}",
                String::from_utf8_lossy(&input)
            ),
            Err(_) => panic!("input {i} panicked:\n{}", String::from_utf8_lossy(&input)),
        }
    }
    println!(
        "{n} histories: {accepted} judged, {refused} refused, in {:.2} s",
        started.elapsed().as_secs_f64()
    );
    assert!(accepted > 0 && refused > 0, "{accepted} / {refused}");
}
