//! A bounded fuzz run inside `cargo test`: thousands of scenario files mutated from the bundled
//! ones (and a few generated from nothing), each checked by `support/scenario_props.rs`: no panic,
//! every refusal a message naming the file (exit 2 as the CLI shows it), every accepted file
//! written back and parsed again to the same scenario. Deterministic (a fixed seed), a few
//! seconds. The open-ended fuzzer is `cargo fuzz run scenario` (fuzz/README.md).
//!
//! `FUZZ_SMOKE_INPUTS=N` runs N inputs instead of the default.

use crate::support::scenario_props::check_scenario_bytes;
use crate::support::splitmix::Rng;
use crate::support::{quiet_panics, read, scenario_files};

const DEFAULT_INPUTS: usize = 4000;

/// Values that sit on the edges of what a field accepts.
const VALUES: &[&str] = &[
    "0",
    "1",
    "-1",
    "2",
    "999999999999",
    "1000000000000",
    "1000000000001",
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775808",
    "4294967295",
    "4294967296",
    "10000001",
    "0.5",
    "1.0000001",
    "-0.0",
    "1e308",
    "nan",
    "inf",
    "-inf",
    "true",
    "\"\"",
    "\"BAD OP\"",
    "\"evil\u{202e}gnp\"",
    "\"a:b\"",
    "\"acme\"",
    "\"after_lease\"",
    "\"crash\"",
    "\"constant\"",
    "[]",
    "[1]",
    "[0.1, 0.2, 0.3]",
    "[\"acme\", \"acme\"]",
    "{}",
    "{ dist = \"constant\", value = 5 }",
    "{ dist = \"uniform\", min = 9, max = 1 }",
    "{ dist = \"lognormal\", median = 5, sigma = 1e300 }",
    "{ dist = \"exponential\", mean = -1 }",
    "{ from_ms = 5, to_ms = 5 }",
    "1979-05-27T07:32:00Z",
];

/// Lines that add sections, arrays of tables and keys the bundled files rarely use.
const LINES: &[&str] = &[
    "[[script]]",
    "[[operator]]",
    "[[enqueue]]",
    "[[burst]]",
    "[swarm]",
    "[dlq]",
    "[outbox]",
    "[consumer]",
    "[expect]",
    "[bugs]",
    "[run]",
    "at_ms = 0",
    "job = 0",
    "fault = \"crash\"",
    "point = \"after_lease\"",
    "attempt = 9",
    "action = \"reprocess_dlq\"",
    "operator = \"ana\"",
    "tenant = \"acme\"",
    "document = \"doc-1\"",
    "jobs = 3",
    "repeat = 2",
    "every_ms = 0",
    "heartbeat_ms = 5000",
    "time_limit_ms = 1",
    "violations = [\"fenced_writes\"]",
    "trace_hash = \"zz\"",
    "capacity = 0",
    "crash = [0.1, 0.9]",
    "workers = [0, 2]",
];

fn long_value(r: &mut Rng) -> String {
    let n = [81, 500, 5000, 100_000][r.below(4)];
    let c = *r.pick(&['x', ':', ' ', '\u{202e}', '"', 'é']);
    let body: String = std::iter::repeat_n(c, n).collect();
    format!("\"{}\"", body.replace('"', "\\\""))
}

/// One mutation of `text`.
fn mutate(r: &mut Rng, text: &str, others: &[String]) -> String {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    if lines.is_empty() {
        lines.push(String::new());
    }
    match r.below(10) {
        // Replace a value with an edge value, a long string, or another type.
        0..=3 => {
            let keyed: Vec<usize> = (0..lines.len())
                .filter(|&i| lines[i].contains(" = "))
                .collect();
            if let Some(&i) = keyed.get(r.below(keyed.len().max(1))) {
                let key = lines[i].split(" = ").next().unwrap_or("").to_string();
                let value = if r.below(8) == 0 {
                    long_value(r)
                } else {
                    r.pick(VALUES).to_string()
                };
                lines[i] = format!("{key} = {value}");
            }
        }
        // Insert a line (a new section, array entry or key).
        4 | 5 => {
            let at = r.below(lines.len() + 1);
            lines.insert(at, r.pick(LINES).to_string());
        }
        // Delete or duplicate a line.
        6 => {
            let i = r.below(lines.len());
            if r.below(2) == 0 {
                lines.remove(i);
            } else {
                let l = lines[i].clone();
                lines.insert(i, l);
            }
        }
        // Splice in a run of lines from another bundled scenario.
        7 => {
            let other: Vec<&str> = r.pick(others).lines().collect();
            let from = r.below(other.len());
            let n = 1 + r.below(6);
            let at = r.below(lines.len() + 1);
            for (k, l) in other.iter().skip(from).take(n).enumerate() {
                lines.insert(at + k, l.to_string());
            }
        }
        // Rename a key by one character, or append a run of control characters to it.
        8 => {
            let i = r.below(lines.len());
            if let Some((k, v)) = lines[i].split_once(" = ") {
                let mut k = k.to_string();
                if r.below(4) == 0 {
                    k.push_str(&"\u{15}".repeat(1 + r.below(200)));
                }
                if !k.is_empty() {
                    let p = r.below(k.len());
                    if k.is_char_boundary(p) && k.is_char_boundary(p + 1) {
                        k.replace_range(p..p + 1, "_");
                    }
                }
                lines[i] = format!("{k} = {v}");
            }
        }
        // Raw bytes: truncate, or flip a character.
        _ => {
            let joined = lines.join("\n");
            let mut b = joined.into_bytes();
            if !b.is_empty() {
                let i = r.below(b.len());
                if r.below(2) == 0 {
                    b.truncate(i);
                } else {
                    b[i] = *r.pick(b"[]{}=\"'#\n\\.,0-9z\x00\x7f");
                }
            }
            return String::from_utf8_lossy(&b).into_owned();
        }
    }
    lines.join("\n") + "\n"
}

#[test]
fn thousands_of_mutated_scenarios_never_panic_and_every_refusal_is_a_message() {
    let mut corpus: Vec<String> = scenario_files().iter().map(|p| read(p)).collect();
    corpus.sort();
    corpus.push("name = \"x\"\n".to_string());
    let inputs: usize = std::env::var("FUZZ_SMOKE_INPUTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(DEFAULT_INPUTS);
    let started = std::time::Instant::now();
    let mut r = Rng(0x0d1a_5e11);
    let (mut valid, mut refused) = (0usize, 0usize);
    // Quiet panics (on this thread): a panic is reported below with its input.
    let found = quiet_panics(|| {
        for n in 0..inputs {
            let base = r.pick(&corpus).clone();
            let mut text = base;
            for _ in 0..1 + r.below(4) {
                text = mutate(&mut r, &text, &corpus);
            }
            let result = std::panic::catch_unwind(|| check_scenario_bytes(text.as_bytes()));
            match result {
                Ok(Ok(true)) => valid += 1,
                Ok(Ok(false)) => refused += 1,
                Ok(Err(broken)) => {
                    return Some(format!("input {n}: {broken}\n--- input ---\n{text}"))
                }
                Err(_) => {
                    return Some(format!(
                        "input {n} panicked the parser or the validation\n--- input ---\n{text}"
                    ))
                }
            }
        }
        None
    });
    if let Some(finding) = found {
        panic!("{finding}");
    }
    let elapsed = started.elapsed();
    println!(
        "fuzz smoke: {inputs} inputs ({valid} valid, {refused} refused, no panic) in {:.2} s",
        elapsed.as_secs_f64()
    );
    // The mutations must reach both sides of validation, or the run proves little.
    assert!(
        valid >= inputs / 20,
        "only {valid} of {inputs} inputs were valid"
    );
    assert!(
        refused >= inputs / 4,
        "only {refused} of {inputs} inputs were refused"
    );
}
