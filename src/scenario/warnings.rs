//! Settings that are valid but almost certainly not what the scenario's author meant.
//!
//! Owns: the list of such settings and their wording. Each is printed as a `warning:` line
//! (naming the file, the line and the field, like an error) and the run goes on;
//! `--deny-warnings` makes them bad input (exit 2).
//! Does not: refuse anything (`scenario/` does), or print (the CLI does).

use crate::scenario::{Scenario, ScenarioError};

/// The warnings of a parsed (valid) scenario, located in its `source`.
pub fn warnings(scenario: &Scenario, file: &str, source: &str) -> Vec<ScenarioError> {
    let found = found(scenario);
    if found.is_empty() {
        return Vec::new();
    }
    let mut positions = crate::scenario::Locator::new(source);
    found
        .into_iter()
        .map(|(field, message)| ScenarioError {
            file: file.to_string(),
            line: positions.line(&field),
            field,
            message,
        })
        .collect()
}

/// (field path, message) of each suspicious setting, in file order of the sections.
fn found(s: &Scenario) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let limit = s.run.time_limit_ms;
    // Under a profile, the numbers the run uses (a queue without renewal or deadline has none
    // to warn about).
    let sem = s.semantics();
    let e = crate::profile::Effective::of(&sem);
    let renews = sem.heartbeat == crate::profile::Heartbeat::Renew;
    if renews && e.heartbeat_ms >= e.lease_ms {
        out.push((
            "queue.heartbeat_ms".to_string(),
            format!(
                "{} ms is not shorter than queue.lease_ms ({} ms): a lease expires before its first \
                 heartbeat, so every attempt longer than the lease loses it",
                e.heartbeat_ms, e.lease_ms
            ),
        ));
    }
    let attempt_ms = s.stages.inference_ms.mean() + s.stages.validate_ms.mean();
    if sem.deadline_ms.is_some() && (e.deadline_ms as f64) < attempt_ms {
        out.push((
            "queue.deadline_ms".to_string(),
            format!(
                "{} ms is shorter than one attempt (stages.inference_ms + stages.validate_ms take \
                 {attempt_ms:.0} ms on average): most jobs reach their deadline before they can finish",
                e.deadline_ms
            ),
        ));
    }
    let after_limit = |what: &str, at: u64| {
        format!(
            "{what} at {at} ms, after run.time_limit_ms ({limit} ms): the run stops before it, so it \
             never happens"
        )
    };
    for (i, e) in s.enqueue.iter().enumerate() {
        if e.at_ms >= limit {
            out.push((
                format!("enqueue[{i}].at_ms"),
                after_limit("enqueued", e.at_ms),
            ));
        }
    }
    for (i, b) in s.burst.iter().enumerate() {
        if b.at_ms >= limit {
            out.push((format!("burst[{i}].at_ms"), after_limit("a burst", b.at_ms)));
        }
    }
    if let Some(o) = s.faults.outage {
        if o.from_ms >= limit {
            out.push((
                "faults.outage".to_string(),
                after_limit("an outage starting", o.from_ms),
            ));
        }
    }
    for (i, sc) in s.script.iter().enumerate() {
        if sc.at_ms >= limit {
            out.push((
                format!("script[{i}].at_ms"),
                after_limit(&format!("fault {}", sc.fault.name()), sc.at_ms),
            ));
        }
        if let Some(a) = sc.attempt {
            // Counted by failures, a job's leases are not capped.
            if a > e.queue_attempts_max
                && !s.bugs.contains(crate::vocab::bugs::Bug::UnboundedRetries)
            {
                out.push((
                    format!("script[{i}].attempt"),
                    format!(
                        "attempt {a}, but queue.max_attempts is {}: no job gets that many attempts, \
                         so this fault can never fire",
                        e.attempts_max
                    ),
                ));
            }
        }
    }
    for (i, o) in s.operator.iter().enumerate() {
        if o.at_ms >= limit {
            out.push((
                format!("operator[{i}].at_ms"),
                after_limit("an operator action", o.at_ms),
            ));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn warned(extra: &str) -> Vec<String> {
        let src = format!("name = \"w\"\n[arrivals]\njobs = 2\n{extra}");
        let s = Scenario::parse("w.toml", &src).unwrap();
        warnings(&s, "w.toml", &src)
            .into_iter()
            .map(|w| w.to_string())
            .collect()
    }

    #[test]
    fn suspicious_settings_are_named_with_their_line() {
        assert!(warned("").is_empty());
        let w = warned("[queue]\nlease_ms = 300\nheartbeat_ms = 300\n");
        assert_eq!(w.len(), 1, "{w:?}");
        assert!(
            w[0].starts_with("w.toml:6: field `queue.heartbeat_ms`"),
            "{w:?}"
        );
        let w = warned("[run]\ntime_limit_ms = 1000\n[[script]]\nat_ms = 5000\nfault = \"crash\"\npoint = \"after_lease\"\njob = 0\n");
        assert!(
            w[0].contains("script[0].at_ms") && w[0].contains("never"),
            "{w:?}"
        );
        let w = warned("[[script]]\nat_ms = 0\nfault = \"crash\"\npoint = \"after_lease\"\njob = 0\nattempt = 9\n");
        assert!(w[0].contains("script[0].attempt"), "{w:?}");
        let w = warned("[queue]\ndeadline_ms = 10\n");
        assert!(w[0].contains("queue.deadline_ms"), "{w:?}");
    }
}
