//! The consumer crash (`[faults] consumer_crash`, `[[script]] fault = "consumer_crash"`): a
//! fault of the delivery side added through the second fault table (`vocab::faults::STRUCK`),
//! its counted figure and its site in `sim/delivery.rs`. The consumer dies right after applying
//! a relayed event's effect, before the relay hears back; the relay sends the batch again and the
//! consumer must absorb the event. What it causes is caught where a bug makes it harmful, it is
//! read back from the history file, it replays frozen, and off it changes no trace.

use crate::support::history::{first_message, judge, run_with_history};
use crate::support::{
    durasim, freeze_run, load, parse, run_traced as run, sometimes, swarm_draw as draw, temp_path,
    Counter, Struck,
};
use durasim::check::{Invariant, Sometimes};
use durasim::history::Event;
use durasim::run::{run_once, RunReport, RunRequest};
use durasim::scenario::Scenario;

/// The consumer crashes of a run: (at, job, event).
fn crashes(r: &RunReport) -> Vec<(u64, u32, u64)> {
    r.trace
        .as_ref()
        .unwrap()
        .iter()
        .filter_map(|x| match &x.event {
            Event::Struck(s) if s.fault == Struck::ConsumerCrash => Some((
                x.at,
                s.job.expect("a consumer crash names its job").0,
                s.value,
            )),
            _ => None,
        })
        .collect()
}

/// Three workers, a relay ticking every 50 ms, 300 jobs arriving every 20 ms; `faults` is
/// appended.
fn random(faults: &str) -> Scenario {
    parse(&format!(
        "name = \"t\"\nseed = 11\n[workers]\ncount = 3\n[relay]\ninterval_ms = 50\n\
         [arrivals]\njobs = 300\ninterarrival_ms = {{ dist = \"constant\", value = 20 }}\n\
         [faults]\n{faults}\n"
    ))
}

#[test]
fn the_redelivered_event_is_absorbed_and_applied_twice_without_dedupe() {
    let s = load("consumer-crash");
    let clean = run(&s, None);
    assert!(clean.check.holds(), "{:?}", clean.check.violated());
    assert_eq!(
        crashes(&clean),
        vec![(50, 0, 1)],
        "job 0's event 1, at its first send"
    );
    let trace = clean.trace.as_ref().unwrap();
    let at = trace
        .iter()
        .position(|x| matches!(x.event, Event::Struck(_)))
        .unwrap();
    assert!(
        matches!(trace[at - 1].event, Event::EffectApplied { .. }),
        "it strikes right after the effect"
    );
    let resent = trace[at..]
        .iter()
        .find_map(|x| match &x.event {
            Event::Published { send, .. } => Some((x.at, *send)),
            _ => None,
        })
        .unwrap();
    assert_eq!(
        resent,
        (100, Some(2)),
        "the relay sends it again at its next tick"
    );
    assert_eq!(clean.metrics.counts.get(Counter::ConsumerDuplicates), 1);

    let broken = run(&s, Some("no_consumer_dedupe"));
    let v = broken.check.verdict(Invariant::NoDuplicateEffect);
    assert!(
        v.count > 0,
        "no_consumer_dedupe after a consumer crash is caught"
    );
    let first = v.first.as_ref().unwrap();
    assert_eq!(first.at, 100, "at the second apply: {}", first.message);
    assert_eq!(first.job.map(|j| j.0), Some(0), "{}", first.message);
}

#[test]
fn random_consumer_crashes_are_absorbed_and_only_a_missing_dedupe_makes_them_harmful() {
    let s = random("consumer_crash = 0.2");
    let r = run(&s, None);
    assert!(r.check.holds(), "{:?}", r.check.violated());
    let struck = sometimes(&r, Sometimes::Struck(Struck::ConsumerCrash));
    assert!(struck > 20, "consumer crashes struck: {struck}");
    assert_eq!(crashes(&r).len() as u64, struck);
    assert!(sometimes(&r, Sometimes::RepublishAbsorbed) >= struck);
    assert_eq!(r.metrics.counts.get(Counter::ConsumerCrashes), struck);
    assert_eq!(r.metrics.counts.get(Counter::RelayCrashes), 0);
    assert_eq!(r.check.figures.get(Counter::ConsumerCrashes), Some(struck));
    assert_eq!(
        r.metrics.counts.get(Counter::ConsumerApplied),
        300,
        "each effect applied once"
    );

    let broken = run(&s, Some("no_consumer_dedupe"));
    assert!(broken.check.verdict(Invariant::NoDuplicateEffect).count > 0);
    // Without the fault the same bug does no harm here: no event is ever sent twice.
    let calm = run(&random(""), Some("no_consumer_dedupe"));
    assert!(calm.check.holds(), "{:?}", calm.check.violated());
}

#[test]
fn its_record_is_read_back_from_the_history_file() {
    let s = random("consumer_crash = 0.2");
    let (report, lines) = run_with_history(&s);
    let written: Vec<&String> = lines
        .iter()
        .filter(|l| l.contains("\"consumer_crashed\""))
        .collect();
    assert_eq!(written.len(), crashes(&report).len());
    assert!(
        written[0].contains("\"event\":") && written[0].contains("\"job\":"),
        "{}",
        written[0]
    );
    let judged = judge(&lines);
    assert!(judged.holds(), "{:?}", judged.violated());
    assert_eq!(first_message(&judged, Invariant::NoDuplicateEffect), "");
    assert_eq!(
        judged.figures.get(Counter::ConsumerCrashes),
        Some(crashes(&report).len() as u64)
    );
}

#[test]
fn off_it_changes_no_trace() {
    let base = run(&random("relay_crash = 0.1"), None).outcome.trace_hash;
    let zero = random("relay_crash = 0.1\nconsumer_crash = 0.0");
    assert_eq!(run(&zero, None).outcome.trace_hash, base);
}

#[test]
fn a_run_with_consumer_crashes_freezes_into_script_entries_that_replay() {
    let s = random("consumer_crash = 0.2\nrelay_crash = 0.1");
    let mut request = RunRequest::for_scenario(&s);
    request.keep_trace = true;
    let report = run_once(&s, &request, None);
    let frozen = freeze_run(&s, &request, &report, "t.toml").unwrap();
    assert!(
        frozen.text.contains("fault = \"consumer_crash\""),
        "{}",
        frozen.text
    );
    let again = Scenario::parse("frozen.toml", &frozen.text).unwrap();
    assert_eq!(again.faults.struck(Struck::ConsumerCrash), 0.0);
    assert!(again
        .script
        .iter()
        .filter(|e| e.fault.struck() == Some(Struck::ConsumerCrash))
        .all(|e| e.job.is_some()));
    let replay = run_once(&again, &RunRequest::for_scenario(&again), None);
    assert_eq!(replay.outcome.trace_hash, report.outcome.trace_hash);
}

#[test]
fn a_scripted_consumer_crash_names_its_job() {
    let e = Scenario::parse(
        "t.toml",
        "name = \"t\"\n[[script]]\nat_ms = 0\nfault = \"consumer_crash\"\n",
    )
    .unwrap_err();
    assert_eq!(e.field, "script[0].fault", "{e}");
    assert!(e.message.contains("needs `job`"), "{e}");
    let e =
        Scenario::parse("t.toml", "name = \"t\"\n[faults]\nconsumer_crash = 1.5\n").unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.line),
        ("faults.consumer_crash", Some(3)),
        "{e}"
    );
}

/// `durasim ARGS`: its exit code and stdout.
fn code_and_stdout(args: &[&str]) -> (i32, String) {
    let o = durasim(args);
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stdout).into_owned(),
    )
}

#[test]
fn it_is_in_the_text_summary_and_marked_on_the_charts_from_every_source() {
    let dir = temp_path!("summary-and-charts");
    let out = |name: &str| dir.join(name).to_str().unwrap().to_string();
    let scenario = "scenarios/consumer-crash.toml";
    // The history in memory (`run --chart`), which also writes faults.csv.
    let (code, stdout) = code_and_stdout(&["run", scenario, "--chart", "--out", &out("mem")]);
    assert_eq!(code, 0, "{stdout}");
    assert!(
        stdout.contains("crashes 0/0/1 (worker/relay/consumer)"),
        "{stdout}"
    );
    let csv = std::fs::read_to_string(dir.join("mem/faults.csv")).unwrap();
    assert!(
        csv.contains("50,consumer_crash,,0,,\"event 1 applied, unacknowledged\""),
        "{csv}"
    );
    // faults.csv read back, and trace.jsonl read by `durasim chart`.
    let (code, _) = code_and_stdout(&["chart", &out("mem"), "--out", &out("from-csv")]);
    assert_eq!(code, 0);
    let (code, _) = code_and_stdout(&[
        "run",
        scenario,
        "--trace",
        "--quiet",
        "--out",
        &out("traced"),
    ]);
    assert_eq!(code, 0);
    let (code, _) = code_and_stdout(&["chart", &out("traced"), "--out", &out("from-trace")]);
    assert_eq!(code, 0);
    let row = "<td class=\"num\">50</td><td>consumer crash</td><td></td><td>job-0</td><td class=\"num\"></td><td>event 1 applied, unacknowledged</td>";
    for d in ["mem", "from-csv", "from-trace"] {
        let html = std::fs::read_to_string(dir.join(d).join("index.html")).unwrap();
        assert!(
            html.contains(row),
            "{d}: the fault table lacks the consumer crash"
        );
        let t = crate::report::HtmlTable::read(&html, "data-depth");
        assert_eq!(
            (
                t.cell("consumer crash", "points"),
                t.cell("consumer crash", "drawn as")
            ),
            ("1", "ticks in the strip"),
            "{d}: the depth chart's fault strip marks it"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_swarm_range_draws_its_rate_per_seed_after_every_other_draw() {
    let chaos = crate::support::read(&crate::support::scenario_path("chaos"));
    let swarm = "\n[swarm]\ncrash = [0.0, 0.1]\nrelay_crash = [0.0, 0.1]\nworkers = [1, 8]\ncrash_points = [\"after_lease\", \"after_extract\"]\n";
    let without = parse(&format!("{chaos}{swarm}"));
    let with = parse(&format!("{chaos}{swarm}consumer_crash = [0.1, 0.3]\n"));
    let mut rates = Vec::new();
    for seed in 0..20 {
        let (_, _, plain) = draw(&without, seed);
        let (s, r, d) = draw(&with, seed);
        let rate = d.consumer_crash.expect("drawn when its range is given");
        assert!((0.1..=0.3).contains(&rate), "seed {seed}: {rate}");
        assert_eq!(s.faults.struck(Struck::ConsumerCrash), rate);
        assert_eq!(r.struck[Struck::ConsumerCrash as usize], rate);
        assert_eq!(plain.consumer_crash, None);
        let mut same = d.clone();
        same.consumer_crash = None;
        assert_eq!(same, plain, "seed {seed}: the other draws do not move");
        rates.push(rate);
    }
    assert!(rates.iter().any(|r| *r != rates[0]), "{rates:?}");
    let e = Scenario::parse(
        "t.toml",
        "name = \"t\"\n[swarm]\nconsumer_crash = [0.5, 0.2]\n",
    )
    .unwrap_err();
    assert_eq!(
        (e.field.as_str(), e.line),
        ("swarm.consumer_crash", Some(3)),
        "{e}"
    );
}

#[test]
fn a_swarm_sweep_with_its_range_configures_it_for_the_coverage_gate() {
    use durasim::sweep::{sweep, Plan};
    // One worker, no other fault: the consumer crash comes from the swarm range alone.
    let s = parse(
        "name = \"t\"\n[relay]\ninterval_ms = 50\n[arrivals]\njobs = 40\n\
         interarrival_ms = { dist = \"constant\", value = 20 }\n[swarm]\nconsumer_crash = [0.2, 0.4]\n",
    );
    let mut p = Plan::new(s, "t.toml", (0, 6));
    p.swarm = true;
    p.threads = 1;
    let out = sweep(&p).unwrap();
    let c = out
        .json
        .coverage
        .faults
        .iter()
        .find(|f| f.name == "consumer_crash")
        .unwrap();
    assert!(c.configured && c.seeds == 6, "{c:?}");
    assert!(
        out.json.passed,
        "{:?} {:?}",
        out.json.coverage.problems, out.json.failures
    );
    assert!(out
        .records
        .iter()
        .all(|r| r.faults.contains(&"consumer_crash".to_string())
            && r.swarm.as_ref().unwrap().consumer_crash.is_some()));
}
