//! The guided search's corpus: the runs it keeps, which feature each holds, which run a full
//! corpus gives up, and the kept runs as scenario files (`DIR/corpus/NNNNN.toml`) and back
//! (`--corpus DIR`).
//!
//! Owns: admission order, the holder of each feature (the latest kept run that reached it),
//! eviction (past [`CORPUS_MAX`], the oldest run that holds no feature goes, so a run kept for
//! a feature no later run reached stays; only when every run holds one does the oldest go),
//! and the corpus file's format.
//! Does not: decide what to keep or pick parents (`guided.rs`), or read and write files
//! (`cli::guided`).

use super::guided::Candidate;
use super::{space, Plan};
use crate::scenario::Scenario;
use crate::vocab::bugs::BugSet;

/// The corpus's size; past it, a run replaces another (see the module's doc).
pub const CORPUS_MAX: usize = 1024;

/// The kept runs and the holder of each feature.
pub struct Corpus {
    entries: Vec<Candidate>,
    /// Admission stamps: a larger one was admitted later.
    stamp: Vec<u64>,
    /// How many features each entry holds.
    holds: Vec<u32>,
    /// Per feature, the latest kept run that reached it.
    holder: Vec<Option<usize>>,
    next: u64,
}

impl Corpus {
    /// An empty corpus over `features` features.
    pub fn new(features: usize) -> Corpus {
        Corpus {
            entries: Vec::new(),
            stamp: Vec::new(),
            holds: Vec::new(),
            holder: vec![None; features],
            next: 0,
        }
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn get(&self, i: usize) -> &Candidate {
        &self.entries[i]
    }

    /// Per feature, the entry that holds it.
    pub fn holders(&self) -> &[Option<usize>] {
        &self.holder
    }

    /// Keeps `c`, which reached `features`; it becomes their holder.
    pub fn admit(&mut self, c: Candidate, features: &[usize]) {
        let at = match self.entries.len() < CORPUS_MAX {
            true => {
                self.entries.push(c);
                self.stamp.push(0);
                self.holds.push(0);
                self.entries.len() - 1
            }
            false => {
                let victim = self.victim();
                if self.holds[victim] > 0 {
                    for h in self.holder.iter_mut().filter(|h| **h == Some(victim)) {
                        *h = None;
                    }
                    self.holds[victim] = 0;
                }
                self.entries[victim] = c;
                victim
            }
        };
        self.stamp[at] = self.next;
        self.next += 1;
        for &f in features {
            if let Some(old) = self.holder[f] {
                assert!(self.holds[old] > 0, "a holder's count never underflows");
                self.holds[old] -= 1;
            }
            self.holder[f] = Some(at);
            self.holds[at] += 1;
        }
    }

    /// The oldest entry that holds no feature, else the oldest.
    fn victim(&self) -> usize {
        let oldest = |free: bool| {
            (0..self.entries.len())
                .filter(|&i| !free || self.holds[i] == 0)
                .min_by_key(|&i| self.stamp[i])
        };
        oldest(true).or(oldest(false)).expect("a full corpus")
    }

    /// The entries in admission order.
    pub fn in_order(&self) -> Vec<&Candidate> {
        let mut at: Vec<usize> = (0..self.entries.len()).collect();
        at.sort_by_key(|&i| self.stamp[i]);
        at.into_iter().map(|i| &self.entries[i]).collect()
    }
}

/// A kept run as a corpus file: a whole scenario (its settings, script and seed written in, no
/// bug switch), headed by where it came from and what it tolerates. `durasim run FILE` runs it.
pub fn corpus_file(c: &Candidate) -> String {
    let mut f = c.scenario.file().clone();
    f.seed = c.run_seed;
    f.bugs = BugSet::EMPTY;
    f.swarm = None;
    let head = format!(
        "# Kept by a guided sweep: {}\n# Tolerates: {}\n",
        c.origin,
        match c.tolerates.is_empty() {
            true => "nothing".to_string(),
            false => c.tolerates.join(", "),
        }
    );
    head + &toml::to_string(&f).expect("a scenario file serialises")
}

/// A corpus file read back (`name` is how it is shown): the run it describes, with the
/// invariants its settings' hazards tolerate named again when the plan draws from the
/// configuration space (a plain scenario's runs tolerate nothing).
pub fn from_corpus(plan: &Plan, name: &str, scenario: Scenario) -> Candidate {
    let tolerates = match in_space(plan) {
        true => space::tolerated(&scenario),
        false => Vec::new(),
    };
    Candidate {
        run_seed: scenario.file().seed,
        scenario,
        tolerates,
        origin: format!("corpus {name}"),
    }
}

pub(super) fn in_space(plan: &Plan) -> bool {
    plan.swarm
        && plan
            .scenario
            .swarm
            .as_ref()
            .is_some_and(|s| s.space.is_some())
}
