//! Prints docs/validation.md's tables: durasim's queueWaitMs and queue depth against queueing
//! theory (Erlang C, Pollaczek-Khinchine, Little's law) for the scenarios in
//! `scenarios/validation/`, each over independent seeds.
//!
//!     cargo run --release --example queueing_validation [-- [--seeds K] [--jobs N] [FILE...]]
//!
//! Defaults: every `scenarios/validation/*.toml`, seeds 0..16, each scenario's own job count:
//! exactly what `tests/it/queueing_theory.rs` checks. A cell reads "durasim ±standard error
//! (theory)"; the standard error is the spread of the per-seed figures over sqrt(seeds).

mod textbook;

use durasim::scenario::Scenario;
use std::path::PathBuf;
use textbook::{Estimate, Measured, QUANTILES};

fn main() {
    let mut seeds = 16u64;
    let mut jobs = None;
    let mut files: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| -> u64 {
            let v = args.next().unwrap_or_default();
            v.parse().unwrap_or_else(|_| {
                eprintln!("{name} needs a whole number, got {v:?}");
                std::process::exit(2)
            })
        };
        match a.as_str() {
            "--seeds" => seeds = value("--seeds").max(2),
            "--jobs" => jobs = Some(value("--jobs")),
            _ => files.push(PathBuf::from(a)),
        }
    }
    if files.is_empty() {
        let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("scenarios/validation");
        files = std::fs::read_dir(&dir)
            .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "toml"))
            .collect();
    }
    let mut runs: Vec<(String, Measured)> = files
        .iter()
        .map(|path| {
            let text =
                std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let s = Scenario::parse(&path.display().to_string(), &text)
                .unwrap_or_else(|e| panic!("{e}"));
            let m = Measured::run(&s, seeds, jobs)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            (s.name.clone(), m)
        })
        .collect();
    // M/M/c by c, then M/G/1.
    runs.sort_by(|(a, x), (b, y)| {
        let key = |m: &Measured| (!m.textbook.markovian, m.textbook.servers);
        key(x).cmp(&key(y)).then(a.cmp(b))
    });

    let cell = |e: Estimate, theory: Option<f64>, digits: usize| -> String {
        let theory = theory.map_or("no closed form".to_string(), |x| format!("{x:.digits$}"));
        format!("**{:.digits$}** ±{:.digits$} ({theory})", e.mean, e.se)
    };
    println!("| scenario | queue | ρ | seeds × jobs | P(wait) | mean wait ms | p50 ms | p95 ms | p99 ms | mean depth |");
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (name, m) in &runs {
        let t = &m.textbook;
        let q = |i: usize| {
            let mut c = cell(m.estimate(|f| f.quantiles[i]), t.quantile(QUANTILES[i]), 0);
            if t.quantile_at_atom(QUANTILES[i]) {
                c.push_str(" at the atom");
            }
            c
        };
        println!(
            "| `{name}` | {} | {:.2} | {} × {} | {} | {} | {} | {} | {} | {} |",
            t.kind,
            t.rho(),
            m.seeds.len(),
            m.jobs() / m.seeds.len() as u64,
            cell(m.estimate(|f| f.p_wait), Some(t.p_wait()), 4),
            cell(m.estimate(|f| f.mean_wait), Some(t.mean_wait()), 1),
            q(0),
            q(1),
            q(2),
            cell(m.estimate(|f| f.mean_depth), Some(t.mean_depth()), 3),
        );
    }
    println!();
    println!("| scenario | P(wait > t) at the theoretical p50 | at p95 | at p99 | Little on each run: depth / (λ_run · mean wait) | mass of W in (0, 1 ms] | largest distance from theory |");
    println!("|---|---:|---:|---:|---:|---:|---:|");
    for (name, m) in &runs {
        let t = &m.textbook;
        let tail = |i: usize| match t.quantile(QUANTILES[i]) {
            Some(x) if !t.quantile_at_atom(QUANTILES[i]) => {
                let theory = t.tail(x.round());
                format!(
                    "t = {:.0}: {}",
                    x.round(),
                    cell(m.estimate(|f| f.tails[i]), theory, 4)
                )
            }
            Some(_) => "at the atom".to_string(),
            None => "no closed form".to_string(),
        };
        // The figures of the first table, in standard errors.
        let mut z = vec![
            m.estimate(|f| f.p_wait).z(t.p_wait()),
            m.estimate(|f| f.mean_wait).z(t.mean_wait()),
            m.estimate(|f| f.mean_depth).z(t.mean_depth()),
        ];
        for (i, q) in QUANTILES.into_iter().enumerate() {
            if let Some(x) = t.quantile(q).filter(|_| !t.quantile_at_atom(q)) {
                z.push(m.estimate(|f| f.quantiles[i]).z(x));
            }
        }
        let worst = z
            .into_iter()
            .fold(0.0f64, |a, b| if b.abs() > a.abs() { b } else { a });
        let little = m.estimate(|f| f.little_ratio());
        println!(
            "| `{name}` | {} | {} | {} | {:.4} ±{:.4} | {:.4} | {worst:+.1} SE |",
            tail(0),
            tail(1),
            tail(2),
            little.mean,
            little.se,
            t.mass_in_first_ms(),
        );
    }
}
