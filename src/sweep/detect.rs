//! Seeds-to-detect: for each bug switch, how many runs a uniform sweep, a guided search from
//! nothing, and a guided search from a kept corpus make before their first failure, each over
//! several starts (`durasim sweep --seeds-to-detect N`).
//!
//! Owns: the searches' ranges (the k-th start over seeds `A + k * length` upward), the corpus
//! the third kind starts from (the user's, or one a bug-free guided search keeps over the range
//! after the starts', which no uniform search sees), and its order per start.
//! Does not: search (`guided.rs`) or print (`cli::guided`).

use super::corpus::from_corpus;
use super::guided::{explore, Candidate};
use super::{Plan, SweepError};
use crate::base::rng::{Purpose, Stream};
use crate::scenario::Scenario;
use crate::vocab::bugs::{Bug, BugSet};

/// Seeds-to-detect for one bug switch: per start, the runs each kind of search made up to its
/// first failure (None: none within the budget).
#[derive(Clone, Debug, PartialEq)]
pub struct Detect {
    pub bug: Bug,
    pub uniform: Vec<Option<u64>>,
    /// Guided, from nothing.
    pub guided: Vec<Option<u64>>,
    /// Guided, from the kept corpus (see [`Detection::corpus`]).
    pub from_corpus: Vec<Option<u64>>,
}

/// Where the guided searches' corpus came from.
#[derive(Clone, Debug, PartialEq)]
pub enum CorpusSource {
    /// `--corpus DIR`: the user's, of this many runs.
    Given(usize),
    /// A guided search with no bug switch over these seeds, which kept this many runs.
    Built { seeds: (u64, u64), kept: usize },
}

/// The seeds-to-detect table: a row per bug switch, and the corpus the third kind started from.
#[derive(Clone, Debug, PartialEq)]
pub struct Detection {
    pub rows: Vec<Detect>,
    pub corpus: CorpusSource,
}

/// For each bug switch in `bugs` (every one when empty): `starts` searches of each kind, each
/// of `plan.seeds`' length, the k-th starting at seed `plan.seeds.0 + k * length`: a uniform
/// sweep, a guided search from nothing, and a guided search that first replays `corpus` (in
/// an order drawn for the start) or, without one, the corpus a guided search with no bug
/// switch keeps over the next range after the starts' (`k = starts`), so no uniform search
/// saw its seeds. The bug-free corpus is what a team keeps between runs: its runs reach the
/// rare paths without the defect, where a search under the defect keeps only the runs the
/// defect let pass.
pub fn seeds_to_detect(
    plan: &Plan,
    bugs: &[Bug],
    starts: u64,
    corpus: Option<Vec<Candidate>>,
) -> Result<Detection, SweepError> {
    let all: Vec<Bug> = match bugs.is_empty() {
        true => Bug::ALL.to_vec(),
        false => bugs.to_vec(),
    };
    let len = plan.seeds.1 - plan.seeds.0;
    let (corpus, source) = match corpus {
        Some(c) => {
            let n = c.len();
            (c, CorpusSource::Given(n))
        }
        None => {
            let mut p = plan.clone();
            p.bugs = BugSet::EMPTY;
            let a = plan.seeds.0.saturating_add(starts.saturating_mul(len));
            p.seeds = (a, a.saturating_add(len));
            let kept = explore(&p, &[], true, false)?.kept;
            let c: Vec<Candidate> = kept
                .iter()
                .enumerate()
                .map(|(i, text)| {
                    let name = format!("{i:05}.toml");
                    let s = Scenario::parse(&name, text).expect("a kept run's file parses back");
                    from_corpus(plan, &name, s)
                })
                .collect();
            let kept = c.len();
            (
                c,
                CorpusSource::Built {
                    seeds: p.seeds,
                    kept,
                },
            )
        }
    };
    let mut rows = Vec::new();
    for bug in all {
        let mut row = Detect {
            bug,
            uniform: Vec::new(),
            guided: Vec::new(),
            from_corpus: Vec::new(),
        };
        for k in 0..starts {
            let mut p = plan.clone();
            p.bugs = BugSet::from(bug);
            let a = plan.seeds.0 + k * len;
            p.seeds = (a, a + len);
            let first = |start: &[Candidate], m: bool| {
                explore(&p, start, m, true).map(|g| g.first_failure.map(|f| f.run))
            };
            row.uniform.push(first(&[], false)?);
            row.guided.push(first(&[], true)?);
            row.from_corpus.push(first(&shuffled(&corpus, a), true)?);
        }
        rows.push(row);
    }
    Ok(Detection {
        rows,
        corpus: source,
    })
}

/// `corpus` in an order drawn from `seed` (Fisher-Yates on the seed's own stream).
fn shuffled(corpus: &[Candidate], seed: u64) -> Vec<Candidate> {
    let mut g = Stream::new(seed, Purpose::Swarm, 3);
    let mut c = corpus.to_vec();
    for i in (1..c.len()).rev() {
        let j = g.range(0, i as u64) as usize;
        c.swap(i, j);
    }
    c
}
