//! JUnit XML for CI systems: one test case per invariant, plus replay, crash and coverage.
//!
//! Owns: rendering a `sweep.json` as a `<testsuite>` (a failure carries the seeds, the first
//! violation and the reproduction command) and writing `--junit FILE`, never over a file that is
//! not a report durasim wrote.
//! Does not: decide anything; it only formats.

use super::output_dir::OutputError;
use crate::check::Invariant;
use crate::sweep::SweepJson;
use std::path::Path;

fn esc(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            c => o.push(c),
        }
    }
    o
}

/// How a report durasim wrote is recognised: `--junit FILE` replaces only a file that has it.
pub const MARK: &str = "<testsuites name=\"durasim\"";

pub fn render(j: &SweepJson) -> String {
    let mut cases: Vec<(String, Option<(String, String)>)> = Vec::new();
    let names: Vec<&str> = Invariant::ALL
        .iter()
        .map(|i| i.name())
        .chain(["replay", crate::sweep::freeze::HISTORY_CONSISTENT, "panic"])
        .collect();
    for name in names {
        let failure = j.failures.iter().find(|g| g.invariant == name).map(|g| {
            let message = format!(
                "{} ({}) violated in {} of {} seeds; first seeds {:?}",
                g.invariant, g.class, g.seeds, j.seeds_run, g.first_seeds
            );
            let mut body = String::new();
            for s in &g.signatures {
                body.push_str(&format!(
                    "{} seeds, first seed {}: {}\nreproduce: {}\n",
                    s.seeds, s.first_seed, s.first_message, s.reproduce
                ));
                if let Some(sh) = &s.shrunk {
                    body.push_str(&format!(
                        "shrunk scenario: durasim run <sweep dir>/{}\n",
                        sh.path
                    ));
                }
            }
            (message, body)
        });
        cases.push((name.to_string(), failure));
    }
    let coverage = (j.coverage.gate == "failed").then(|| {
        (
            "coverage gate failed".to_string(),
            j.coverage.problems.join("\n"),
        )
    });
    cases.push(("coverage".to_string(), coverage));
    let failures = cases.iter().filter(|c| c.1.is_some()).count();
    let suite = format!(
        "durasim sweep {} seeds {}..{}",
        j.scenario, j.seeds.start, j.seeds.end
    );
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    x.push_str(&format!(
        "{MARK} tests=\"{}\" failures=\"{failures}\" time=\"{:.3}\">\n  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{:.3}\">\n",
        cases.len(),
        j.throughput.wall_s,
        esc(&suite),
        cases.len(),
        j.throughput.wall_s
    ));
    for (name, failure) in &cases {
        let class = format!("durasim.{}", j.scenario);
        match failure {
            None => x.push_str(&format!("    <testcase classname=\"{}\" name=\"{}\"/>\n", esc(&class), esc(name))),
            Some((message, body)) => x.push_str(&format!(
                "    <testcase classname=\"{}\" name=\"{}\">\n      <failure message=\"{}\" type=\"violation\">{}</failure>\n    </testcase>\n",
                esc(&class),
                esc(name),
                esc(message),
                esc(body)
            )),
        }
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// What `--junit FILE` is called in a refusal.
const WHAT: &str = "JUnit report";

fn is_junit(text: &str) -> bool {
    text.contains(MARK)
}

/// Refuses a `--junit FILE` durasim may not replace, before the sweep runs.
pub fn check_junit_target(path: &Path) -> Result<(), OutputError> {
    super::output_dir::check_own_file(path, WHAT, is_junit)
}

/// The bytes of `--junit FILE` as [`write_junit`] writes them (the report and its digest line):
/// what a sweep writes into its own directory when `FILE` is inside `--out`.
pub fn junit_text(j: &SweepJson) -> String {
    super::output_dir::with_digest(&render(j))
}

/// Writes `--junit FILE`, replacing only a JUnit report durasim wrote.
pub fn write_junit(path: &Path, j: &SweepJson) -> Result<(), OutputError> {
    super::output_dir::write_own_file(path, &render(j), WHAT, is_junit)
}
