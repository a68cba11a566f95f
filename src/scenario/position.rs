//! Where a field is in a scenario's text, from the spans the TOML parser records for every key
//! and value (`toml::de::DeTable`): a field path (`script[2].job`, `queue.lease_ms`) to its
//! line, and the position of a parser error to its field path.
//!
//! Owns: [`Positions`] (the text parsed once into spanned keys and values, then asked any number
//! of times: one error, or every warning of a file), and the path syntax: `.` between keys, `[i]`
//! for the i-th table of an array (`[[script]]`, or an inline table in an array).
//! Does not: parse the scenario into its types (`mod.rs`, through serde) or decide what is wrong
//! (`validate.rs`, `scenario/warnings.rs`).

use std::ops::Range;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

/// The text of a scenario with the span of every key and value. A text the parser cannot read
/// whole still gives the keys and values it recovered before and after the damage.
pub struct Positions<'s> {
    source: &'s str,
    root: DeTable<'s>,
}

impl<'s> Positions<'s> {
    pub fn new(source: &'s str) -> Positions<'s> {
        let (root, _errors) = DeTable::parse_recoverable(source);
        Positions {
            source,
            root: root.into_inner(),
        }
    }

    /// The 1-based line of the byte at `offset`.
    pub fn line_of(&self, offset: usize) -> usize {
        let end = floor_char_boundary(self.source, offset);
        self.source[..end].matches('\n').count() + 1
    }

    /// The line of `path`: of its key, or of its table's header for `name[i]`. A path whose
    /// last parts are not in the text (a key left out) gives the line of the nearest part that
    /// is; a path none of whose parts is there gives `None`.
    pub fn line(&self, path: &str) -> Option<usize> {
        let mut table = &self.root;
        let mut found: Option<usize> = None;
        let mut parts = path_parts(path).into_iter().peekable();
        while let Some((name, index)) = parts.next() {
            let Some((key, value)) = table.get_key_value(name) else {
                break;
            };
            let mut at = key.span().start;
            let mut value = value;
            if let Some(i) = index {
                let Some(item) = value.get_ref().as_array().and_then(|a| a.get(i)) else {
                    found = Some(at);
                    break;
                };
                at = item.span().start;
                value = item;
            }
            found = Some(at);
            match value.get_ref().as_table() {
                Some(t) if parts.peek().is_some() => table = t,
                _ => break,
            }
        }
        found.map(|at| self.line_of(at))
    }

    /// The field path at `span` (where the parser or serde put an error): the deepest key or
    /// value containing its start. On a table's header (or an inline table's braces) rather than
    /// in one of its keys, `key` (the key serde names: unknown, or missing) is appended. Where
    /// the text is broken, the parser's tree lacks what is around the error: the path is then
    /// the table the error is in, and the key the error points at, if it points at one.
    pub fn field_at(&self, span: Range<usize>, key: Option<&str>) -> Option<String> {
        if let Some((path, on_key)) = find(&self.root, span.start, String::new()) {
            return Some(match key {
                Some(k) if !on_key => format!("{path}.{k}"),
                _ => path,
            });
        }
        let line_start = self.source[..floor_char_boundary(self.source, span.start)]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        let on_header = self.source[line_start..].trim_start().starts_with('[');
        // On a header, the key pointed at is a table's name, not a key of the table before.
        let table = if on_header {
            None
        } else {
            enclosing_table(self.source, &self.root, span.start, String::new()).map(|(_, p)| p)
        };
        let pointed = self
            .source
            .get(span.clone())
            .filter(|t| is_bare_key(t))
            .or(key);
        match (table, pointed) {
            (Some(t), Some(k)) => Some(format!("{t}.{k}")),
            (Some(t), None) => Some(t),
            (None, Some(k)) => Some(k.to_string()),
            (None, None) => None,
        }
    }
}

/// A `[table]` or `[[table]]` header starts at `start` (not an inline or a dotted-key table).
fn is_header(source: &str, start: usize) -> bool {
    source.as_bytes().get(start) == Some(&b'[')
}

fn is_bare_key(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// The `[table]` or `[[table]]` whose header is the last one before `offset`, with its path:
/// (header start, path).
fn enclosing_table(
    source: &str,
    table: &DeTable<'_>,
    offset: usize,
    prefix: String,
) -> Option<(usize, String)> {
    let mut best: Option<(usize, String)> = None;
    let mut consider = |candidate: Option<(usize, String)>| {
        if let Some(c) = candidate {
            if best.as_ref().is_none_or(|b| c.0 >= b.0) {
                best = Some(c);
            }
        }
    };
    for (key, value) in table.iter() {
        let path = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        match value.get_ref() {
            DeValue::Table(t) => {
                let start = value.span().start;
                if start <= offset && is_header(source, start) {
                    consider(Some((start, path.clone())));
                }
                consider(enclosing_table(source, t, offset, path));
            }
            DeValue::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    if let DeValue::Table(t) = item.get_ref() {
                        let item_path = format!("{path}[{i}]");
                        let start = item.span().start;
                        if start <= offset && is_header(source, start) {
                            consider(Some((start, item_path.clone())));
                        }
                        consider(enclosing_table(source, t, offset, item_path));
                    }
                }
            }
            _ => {}
        }
    }
    best
}

/// The deepest path in `table` whose key or value contains `offset`, and whether it was found on
/// a key or a value that is not a table (`true`), or on a table's own span (`false`).
fn find(table: &DeTable<'_>, offset: usize, prefix: String) -> Option<(String, bool)> {
    // A table's entries come sorted by key, not by position; every entry must be asked.
    for (key, value) in table.iter() {
        let path = if prefix.is_empty() {
            key.get_ref().to_string()
        } else {
            format!("{prefix}.{}", key.get_ref())
        };
        if let Some(found) = find_in_value(value, offset, &path) {
            return Some(found);
        }
        if contains(key.span(), offset) {
            return Some((path, true));
        }
        if contains(value.span(), offset) {
            return Some((path, !matches!(value.get_ref(), DeValue::Table(_))));
        }
    }
    None
}

/// What inside `value` (a table's keys, an array's tables) contains `offset`; not `value`
/// itself.
fn find_in_value(
    value: &Spanned<DeValue<'_>>,
    offset: usize,
    path: &str,
) -> Option<(String, bool)> {
    match value.get_ref() {
        DeValue::Table(t) => find(t, offset, path.to_string()),
        DeValue::Array(items) => items.iter().enumerate().find_map(|(i, item)| {
            let DeValue::Table(_) = item.get_ref() else {
                return None;
            };
            let path = format!("{path}[{i}]");
            find_in_value(item, offset, &path)
                .or_else(|| contains(item.span(), offset).then_some((path, false)))
        }),
        _ => None,
    }
}

fn contains(span: Range<usize>, offset: usize) -> bool {
    span.contains(&offset) || (span.is_empty() && span.start == offset)
}

fn floor_char_boundary(s: &str, offset: usize) -> usize {
    let mut end = offset.min(s.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    end
}

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
