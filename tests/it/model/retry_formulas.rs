//! Every profile's retry formula is in the history's header, and the checker's
//! `backoff_respected` recomputes each retry's delay from it: a history as the simulator writes
//! it holds, and the same history with one retry's delay moved outside what the formula and its
//! jitter allow is caught. A header without a formula (every header before them, and the
//! `durasim` profile's today) still reads as the capped exponential, byte for byte.

use durasim::check::Invariant;
use durasim::profile::{Profile, Word};
use durasim::scenario::Scenario;
use serde_json::Value;

use crate::support::backoff_bounds;
use crate::support::history::{first_message, judge, run_with_history};

fn scenario(profile: &str, faults: &str) -> Scenario {
    let lease = if profile == "temporal" {
        "lease_ms = 60000"
    } else {
        ""
    };
    let text = format!(
        "name = \"retry-formula\"\nseed = 3\n[workers]\ncount = 3\n[queue]\nprofile = \"{profile}\"\n{lease}\n\
         [arrivals]\njobs = 30\ninterarrival_ms = {{ dist = \"exponential\", mean = 200 }}\n\
         [relay]\ninterval_ms = 1000\n[metrics]\ndepth_sample_ms = 60000\n[run]\ntime_limit_ms = 864000000\n{faults}"
    );
    Scenario::parse("retry-formula.toml", &text).unwrap_or_else(|e| panic!("{e}"))
}

/// The history the simulator writes for `s`, as lines.
fn history(s: &Scenario) -> Vec<String> {
    run_with_history(s).1
}

/// The history with the retry at `line` made visible `delay` after it was decided.
fn with_delay(lines: &[String], line: usize, delay: u64) -> Vec<String> {
    let mut out = lines.to_vec();
    let mut v: Value = serde_json::from_str(&lines[line]).unwrap();
    let at = v["at"].as_u64().unwrap();
    v["visible_at"] = Value::from(at + delay);
    out[line] = v.to_string();
    out
}

const TRANSIENT: &str = "[faults]\ntransient_error = 0.4\n";

#[test]
fn each_formula_is_stated_and_a_delay_outside_it_is_caught() {
    for p in [
        Profile::River,
        Profile::Oban,
        Profile::GraphileWorker,
        Profile::Sidekiq,
        Profile::Sqs,
        Profile::Pgmq,
    ] {
        let name = p.name();
        let s = scenario(name, TRANSIENT);
        let sem = s.semantics();
        let lines = history(&s);
        let header: Value = serde_json::from_str(&lines[0]).unwrap();
        assert_eq!(
            header["config"]["backoff"]["formula"],
            sem.backoff.formula.name(),
            "{name}: the header states the formula: {}",
            lines[0]
        );
        assert!(header["config"].get("backoff_base").is_none(), "{name}");
        let right = judge(&lines);
        assert!(
            right.violated().is_empty(),
            "{name}: the simulator's own history holds: {:?} {}",
            right.violated(),
            first_message(&right, Invariant::BackoffRespected)
        );
        // The first retry by its holder, and the delay the simulator chose.
        let (line, n, delay) = lines
            .iter()
            .enumerate()
            .find_map(|(i, l)| {
                let v: Value = serde_json::from_str(l).ok()?;
                (v["type"] == "retry_scheduled").then(|| {
                    let at = v["at"].as_u64().unwrap();
                    let n = v["attempt"].as_u64().unwrap() as u32;
                    (i, n, v["visible_at"].as_u64().unwrap() - at)
                })
            })
            .unwrap_or_else(|| panic!("{name}: no retry in the history"));
        // What the formula allows for this attempt (`visibility`: exactly the rest of the
        // lease, which is the delay the simulator took).
        let (least, most) = backoff_bounds(&sem.backoff, n, delay);
        assert!(
            least <= delay && delay <= most,
            "{name}: {delay} in {least}..={most}"
        );
        let mut wrong = vec![most + 1];
        if least > 0 {
            wrong.push(least - 1);
        }
        for d in wrong {
            let judged = judge(&with_delay(&lines, line, d));
            let message = first_message(&judged, Invariant::BackoffRespected);
            assert!(
                message.contains(&format!("a delay of {d} ms"))
                    && message.contains(sem.backoff.formula.name()),
                "{name}: a retry delay of {d} ms after attempt {n} (allowed {least}..={most}) is caught: {message:?}"
            );
        }
    }
}

/// graphile-worker has no "fail for good" API: a permanent error is retried like any other, and
/// the header says so (`"permanent_error": "retry"`); without that word the same history breaks
/// the policy the checker restates.
#[test]
fn permanent_errors_retried_is_stated_and_judged() {
    let s = scenario(
        "graphile-worker",
        "[arrivals.invalid_documents]\nevery = 3\nfirst = 1\n",
    );
    let lines = history(&s);
    let mut header: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(header["config"]["permanent_error"], "retry", "{}", lines[0]);
    let right = judge(&lines);
    assert!(right.violated().is_empty(), "{:?}", right.violated());
    assert!(
        lines.iter().any(|l| l.contains("\"schema_invalid\"")),
        "the workload has permanent errors"
    );
    // The same history under a header that does not say so: every retry of a permanent error
    // breaks the policy, and every recorded class is wrong.
    header["config"]
        .as_object_mut()
        .unwrap()
        .remove("permanent_error");
    let mut stripped = lines.clone();
    stripped[0] = header.to_string();
    let judged = judge(&stripped);
    for i in [
        Invariant::RetryPolicyFollowed,
        Invariant::RecordedValuesMatch,
    ] {
        assert!(judged.violated().contains(&i), "{:?}", judged.violated());
    }
}

/// The `durasim` profile's header is today's, byte for byte: no `backoff` object, no
/// `permanent_error`; only the `lease_detection` its lease-expiry timer is stated by (an
/// optional field, added to format version 1 without changing any trace hash).
#[test]
fn the_default_header_is_unchanged() {
    let s = scenario("durasim", TRANSIENT);
    assert_eq!(
        history(&s)[0],
        "{\"format\":\"durasim-history\",\"version\":1,\"time_unit\":\"ms\",\"emits\":[\"visible\",\"lease_expired\",\"depth_sampled\"],\
         \"config\":{\"seed\":3,\"workers\":3,\"lease\":1000,\"heartbeat\":300,\"deadline\":30000,\"attempts_max\":3,\
         \"backoff_base\":100,\"backoff_cap\":2000,\"jitter\":\"full\",\"dlq_capacity\":null,\"reprocess_limit\":null,\
         \"dedupe_window\":null,\"outbox_retention\":null,\"lease_detection\":{\"kind\":\"timer\",\"slack\":1}}}"
    );
}
