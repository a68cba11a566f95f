//! How the harness kills processes: cooperatively at announced points (the default), or from
//! outside at random wall-clock moments (`--kills random`).
//!
//! Owns: the kill mode, the mean time between kills of each worker and relay process in the
//! random mode (from the scenario's fault rates, or `--kill-mean-ms`), the seeded draw of each
//! process's kill delay, and the names of what a randomly killed process was doing.
//! Does not: send a signal or read a clock (the harness does), or decide a cooperative kill's
//! point (`plan` does).

use clap::ValueEnum;
use durasim::base::rng::{Purpose, Stream};
use durasim::scenario::{FaultKind, Scenario};
use durasim::vocab::faults::Struck;
use serde::{Deserialize, Serialize};

/// How kills reach the worker and relay processes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum KillMode {
    /// At a seeded point the process announces (after_lease, mid_commit, ...): the process
    /// writes a line and blocks, and the harness kills it there, so every point is certain.
    #[default]
    Cooperative,
    /// At random wall-clock moments drawn from the seed, with no handshake: a kill lands
    /// anywhere, a COMMIT in flight included. The harness records only what it knows.
    Random,
}

impl KillMode {
    pub fn name(self) -> &'static str {
        match self {
            KillMode::Cooperative => "cooperative",
            KillMode::Random => "random",
        }
    }
}

/// The mean wall-clock time between kills of each process, in ms (`None`: never killed).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KillRates {
    pub worker_mean_ms: Option<f64>,
    pub relay_mean_ms: Option<f64>,
}

/// The random mode's rates. `mean_ms` (`--kill-mean-ms`) applies to every worker and relay
/// process. Without it, the scenario's rates are turned into times: a worker is killed on
/// average once per `mean attempt time / crash` (the mean extraction plus validation, divided by
/// `[faults] crash`), so a worker busy all the time loses about the scenario's fraction of its
/// attempts; a relay once per `[relay] interval_ms / relay_crash` (a relay crash is drawn per
/// batch, and a busy relay claims a batch about every interval). A rate of 0 kills nothing.
pub fn rates(scenario: &Scenario, mean_ms: Option<u64>) -> KillRates {
    if let Some(m) = mean_ms {
        return KillRates {
            worker_mean_ms: Some(m as f64),
            relay_mean_ms: Some(m as f64),
        };
    }
    let attempt =
        (scenario.stages.inference_ms.mean() + scenario.stages.validate_ms.mean()).max(1.0);
    let crash = scenario.faults.crash;
    let relay_crash = scenario.faults.struck(Struck::RelayCrash);
    KillRates {
        worker_mean_ms: (crash > 0.0).then(|| attempt / crash),
        relay_mean_ms: (relay_crash > 0.0)
            .then(|| scenario.relay.interval_ms.max(1) as f64 / relay_crash),
    }
}

/// Why the random mode cannot run this scenario with these flags; `None` when it can.
pub fn refusal(scenario: &Scenario, rates: &KillRates, forced: bool) -> Option<String> {
    if forced {
        return Some("--kill forces a kill at an announced point, which is the cooperative mode; not with --kills random".into());
    }
    if let Some(e) = scenario
        .script
        .iter()
        .find(|e| e.fault == FaultKind::Crash || e.fault.struck() == Some(Struck::RelayCrash))
    {
        return Some(format!(
            "[[script]] fault = \"{}\" at_ms = {}: a scripted kill is one at an announced point (the cooperative mode); --kills random draws its kills from the rates (remove the entry, or run without --kills random)",
            e.fault.name(),
            e.at_ms
        ));
    }
    if rates.worker_mean_ms.is_none() && rates.relay_mean_ms.is_none() {
        return Some("--kills random: the scenario's [faults] crash and relay_crash are 0, so nothing would be killed; give --kill-mean-ms MS (the mean time between kills of each process)".into());
    }
    None
}

/// Stream indices of the kill delays, apart from `plan`'s (which stay below 1 << 41).
const RANDOM_KILLS: u64 = 1 << 41;

/// How long after its spawn generation `generation` of process `slot` is killed, in ms (at
/// least 1): exponential with mean `mean_ms`, a pure function of the seed.
pub fn delay_ms(seed: u64, relay: bool, slot: u32, generation: u32, mean_ms: f64) -> u64 {
    let purpose = if relay {
        Purpose::Relay
    } else {
        Purpose::Worker
    };
    let mut s = Stream::new(
        seed,
        purpose,
        RANDOM_KILLS | ((slot as u64) << 24) | generation as u64,
    );
    let u = s.unit();
    ((-mean_ms * (1.0 - u).ln()).round() as u64).max(1)
}

/// What a randomly killed worker was doing, as far as the harness knows from its lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Doing {
    /// It had reported a lease (BUSY job fence) and not yet its end (DONE).
    HoldingAJob,
    /// Stopped by the harness for a stall (SIGSTOP), holding the job it reported.
    Stopped,
    /// It had reported nothing in progress (or leased and died before saying so).
    Idle,
}

impl Doing {
    pub fn name(self) -> &'static str {
        match self {
            Doing::HoldingAJob => "holding_a_job",
            Doing::Stopped => "stopped_in_a_stall",
            Doing::Idle => "idle",
        }
    }
}

/// Where the random kills of workers landed, by the last step the store recorded for the
/// attempt the harness tied the crash to (`leased`, `extract_started`, `extract_done`,
/// `result_committed`, `acked`, ...; `no_job_reported` for a crash tied to no job). A kill during
/// a COMMIT shows as the step before it when the transaction rolled back, as its own step when it
/// committed: the store, not the harness, knows which. `rows` is the store's history in order.
pub fn landed(rows: &[(i64, String)]) -> std::collections::BTreeMap<String, u64> {
    use std::collections::BTreeMap;
    let mut last: BTreeMap<(u64, u64), String> = BTreeMap::new();
    let mut out: BTreeMap<String, u64> = BTreeMap::new();
    for (_, body) in rows {
        let Ok(r) = serde_json::from_str::<serde_json::Value>(body) else {
            continue;
        };
        let kind = r["type"].as_str().unwrap_or("");
        let (worker, job) = (r["worker"].as_u64(), r["job"].as_u64());
        match (kind, worker, job) {
            ("worker_crashed", Some(w), Some(j)) => {
                let step = last.get(&(w, j)).map_or("nothing", String::as_str);
                *out.entry(step.to_string()).or_default() += 1;
            }
            ("worker_crashed", Some(_), None) => {
                *out.entry("no_job_reported".into()).or_default() += 1
            }
            (_, Some(w), Some(j)) => {
                last.insert((w, j), kind.to_string());
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scenario(faults: &str) -> Scenario {
        let text = format!(
            "name = \"k\"\n[workers]\ncount = 1\n[stages]\ninference_ms = {{ dist = \"constant\", value = 18 }}\nvalidate_ms = {{ dist = \"constant\", value = 2 }}\n[relay]\ninterval_ms = 10\n[faults]\n{faults}\n"
        );
        Scenario::parse("k.toml", &text).unwrap()
    }

    #[test]
    fn the_rates_come_from_the_scenario_or_the_flag() {
        let r = rates(&scenario("crash = 0.1\nrelay_crash = 0.05"), None);
        assert_eq!(r.worker_mean_ms, Some(200.0));
        assert_eq!(r.relay_mean_ms, Some(200.0));
        let none = rates(&scenario(""), None);
        assert_eq!((none.worker_mean_ms, none.relay_mean_ms), (None, None));
        assert!(refusal(&scenario(""), &none, false)
            .unwrap()
            .contains("--kill-mean-ms"));
        let flag = rates(&scenario(""), Some(50));
        assert_eq!(
            (flag.worker_mean_ms, flag.relay_mean_ms),
            (Some(50.0), Some(50.0))
        );
        assert_eq!(refusal(&scenario(""), &flag, false), None);
        assert!(refusal(&scenario(""), &flag, true)
            .unwrap()
            .contains("--kill "));
    }

    #[test]
    fn a_kill_lands_after_the_last_step_the_store_recorded_for_its_worker_and_job() {
        let rows: Vec<(i64, String)> = [
            r#"{"type":"leased","job":1,"worker":0,"fence":1}"#,
            r#"{"type":"extract_done","job":1,"worker":0,"fence":1}"#,
            r#"{"type":"leased","job":2,"worker":1,"fence":2}"#,
            r#"{"type":"result_committed","job":1,"worker":0,"key":"k"}"#,
            r#"{"type":"worker_crashed","worker":0,"job":1,"fence":1}"#,
            r#"{"type":"worker_crashed","worker":1,"job":2,"fence":2}"#,
            r#"{"type":"worker_crashed","worker":1}"#,
        ]
        .iter()
        .map(|b| (0, b.to_string()))
        .collect();
        let got: Vec<(String, u64)> = landed(&rows).into_iter().collect();
        assert_eq!(
            got,
            [
                ("leased".to_string(), 1),
                ("no_job_reported".to_string(), 1),
                ("result_committed".to_string(), 1)
            ]
        );
    }

    #[test]
    fn delays_are_seeded_and_average_to_the_mean() {
        assert_eq!(
            delay_ms(3, false, 1, 2, 100.0),
            delay_ms(3, false, 1, 2, 100.0)
        );
        let all: Vec<u64> = (0..4000).map(|g| delay_ms(3, false, 0, g, 100.0)).collect();
        assert!(all.iter().all(|d| *d >= 1));
        let mean = all.iter().sum::<u64>() as f64 / all.len() as f64;
        assert!((90.0..110.0).contains(&mean), "{mean}");
        assert_ne!(
            delay_ms(3, false, 0, 0, 100.0),
            delay_ms(3, true, 0, 0, 100.0)
        );
    }
}
