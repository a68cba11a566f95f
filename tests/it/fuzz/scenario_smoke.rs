//! A bounded fuzz run inside `cargo test`: thousands of scenario files mutated from the bundled
//! ones (and a few generated from nothing), each checked by `support/scenario_props.rs`: no panic,
//! every refusal a message naming the file (exit 2 as the CLI shows it), every accepted file
//! written back and parsed again to the same scenario, and reading any of them costs at most the
//! stated multiple of its size (counted by the test binary's allocator, `support/alloc.rs`).
//! The shapes of issue 26 (an unknown key before a huge value, deep nesting, long arrays, many
//! keys, hundreds of thousands of valid entries) are read at up to the 16 MiB cap under the same
//! bound. Deterministic (a fixed seed), a few seconds. The open-ended fuzzer is `cargo fuzz run
//! scenario` (fuzz/README.md).
//!
//! `FUZZ_SMOKE_INPUTS=N` runs N inputs instead of the default.

use crate::support::alloc::peak_of;
use crate::support::scenario_props::check_scenario_bytes;
use crate::support::splitmix::Rng;
use crate::support::{quiet_panics, read, scenario_files};
use durasim::scenario::shape::{COST_FIXED, COST_PER_BYTE};
use durasim::scenario::Scenario;

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
            if let Some(over) = over_cost(&text) {
                return Some(format!("input {n}: {over}\n--- input ---\n{text}"));
            }
            if let Some(over) = over_budget_but_accepted(&text) {
                return Some(format!("input {n}: {over}\n--- input ---\n{text}"));
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

/// Reading `text` held more than the stated multiple of its size at once: what, if it did.
fn over_cost(text: &str) -> Option<String> {
    let (_, peak) = peak_of(|| Scenario::parse("cost.toml", text));
    let bound = COST_PER_BYTE * text.len() as u64 + COST_FIXED;
    (peak > bound).then(|| {
        format!(
            "reading {} bytes held {peak} bytes at once, more than {COST_PER_BYTE} x its size + \
             {COST_FIXED} = {bound}",
            text.len()
        )
    })
}

/// An accepted scenario whose cost bound is over the default budget that `load_scenario` would
/// let through (the bound is computed without overflow for any accepted file).
fn over_budget_but_accepted(text: &str) -> Option<String> {
    let s = Scenario::parse("cost.toml", text).ok()?;
    let cost = s.cost(None);
    let budget = durasim::scenario::Budget::default();
    let within = cost.events <= budget.max_events && cost.samples <= budget.max_samples();
    (within != cost.refusal(budget).is_none())
        .then(|| format!("cost {cost:?}: refusal and budget disagree"))
}

/// `prefix`, then `unit` repeated, then `suffix`, filling `bytes`.
fn filled(prefix: &str, unit: &str, suffix: &str, bytes: usize) -> String {
    let n = (bytes - prefix.len() - suffix.len()) / unit.len();
    let mut s = String::with_capacity(bytes);
    s.push_str(prefix);
    for _ in 0..n {
        s.push_str(unit);
    }
    s.push_str(suffix);
    s
}

/// Issue 26, case 2: a 16 MiB file of `x = [{a=1},{a=1},...]` cost 3.9 GB and 17 s before its
/// unknown key was refused, other shapes 1.1 to 3.5 GB, 215,000 valid `[[enqueue]]` entries
/// 603 MB. Each shape, at the cap, costs at most the stated multiple of its size to read.
#[test]
fn files_under_the_cap_cost_at_most_the_stated_multiple_of_their_size_to_read() {
    let cap = durasim::base::limits::MAX_SCENARIO_BYTES as usize - 64;
    let mut shapes: Vec<(&str, String, bool)> = vec![
        (
            "unknown key, inline tables",
            filled("name = \"x\"\nx = [", "{a=1},", "{a=1}]\n", cap),
            false,
        ),
        (
            "unknown array of tables",
            filled("name = \"x\"\n", "[[x]]\n", "", cap),
            false,
        ),
        (
            "known key, long array",
            filled("name = \"x\"\n[arrivals]\ntenants = [", "1,", "1]\n", cap),
            false,
        ),
        (
            "known key, long string array",
            filled(
                "name = \"x\"\n[expect]\nviolations = [",
                "\"a\",",
                "\"a\"]\n",
                cap,
            ),
            false,
        ),
        (
            "deep arrays",
            format!(
                "name = \"x\"\ndescription = {}{}\n",
                "[".repeat(cap / 2 - 20),
                "]".repeat(cap / 2 - 20)
            ),
            false,
        ),
        (
            "deep inline tables",
            format!(
                "name = \"x\"\ndescription = {}1{}\n",
                "{a=".repeat(cap / 4 - 10),
                "}".repeat(cap / 4 - 10)
            ),
            false,
        ),
        (
            "many keys in a section",
            (0..cap / 16).fold(String::from("name = \"x\"\n[queue]\n"), |mut s, i| {
                s.push_str(&format!("k{i:09}=1\n"));
                s
            }),
            false,
        ),
        (
            "one entry of repeated keys",
            filled("name = \"x\"\n[[script]]\n", "at_ms=1\n", "", cap),
            false,
        ),
        (
            "a long description",
            filled("name = \"x\"\ndescription = \"", "x", "\"\n", cap),
            true,
        ),
    ];
    // Valid entries: as many as 4 MiB holds (the bound is linear: a 16 MiB file holds four
    // times as many, at four times the cost).
    let mut entries = String::from("name = \"x\"\n[arrivals]\njobs = 0\n");
    let mut i = 0;
    while entries.len() < 4 << 20 {
        entries.push_str(&format!(
            "[[enqueue]]\nat_ms = {i}\ntenant = \"acme\"\ndocument = \"d-{i}\"\n"
        ));
        i += 1;
    }
    shapes.push(("valid [[enqueue]] entries", entries, true));
    let mut faults = String::from("name = \"x\"\n");
    while faults.len() < 4 << 20 {
        faults.push_str("[[script]]\nat_ms=0\nfault=\"relay_crash\"\n");
    }
    shapes.push(("valid [[script]] entries", faults, true));
    let bursts = filled(
        "name = \"x\"\n",
        "[[burst]]\nat_ms=0\ntenant=\"ab\"\njobs=1\n",
        "",
        4 << 20,
    );
    shapes.push(("valid [[burst]] entries", bursts, true));
    let tenants: Vec<String> = (0..4096).map(|i| format!("\"t{i:04}\"")).collect();
    let inline = format!(
        "name = \"x\"\n[arrivals]\ntenants = [{}]\n[[enqueue]]\nat_ms = 0\ntenant = \"ab\"\ndocument = \"d\"\n",
        tenants.join(",")
    );
    shapes.push(("4096 tenants", inline, true));
    for (what, text, valid) in &shapes {
        assert!(text.len() <= cap + 64, "{what}: {} bytes", text.len());
        let (parsed, peak) = peak_of(|| Scenario::parse("shape.toml", text));
        assert_eq!(parsed.is_ok(), *valid, "{what}: {:?}", parsed.err());
        let bound = COST_PER_BYTE * text.len() as u64 + COST_FIXED;
        println!(
            "{what}: {} bytes read holding at most {peak} bytes ({:.1} x)",
            text.len(),
            peak as f64 / text.len() as f64
        );
        assert!(
            peak <= bound,
            "{what}: {} bytes read holding {peak} bytes at once, over {bound}",
            text.len()
        );
    }
}
