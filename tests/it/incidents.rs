//! scenarios/incidents/: every reported incident reproduces its violation under its profile's
//! defaults, and its `-fixed` sibling holds every invariant.

use crate::support::{load_file as load, toml_files};
use durasim::run::{check_expectations, run_once, RunRequest};
use std::path::PathBuf;

fn incident_files() -> Vec<PathBuf> {
    toml_files("scenarios/incidents")
}

#[test]
fn at_least_eight_incidents_each_with_a_fixed_sibling() {
    let files = incident_files();
    let stems: Vec<String> = files
        .iter()
        .map(|p| p.file_stem().unwrap().to_string_lossy().to_string())
        .collect();
    let incidents: Vec<&String> = stems.iter().filter(|s| !s.ends_with("-fixed")).collect();
    assert!(incidents.len() >= 8, "{incidents:?}");
    for name in &incidents {
        assert!(
            stems.contains(&format!("{name}-fixed")),
            "{name} has no {name}-fixed.toml"
        );
    }
    for s in &stems {
        if let Some(base) = s.strip_suffix("-fixed") {
            assert!(stems.iter().any(|n| n == base), "{s} has no incident");
        }
    }
}

#[test]
fn every_incident_shows_its_violation_and_every_fix_holds() {
    for path in incident_files() {
        let s = load(&path);
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        assert_eq!(s.name, stem, "{} is named after its file", path.display());
        assert_ne!(
            s.queue_profile(),
            durasim::profile::Profile::Durasim,
            "{stem} names a profile"
        );
        let expected = s
            .expect
            .violations
            .clone()
            .unwrap_or_else(|| panic!("{stem} states its violations"));
        if stem.ends_with("-fixed") {
            assert!(
                expected.is_empty(),
                "{stem} expects every invariant to hold"
            );
        } else {
            assert!(
                !expected.is_empty(),
                "{stem} expects the incident's violation"
            );
        }
        let report = run_once(&s, &RunRequest::for_scenario(&s), None);
        let unmet = check_expectations(s.expectations(), &report);
        assert!(unmet.is_empty(), "{stem}: unmet expectations {unmet:?}");
    }
}

/// The incident and its fix differ in the settings the fix's description names, not in the
/// workload: same seed, workers, stages, arrivals and faults.
#[test]
fn a_fix_changes_the_queue_not_the_workload() {
    for path in incident_files() {
        let stem = path.file_stem().unwrap().to_string_lossy().to_string();
        let Some(base) = stem.strip_suffix("-fixed") else {
            continue;
        };
        let fixed = load(&path);
        let incident = load(path.with_file_name(format!("{base}.toml")));
        assert_eq!(fixed.queue_profile(), incident.queue_profile(), "{stem}");
        assert_eq!(fixed.seed, incident.seed, "{stem}");
        assert_eq!(fixed.workers.count, incident.workers.count, "{stem}");
        assert_eq!(fixed.arrivals.jobs, incident.arrivals.jobs, "{stem}");
        assert_eq!(
            fixed.stages.inference_ms, incident.stages.inference_ms,
            "{stem}"
        );
        assert_eq!(fixed.script, incident.script, "{stem}");
    }
}
