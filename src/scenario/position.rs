//! Where a field is in a scenario's text: a field path (`script[2].job`, `queue.lease_ms`) to
//! its line, and a line to its field path.
//!
//! Owns: the lookups `parse` and `scenario_warnings` use to name the line of an error found
//! after parsing, and the field of a parser error.
//! Does not: parse the scenario (`mod.rs`) or decide what is wrong (`validate.rs`).

/// Splits a field path (`script[2].job`, `queue.lease_ms`) into its parts: `("script", Some(2))`,
/// `("job", None)`.
fn path_parts(path: &str) -> Vec<(&str, Option<usize>)> {
    path.split('.')
        .map(|p| match p.split_once('[') {
            Some((name, rest)) => (name, rest.trim_end_matches(']').parse().ok()),
            None => (p, None),
        })
        .collect()
}

/// Finds the line of `field` (a path such as `script[2].job` for the third `[[script]]`, or
/// `queue.lease_ms`) in the source, for errors found after parsing.
pub(crate) fn locate(source: &str, path: &str) -> Option<usize> {
    let parts = path_parts(path);
    let lines: Vec<&str> = source.lines().collect();
    let key_of = |l: &str| {
        l.trim_start()
            .split(['=', ' '])
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    };
    let (mut from, key_parts): (usize, &[(&str, Option<usize>)]) = match parts.as_slice() {
        [(table, Some(n)), rest @ ..] => {
            let header = format!("[[{table}]]");
            let at = lines
                .iter()
                .enumerate()
                .filter(|(_, l)| l.trim() == header)
                .nth(*n)?
                .0;
            if rest.is_empty() {
                return Some(at + 1);
            }
            (at + 1, rest)
        }
        [(table, None), rest @ ..] if !rest.is_empty() => {
            let header = format!("[{table}]");
            match lines.iter().position(|l| l.trim() == header) {
                Some(at) => (at + 1, rest),
                None => {
                    // Maybe written inline (`table.key = ...` or `table = { ... }`) at the top.
                    return lines
                        .iter()
                        .position(|l| key_of(l) == *table)
                        .map(|i| i + 1);
                }
            }
        }
        [key] => (0, std::slice::from_ref(key)),
        _ => return None,
    };
    let key = key_parts.first()?.0;
    while from < lines.len() {
        let l = lines[from].trim();
        if l.starts_with('[') {
            break;
        }
        if key_of(l) == key {
            return Some(from + 1);
        }
        from += 1;
    }
    None
}

/// The path of the table a `[header]` or `[[header]]` line opens: `stages.inference_ms`, or
/// `script[2]` for the third `[[script]]`.
fn table_path(lines: &[&str], header_line: usize) -> String {
    let h = lines[header_line].trim();
    if let Some(name) = h
        .strip_prefix("[[")
        .and_then(|r| r.split_once("]]"))
        .map(|(n, _)| n.trim())
    {
        let header = format!("[[{name}]]");
        let index = lines[..header_line]
            .iter()
            .filter(|l| l.trim() == header)
            .count();
        format!("{name}[{index}]")
    } else {
        h.trim_start_matches('[')
            .split(']')
            .next()
            .unwrap_or("")
            .trim()
            .to_string()
    }
}

/// The path of the key defined on `line` (1-based), from its table header, if any; for a table
/// header line, the table's path followed by `key` when one is given.
pub(super) fn field_at_line(source: &str, line: usize, key: Option<&str>) -> Option<String> {
    let lines: Vec<&str> = source.lines().collect();
    let at = line.checked_sub(1)?;
    let here = lines.get(at)?.trim();
    if here.starts_with('[') {
        let table = table_path(&lines, at);
        return Some(match key {
            Some(k) => format!("{table}.{k}"),
            None => table,
        });
    }
    let name = here.split('=').next()?.trim();
    if name.is_empty() || !here.contains('=') {
        return None;
    }
    let table = (0..at).rev().find(|&i| lines[i].trim().starts_with('['));
    Some(match table {
        Some(t) => format!("{}.{name}", table_path(&lines, t)),
        None => name.to_string(),
    })
}

pub(super) fn toml_line(source: &str, span: Option<std::ops::Range<usize>>) -> Option<usize> {
    span.map(|s| source[..s.start.min(source.len())].matches('\n').count() + 1)
}
