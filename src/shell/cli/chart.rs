//! `durasim chart DIR`: the charts and the HTML report of a finished run or sweep.
//!
//! Owns: where they go (into DIR itself, as a new copy swapped in whole, or into `--out`) and
//! the lines that name what was written and what could not be drawn.
//! Does not: draw (`report::render`) or simulate anything.

use super::{bad, output_error, Outcome};
use crate::shell::report::chart::Format;
use crate::shell::report::output_dir::{Kind, OutputDir, OutputError};
use std::path::Path;

/// `durasim chart DIR`: the charts and the report of a finished run or sweep.
pub fn cmd_chart(dir: &Path, out: Option<&Path>, format: Format) -> anyhow::Result<Outcome> {
    if !dir.is_dir() {
        return Err(bad(format!("{}: not a directory", dir.display())));
    }
    if !dir.join("summary.json").is_file() && !dir.join("sweep.json").is_file() {
        return Err(bad(format!(
            "{}: neither summary.json (a run) nor sweep.json (a sweep) is there",
            dir.display()
        )));
    }
    let same = |o: &Path| {
        o == dir || matches!((o.canonicalize(), dir.canonicalize()), (Ok(a), Ok(b)) if a == b)
    };
    // In place: a new copy of DIR (hard links) with the charts added, swapped in when complete.
    // Elsewhere: a new directory of its own.
    let staged = match out {
        Some(o) if !same(o) => OutputDir::create(o, Kind::Chart),
        _ => OutputDir::extend(dir, |f| f == "index.html" || f.starts_with("charts/")),
    };
    let staged = staged.map_err(|e| match e {
        OutputError::Refused(m) if out.is_none() => bad(format!(
            "{m}\n(`durasim chart DIR` adds charts/ and index.html to DIR only if durasim wrote DIR; \
             --out NEWDIR writes them elsewhere)"
        )),
        e => output_error(e),
    })?;
    let report = crate::shell::report::render::render_dir(dir, staged.path(), format, None)
        .map_err(|e| bad(format!("{e:#}")))?;
    let temp = staged.path().to_path_buf();
    let written = staged.commit().map_err(output_error)?;
    let moved = |p: &Path| written.join(p.strip_prefix(&temp).unwrap_or(p));
    for c in &report.charts {
        for f in &c.files {
            println!("chart   {}", moved(f).display());
        }
    }
    for m in &report.missing {
        println!("missing {m}");
    }
    println!("report  {}", moved(&report.html).display());
    Ok(Outcome::Ok)
}
