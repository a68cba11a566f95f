//! The bug switches' one table (`vocab::bugs::TABLE`) checked against what it claims: each row's
//! sites hold its defect (and no other code path does), what catches it is an invariant (or the
//! replay check), its demo scenario holds without the switch and is caught as the row says with
//! it, and `durasim bugs` prints every row in the columns `scripts/bug-table.sh` reads.

use crate::support::{bin, load, root};
use durasim::check::Invariant;
use durasim::run::{run_once, RunRequest};
use durasim::vocab::bugs::{Bug, BugSite, BUG_COUNT, TABLE};
use std::path::Path;
use std::process::Command;

/// The text of every `.rs` file at `path` (a file, or every file under a folder).
fn sources(path: &Path) -> Vec<String> {
    if path.is_file() {
        return vec![std::fs::read_to_string(path).unwrap()];
    }
    let mut out = Vec::new();
    for entry in std::fs::read_dir(path).unwrap() {
        let p = entry.unwrap().path();
        if p.is_dir() {
            out.extend(sources(&p));
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(std::fs::read_to_string(&p).unwrap());
        }
    }
    out
}

/// `text` names `Bug::<variant>` (and not a longer name that starts with it).
fn names(text: &str, bug: Bug) -> bool {
    let word = format!("Bug::{bug:?}");
    text.match_indices(&word).any(|(i, _)| {
        !text[i + word.len()..]
            .chars()
            .next()
            .is_some_and(|c| c.is_alphanumeric() || c == '_')
    })
}

#[test]
fn every_switch_is_read_at_its_sites_and_at_no_other() {
    let texts: Vec<(BugSite, Vec<String>)> = BugSite::ALL
        .into_iter()
        .map(|site| (site, sources(&root().join(site.path()))))
        .collect();
    for row in &TABLE {
        let found: Vec<BugSite> = texts
            .iter()
            .filter(|(_, files)| files.iter().any(|t| names(t, row.bug)))
            .map(|(site, _)| *site)
            .collect();
        let mut claimed = row.sites.to_vec();
        claimed.sort_by_key(|s| BugSite::ALL.iter().position(|x| x == s));
        assert_eq!(
            found, claimed,
            "{}: the code that reads Bug::{:?} is not where its row says",
            row.name, row.bug
        );
    }
}

#[test]
fn every_switch_is_caught_by_an_invariant_or_replay() {
    for row in &TABLE {
        assert!(
            row.caught_by == "replay" || Invariant::parse(row.caught_by).is_some(),
            "{}: caught by {:?}, which is no invariant",
            row.name,
            row.caught_by
        );
    }
}

/// Shipped scenarios that show a switch besides its row's demo.
const ALSO_SHOWN_BY: [(&str, Bug); 3] = [
    ("slow-heartbeat", Bug::NoFencing),
    ("consumer-crash", Bug::NoConsumerDedupe),
    ("incident-crash-before-ack", Bug::NaiveDualWrite),
];

/// Each switch, on the scenario that shows it, breaks the invariant its row names, and the
/// scenario keeps that invariant without it; `replay`'s switch makes two runs of one seed differ.
#[test]
fn every_switch_is_caught_on_its_demo_scenario() {
    let cases = TABLE
        .iter()
        .map(|row| (row.demo, row.bug))
        .chain(ALSO_SHOWN_BY);
    for (demo, bug) in cases {
        let s = load(demo);
        let mut without = RunRequest::for_scenario(&s);
        without.bugs.remove(bug);
        let mut with = RunRequest::for_scenario(&s);
        with.bugs.insert(bug);
        let name = bug.name();
        if bug.caught_by() == "replay" {
            let hash = |r: &RunRequest| run_once(&s, r, None).outcome.trace_hash;
            assert_eq!(
                hash(&without),
                hash(&without),
                "{demo} diverges without {name}"
            );
            assert_ne!(
                hash(&with),
                hash(&with),
                "{name} on {demo} does not diverge"
            );
            continue;
        }
        let invariant = Invariant::parse(bug.caught_by()).unwrap();
        let clean = run_once(&s, &without, None);
        assert_eq!(
            clean.check.verdict(invariant).count,
            0,
            "{demo} breaks {} without {name}",
            invariant.name()
        );
        let broken = run_once(&s, &with, None);
        let v = broken.check.verdict(invariant);
        assert!(
            v.count > 0,
            "{name} on {demo} was not caught by {}",
            invariant.name()
        );
        let first = v.first.as_ref().unwrap();
        let about_the_queue = matches!(
            invariant,
            Invariant::DepthMatchesHistory | Invariant::SummaryMatchesHistory
        );
        assert!(
            (first.job.is_some() && first.key.is_some()) || about_the_queue,
            "{name} on {demo}: a violation names its job and key"
        );
    }
}

/// `durasim bugs` prints a header and a line per row; each line's first two words are the
/// switch and what catches it (`scripts/bug-table.sh` and docs/sweeps.md read them so).
#[test]
fn durasim_bugs_prints_the_table() {
    let o = Command::new(bin()).arg("bugs").output().unwrap();
    assert_eq!(o.status.code(), Some(0));
    let text = String::from_utf8(o.stdout).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), BUG_COUNT + 1);
    let header: Vec<&str> = lines[0].split_whitespace().collect();
    assert_eq!(header[..2], ["switch", "caught"]);
    for (line, row) in lines[1..].iter().zip(&TABLE) {
        let words: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(words[..2], [row.name, row.caught_by], "{line}");
        assert_eq!(words[3], row.demo, "{line}");
        assert!(line.ends_with(row.defect), "{line}");
    }
}
