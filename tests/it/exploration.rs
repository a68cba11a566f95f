//! Exploration: the configuration swarm (`scenarios/swarm-everything.toml`) reaches every
//! coverage probe and passes with no bug switch, catches every bug switch, and the guided mode
//! is deterministic, clean, and writes a failure as a scenario `run` reproduces. Fewer seeds than
//! docs/sweeps.md's measurements (10,000), which give the commands.

use crate::support::{durasim, temp_path};
use durasim::run::{run_once, RunRequest};
use durasim::scenario::Scenario;
use durasim::sweep;
use durasim::sweep::guided::explore;
use durasim::vocab::bugs::{Bug, BugSet};
use durasim::vocab::probes::PROBE_COUNT;

const SPACE: &str = "scenarios/swarm-everything.toml";

use crate::support::swarm_plan as plan;

/// The CI's invariant sweep: with no bug switch every seed passes, and the sweep reaches every
/// probe (`--require-coverage`), every fault kind, crash point and sometimes property.
#[test]
fn the_configuration_swarm_passes_and_reaches_every_probe() {
    let mut p = plan((0, 5_000), BugSet::EMPTY);
    p.require_coverage = true;
    let out = sweep::sweep(&p).unwrap();
    assert!(
        out.json.passed,
        "{:?} {:?}",
        out.json.coverage.problems, out.json.failures
    );
    assert_eq!(out.json.coverage.probes_reached, PROBE_COUNT);
}

/// The false alarms a uniform sweep of seeds 0..200,000 found on correct code, each now passing:
/// a late process heartbeat under worker liveness (sidekiq: 57896, 124066, 166009), a rescue
/// written by id over a live lease (oban 21971, pg-boss 37646), an `exp2` cap stated for
/// another formula (temporal 59852), a refusal judged against a revived job's first terminal
/// state (durasim 65488), and two a first fix of that one raised by judging against the latest
/// terminal record, where a later one changed nothing (durasim 15128, 37262), and a refusal as
/// ready of a lease a rescue race's `lease_expired` ended after its holder renewed it (durasim
/// 318304).
#[test]
fn the_swarms_false_alarms_pass() {
    passes(&[
        57896, 124066, 166009, 21971, 37646, 59852, 65488, 15128, 37262, 318304,
    ]);
}

/// Each seed's run passes with no bug switch (a sweep of that one seed has no failure).
fn passes(seeds: &[u64]) {
    for &seed in seeds {
        let out = sweep::sweep(&plan((seed, seed + 1), BugSet::EMPTY)).unwrap();
        assert!(
            out.json.failures.is_empty(),
            "seed {seed}: {:?}",
            out.json.failures
        );
    }
}

/// Every bug switch fails some seed of the configuration swarm within its first 400 seeds
/// (docs/sweeps.md: the latest first detection of 10,000 seeds is seed 299).
#[test]
fn the_configuration_swarm_catches_every_bug_switch() {
    for bug in Bug::ALL {
        let g = explore(&plan((0, 400), BugSet::from(bug)), &[], false, true).unwrap();
        assert!(
            g.first_failure.is_some(),
            "{} is not caught in 400 seeds",
            bug.name()
        );
    }
}

/// Seeds of a uniform sweep over 0..200,000 where the figures the metrics reported disagreed
/// with the history with no bug switch: queueWaitMs after a rescue by id over a retry (River's
/// rescuer, the `rescue_race` hazard; every seed but the last), and `dlq.size_max` counting a
/// job dead-lettered again while its entry was held (123161, `stale_writes_taken`). Each
/// passes, `summary_matches_history` included.
#[test]
fn the_summarys_false_alarms_pass() {
    passes(&[38356, 93471, 124186, 150928, 185778, 187758, 123161]);
}

/// Seeds of a uniform sweep over 0..400,000 that failed with no bug switch: a submit
/// under `while_waiting` deduplicated onto a job a rescue held, which the history shows leased
/// (270194 durasim, 300138 oban); an operator's reprocess that replaced a waiting job's payload
/// unrecorded (317850 sqs, `replace`); a job dead-lettered again while held counted twice by the
/// checker's DLQ (313797 river, `rescue_race`); and a reprocess judged by the job's first
/// terminal record although a late write had filed it in the DLQ (14359 oban, acked first;
/// 46312 oban, cancelled first; 322738 oban, `rescue_race`). Each passes.
#[test]
fn the_model_and_dlq_false_alarms_pass() {
    passes(&[270194, 300138, 317850, 313797, 14359, 46312, 322738]);
}

/// A guided search depends only on its plan (not on the thread count), mutates the runs it
/// keeps, and with no bug switch finds no failure.
#[test]
fn a_guided_search_is_deterministic_and_clean() {
    let mut p = plan((7, 1_207), BugSet::EMPTY);
    p.threads = 1;
    let one = explore(&p, &[], true, false).unwrap();
    p.threads = 2;
    let two = explore(&p, &[], true, false).unwrap();
    assert_eq!(one, two);
    assert_eq!(one.runs, 1_200);
    assert!(one.mutants > 300 && one.corpus > 10, "{one:?}");
    assert_eq!(one.first_failure, None, "{one:?}");
}

/// A guided failure is a scenario file: `run` reproduces the violation from it alone.
#[test]
fn a_guided_failure_is_a_scenario_run_reproduces() {
    let bug = Bug::parse("no_fencing").unwrap();
    let g = explore(&plan((0, 2_000), BugSet::from(bug)), &[], true, true).unwrap();
    let f = g.first_failure.expect("no_fencing caught");
    let s = Scenario::parse("guided-failure.toml", &f.file).unwrap();
    assert!(s.bugs.contains(bug));
    let r = run_once(&s, &RunRequest::for_scenario(&s), None);
    let broken: Vec<&str> = r
        .check
        .verdicts
        .iter()
        .filter(|(_, v)| v.count > 0)
        .map(|(i, _)| i.name())
        .collect();
    assert!(broken.contains(&f.invariant.as_str()), "{broken:?} {f:?}");
}

#[test]
fn guided_flags_that_do_not_apply_exit_2() {
    let out = temp_path!("guided");
    let out = out.to_str().unwrap();
    for (args, says) in [
        (vec!["--guided", "--shard", "0/2"], "no shards"),
        (vec!["--guided", "--junit", "j.xml"], "no JUnit"),
        (vec!["--seeds-to-detect", "0"], "1 to 100"),
        (
            vec!["--seeds-to-detect", "2", "--out", out],
            "writes nothing",
        ),
    ] {
        let mut all = vec!["sweep", SPACE, "--swarm", "--seeds", "0..10"];
        all.extend(args.iter().copied());
        let o = durasim(&all);
        assert_eq!(o.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn a_guided_sweep_writes_its_summary() {
    let out = temp_path!("guided-out");
    let o = durasim(&[
        "sweep",
        SPACE,
        "--swarm",
        "--guided",
        "--seeds",
        "0..200",
        "--quiet",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(
        o.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&o.stdout)
    );
    let j: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(out.join("guided.json")).unwrap()).unwrap();
    assert_eq!(j["runs"], 200);
    assert_eq!(j["passed"], true);
}

// ---- bounded-exhaustive search (`durasim explore`) ---------------------------------------------

mod bounded {
    use crate::support::{durasim, load_file as load, temp_path};
    use durasim::run::{run_once, RunRequest};
    use durasim::scenario::Scenario;
    use durasim::sweep::explore::{explore, Bound, Explored, KIND_NAMES};
    use durasim::vocab::bugs::{Bug, BugSet};

    const INCIDENT: &str = "scenarios/explore/incident-two-jobs.toml";
    const ZOMBIE: &str = "scenarios/explore/zombie.toml";
    const RELAY: &str = "scenarios/explore/relay-crash.toml";
    const SIMULTANEOUS: &str = "scenarios/explore/simultaneous.toml";

    /// The test's bounds: smaller than docs/sweeps.md's (which give the commands), 2 faults on a
    /// 1000 ms grid, 1 reorder (the default); the relay scenario places only the delivery
    /// side's crashes.
    fn bound(file: &str, bugs: BugSet, threads: usize) -> Bound {
        let kinds = match file {
            RELAY => vec!["relay_crash", "consumer_crash"],
            _ => vec![],
        };
        Bound {
            faults: 2,
            grid_ms: Some(1000),
            kinds: kinds
                .iter()
                .map(|k| KIND_NAMES.iter().position(|n| n == k).unwrap())
                .collect(),
            bugs,
            threads,
            reorders: 1,
        }
    }

    fn search(file: &str, bugs: BugSet) -> Explored {
        explore(&load(file), &bound(file, bugs, 0)).unwrap()
    }

    /// The invariants a counterexample file's run breaks, as `durasim run` judges it.
    fn broken(file_text: &str) -> Vec<String> {
        let s = Scenario::parse("counterexample.toml", file_text).unwrap();
        let r = run_once(&s, &RunRequest::for_scenario(&s), None);
        r.check
            .verdicts
            .iter()
            .filter(|(_, v)| v.count > 0)
            .map(|(i, _)| i.name().to_string())
            .collect()
    }

    #[test]
    fn the_small_scenarios_are_proven_within_their_bounds() {
        for file in [INCIDENT, ZOMBIE, RELAY] {
            let e = search(file, BugSet::default());
            assert!(e.counterexample.is_none(), "{file}: {:?}", e.counterexample);
            assert_eq!(
                e.schedules_run, e.space.schedules,
                "{file}: every schedule ran"
            );
            assert!(e.space.atoms.len() >= 10, "{file}: {}", e.space.atoms.len());
            // Every schedule's other orders were searched, and the visited set cut some short.
            assert!(e.runs > e.schedules_run && e.pruned > 0, "{file}: {e:?}");
            assert!(
                e.distinct_states > e.schedules_run && e.distinct_states <= e.states,
                "{file}: {e:?}"
            );
        }
    }

    /// Every bug switch these scenarios can express, with the fewest faults that break it.
    #[test]
    fn each_expressible_bug_switch_yields_a_shortest_counterexample_run_reproduces() {
        let table: &[(&str, &[(&str, usize)])] = &[
            (
                INCIDENT,
                &[
                    ("no_fencing", 2),
                    ("no_idempotency", 1),
                    ("naive_dual_write", 1),
                    ("no_consumer_dedupe", 1),
                    ("token_reuse", 1),
                    ("early_expiry", 1),
                    ("ack_before_commit", 0),
                    ("tenantless_keys", 0),
                    ("deadline_tripled", 0),
                    ("depth_never_decrements", 0),
                    ("republish_miscount", 0),
                ],
            ),
            (
                ZOMBIE,
                &[
                    ("no_fencing", 1),
                    ("token_reuse", 1),
                    ("early_expiry", 1),
                    ("heartbeat_not_stored", 1),
                    ("no_idempotency", 1),
                ],
            ),
            (RELAY, &[("no_consumer_dedupe", 1)]),
        ];
        for (file, switches) in table {
            for (name, faults) in switches.iter() {
                let bug = Bug::parse(name).unwrap();
                let e = search(file, BugSet::from(bug));
                let c = e
                    .counterexample
                    .unwrap_or_else(|| panic!("{file} --bug {name}: no counterexample"));
                assert_eq!(c.faults.len(), *faults, "{file} --bug {name}: {c:?}");
                let s = Scenario::parse("counterexample.toml", &c.file).unwrap();
                assert!(s.bugs.contains(bug));
                assert_eq!(s.file().script.len(), *faults);
                // Each is found in the default order: fewest reorders first.
                assert!(c.ties.is_empty(), "{file} --bug {name}: {c:?}");
                let b = broken(&c.file);
                assert!(b.contains(&c.invariant), "{file} --bug {name}: {b:?} {c:?}");
            }
        }
    }

    #[test]
    fn the_same_inputs_give_the_same_answer() {
        let bug = BugSet::from(Bug::parse("no_fencing").unwrap());
        for bugs in [BugSet::default(), bug] {
            let one = explore(&load(INCIDENT), &bound(INCIDENT, bugs, 1)).unwrap();
            let two = explore(&load(INCIDENT), &bound(INCIDENT, bugs, 2)).unwrap();
            assert_eq!(one, two);
        }
    }

    /// A violation only a non-default order of two simultaneous events exposes: the default
    /// order is proven, one reorder finds it (with no fault), for any thread count, and the
    /// counterexample's `[run] ties` make `run` reproduce it; without them the run passes.
    #[test]
    fn a_violation_only_another_order_of_simultaneous_events_exposes_is_found() {
        let bug = BugSet::from(Bug::parse("reprocess_cancelled").unwrap());
        let scenario = load(SIMULTANEOUS);
        let mut b = Bound {
            faults: 0,
            grid_ms: Some(1000),
            kinds: vec![],
            bugs: bug,
            threads: 1,
            reorders: 0,
        };
        let default_order = explore(&scenario, &b).unwrap();
        assert!(default_order.counterexample.is_none(), "{default_order:?}");
        b.reorders = 1;
        let one = explore(&scenario, &b).unwrap();
        b.threads = 2;
        let two = explore(&scenario, &b).unwrap();
        assert_eq!(one, two);
        let c = one.counterexample.expect("a reorder breaks it");
        assert!(c.faults.is_empty(), "{c:?}");
        assert_eq!(c.ties.len(), 1, "{c:?}");
        assert_eq!(c.invariant, "audited_reprocess");
        let s = Scenario::parse("counterexample.toml", &c.file).unwrap();
        assert_eq!(s.run.ties, c.ties);
        assert_eq!(broken(&c.file), vec!["audited_reprocess".to_string()]);
        let without = c.file.replace("ties = [", "# ties = [");
        assert!(broken(&without).is_empty(), "{without}");
        // With no bug switch, both orders are clean.
        b.bugs = BugSet::default();
        let clean = explore(&scenario, &b).unwrap();
        assert!(clean.counterexample.is_none(), "{clean:?}");
    }

    /// `[run] ties` that name a tie the run does not have, or a pick it does not have, are bad
    /// input (exit 2, the field and what is allowed); ties out of order are refused when read.
    #[test]
    fn ties_a_run_cannot_follow_exit_2() {
        let text = std::fs::read_to_string(SIMULTANEOUS).unwrap();
        for (ties, says) in [
            ("[[22, 5]]", "pick is 0 to 1"),
            ("[[5000, 1]]", "none numbered 5000"),
            ("[[3, 1], [2, 1]]", "increasing order"),
            ("[[3, 0]]", "a pick is 1 to"),
        ] {
            let file = temp_path!("ties").with_extension("toml");
            let with = text.replace("[workers]", &format!("[run]\nties = {ties}\n\n[workers]"));
            std::fs::write(&file, with).unwrap();
            let out = temp_path!("ties-out");
            let o = durasim(&[
                "run",
                file.to_str().unwrap(),
                "--out",
                out.to_str().unwrap(),
            ]);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{ties}: {err}");
            assert!(
                err.contains(says) && err.contains("run.ties"),
                "{ties}: {err}"
            );
        }
    }

    /// The state hash covers everything that decides what a run does next: whenever two runs
    /// (other orders of the same scenario) reach one state hash at a tie, their histories from
    /// there on are the same, record for record, and so are their verdicts. A field left out of
    /// the hash that two orders set differently would make two equal hashes continue apart.
    #[test]
    fn runs_that_reach_one_state_hash_continue_identically() {
        use durasim::check::Checker;
        use durasim::history::{Observer, Record};
        use durasim::scenario::{FaultKind, Script};
        use durasim::sim::run_scenario_tied;
        use durasim::sim::tie_break::{Stop, TieBreak};
        use durasim::vocab::faults::Held;
        use std::cell::Cell;
        use std::collections::BTreeMap;
        use std::rc::Rc;

        /// The checker (hashed) and the records (not: they are the past).
        struct Watch {
            checker: Checker,
            records: Vec<String>,
            count: Rc<Cell<usize>>,
        }
        impl Observer for Watch {
            fn observe(&mut self, r: &Record) {
                self.checker.observe(r);
                self.records.push(format!("{r:?}"));
                self.count.set(self.records.len());
            }
        }
        impl std::hash::Hash for Watch {
            fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
                self.checker.hash(h);
            }
        }
        /// Picks `pick` at tie `at`, the default elsewhere; notes each tie's state and place.
        struct Note {
            /// None: the default everywhere.
            at: Option<u64>,
            pick: usize,
            count: Rc<Cell<usize>>,
            seen: Vec<(u128, usize, usize)>,
        }
        impl TieBreak for Note {
            fn choose(
                &mut self,
                p: u64,
                _: u64,
                due: usize,
                s: Option<u128>,
            ) -> Result<usize, Stop> {
                // Past the pick both runs take the default order: equal states, equal futures.
                if self.at.is_none_or(|a| p > a) {
                    self.seen.push((s.unwrap(), self.count.get(), due));
                }
                Ok(if Some(p) == self.at {
                    self.pick.min(due - 1)
                } else {
                    0
                })
            }
        }
        let mut shared = 0;
        for file in [SIMULTANEOUS, ZOMBIE, INCIDENT] {
            // A stall and a crash make more of each run's ties.
            let scenario = load(file)
                .edited(|f| {
                    let mut stall = Script::new(0, FaultKind::Stall, Some(0));
                    stall.length = Some((Held::Stall, 1100));
                    f.script.push(stall);
                })
                .unwrap();
            let request = RunRequest::for_scenario(&scenario);
            let run = |at: Option<u64>, pick: usize| {
                let count = Rc::new(Cell::new(0));
                let watch = Watch {
                    checker: Checker::new().with_names(scenario.names().clone()),
                    records: Vec::new(),
                    count: count.clone(),
                };
                let mut note = Note {
                    at,
                    pick,
                    count,
                    seen: Vec::new(),
                };
                let (_, w) = run_scenario_tied(&scenario, &request, watch, &mut note);
                let verdicts: Vec<u64> = w
                    .checker
                    .finish()
                    .verdicts
                    .iter()
                    .map(|(_, v)| v.count)
                    .collect();
                (note.seen, w.records, verdicts)
            };
            let base = run(None, 0);
            let mut runs = vec![base.clone()];
            for (tie, &(_, _, due)) in base.0.iter().enumerate() {
                for pick in 1..due {
                    runs.push(run(Some(tie as u64), pick));
                }
            }
            let mut first: BTreeMap<u128, (usize, usize)> = BTreeMap::new();
            for (i, (seen, records, verdicts)) in runs.iter().enumerate() {
                for &(state, at, _) in seen {
                    let Some(&(j, at_j)) = first.get(&state) else {
                        first.insert(state, (i, at));
                        continue;
                    };
                    if j == i {
                        continue;
                    }
                    shared += 1;
                    let (other, other_verdicts) = (&runs[j].1, &runs[j].2);
                    assert_eq!(&records[at..], &other[at_j..], "{file}: runs {j} and {i}");
                    assert_eq!(verdicts, other_verdicts, "{file}: runs {j} and {i}");
                }
            }
            assert!(runs.len() > 2, "{file}: {} runs", runs.len());
        }
        assert!(
            shared > 10,
            "only {shared} shared states: the test shows nothing"
        );
    }

    /// The command: a proof exits 0, a counterexample exits 1 with a file `durasim run`
    /// reproduces (exit 1, the violation named), a bound above the cap exits 2.
    #[test]
    fn the_explore_command_answers_and_its_counterexample_reproduces() {
        let out = temp_path!("explore-proof");
        let o = durasim(&[
            "explore",
            RELAY,
            "--faults",
            "2",
            "--grid",
            "1000",
            "--kinds",
            "relay_crash,consumer_crash",
            "--out",
            out.to_str().unwrap(),
        ]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(0), "{text}");
        assert!(
            text.contains("no counterexample within the bound"),
            "{text}"
        );
        let out = temp_path!("explore-bug");
        let o = durasim(&[
            "explore",
            ZOMBIE,
            "--faults",
            "1",
            "--bug",
            "no_fencing",
            "--out",
            out.to_str().unwrap(),
        ]);
        let text = String::from_utf8_lossy(&o.stdout);
        assert_eq!(o.status.code(), Some(1), "{text}");
        let file = out.join("counterexample.toml");
        assert!(file.exists(), "{text}");
        let run_out = temp_path!("explore-run");
        let r = durasim(&[
            "run",
            file.to_str().unwrap(),
            "--out",
            run_out.to_str().unwrap(),
        ]);
        let said = String::from_utf8_lossy(&r.stdout);
        assert_eq!(r.status.code(), Some(1), "{said}");
        assert!(said.contains("fenced_writes"), "{said}");
        for (args, says) in [
            (vec!["--faults", "5"], "at most 4"),
            (vec!["--faults", "4", "--grid", "10"], "schedules; at most"),
            (vec!["--faults", "1", "--grid", "5"], "at least 10"),
            (vec!["--faults", "1", "--reorders", "9"], "at most 8"),
            (
                vec!["--faults", "1", "--kinds", "meteor"],
                "unknown fault kind",
            ),
        ] {
            let out = temp_path!("explore-refused");
            let mut all = vec!["explore", INCIDENT, "--out", out.to_str().unwrap()];
            all.extend(args.iter().copied());
            let o = durasim(&all);
            let err = String::from_utf8_lossy(&o.stderr);
            assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
            assert!(err.contains(says), "{args:?}: {err}");
        }
    }
}
