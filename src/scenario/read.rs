//! Reading a scenario's text into its file, at a bounded cost: the shape first (`shape.rs`:
//! limits, unknown top-level keys), then the TOML parser, over the whole text or, for a file of
//! many `[[enqueue]]`, `[[script]]`, `[[operator]]` or `[[burst]]` entries, over the rest of the
//! text and each entry on its own (so that only one entry's parse tree is held at a time); and
//! the [`Locator`] that says where a field is in such a text.
//!
//! Owns: [`read`] (text to `ScenarioFile`, or the error located: file line, field, message) and
//! [`Locator`].
//! Does not: validate the file (`validate.rs`), or word the positions of a parse tree
//! (`position.rs`).

use super::position::Positions;
use super::shape::{self, Entry, Shape, ENTRY_ARRAYS};
use super::{Burst, Enqueue, Operator, ScenarioFile, Script};
use toml::de::DeTable;

/// A refusal while reading: the 1-based line, the field path and the message.
pub type Refused = (Option<usize>, String, String);

/// Reads `source` into a `ScenarioFile` (the durasim settings it wrote noted), or says where
/// and why not. Over a limit of `shape.rs`, refused before anything is built.
pub fn read(source: &str) -> Result<(ScenarioFile, Shape), Refused> {
    read_as(source, None)
}

/// [`read`], with the entries read apart (`Some(true)`) or not (`Some(false)`) whatever their
/// number: the tests compare the two.
#[doc(hidden)]
pub fn read_as(source: &str, apart: Option<bool>) -> Result<(ScenarioFile, Shape), Refused> {
    let top = shape::struct_fields::<ScenarioFile>();
    let shape = shape::scan(source, top).map_err(|e| {
        (
            Some(line_of(source, e.offset)),
            e.field,
            crate::base::messages::plain(&e.message),
        )
    })?;
    let file = if apart.unwrap_or(shape.apart()) && !shape.entangled() && !shape.entries.is_empty()
    {
        read_apart(source, &shape)?
    } else {
        read_whole(source)?
    };
    Ok((file, shape))
}

/// The whole text through the parser at once.
fn read_whole(source: &str) -> Result<ScenarioFile, Refused> {
    let table = DeTable::parse(source).map_err(|e| located(&e, source))?;
    let written = ScenarioFile::written_of(table.get_ref());
    let mut file = deserialize::<ScenarioFile>(table).map_err(|e| located(&e, source))?;
    file.note_written(written);
    Ok(file)
}

/// The text without its entries through the parser, then each entry on its own. The error
/// reported is the one the parser of the whole text would report: a syntax error before any
/// other (the first in the text), then the first of the values serde visits (the top-level keys
/// by name, an array's entries in order).
fn read_apart(source: &str, shape: &Shape) -> Result<ScenarioFile, Refused> {
    let skeleton = shape.skeleton(source);
    let parsed = DeTable::parse(&skeleton);
    let syntax_at = parsed
        .as_ref()
        .err()
        .and_then(|e| e.span())
        .map(|s| s.start);
    let mut enqueue: Vec<Enqueue> = Vec::new();
    let mut script: Vec<Script> = Vec::new();
    let mut operator: Vec<Operator> = Vec::new();
    let mut burst: Vec<Burst> = Vec::new();
    // The first error of each array (serde stops an array at its first bad entry).
    let mut failed: [Option<Refused>; ENTRY_ARRAYS.len()] = Default::default();
    for e in &shape.entries {
        if syntax_at.is_some_and(|at| e.header > at) {
            break;
        }
        let body = &source[e.body.clone()];
        let table = match DeTable::parse(body) {
            Ok(t) => t,
            Err(err) => return Err(entry_located(&err, source, e)),
        };
        if failed[e.array].is_some() {
            continue;
        }
        let result = match ENTRY_ARRAYS[e.array] {
            "enqueue" => deserialize(table).map(|x| enqueue.push(x)),
            "script" => deserialize(table).map(|x| script.push(x)),
            "operator" => deserialize(table).map(|x| operator.push(x)),
            _ => deserialize(table).map(|x| burst.push(x)),
        };
        if let Err(err) = result {
            failed[e.array] = Some(entry_located(&err, source, e));
        }
    }
    let table = parsed.map_err(|e| located(&e, &skeleton))?;
    let written = ScenarioFile::written_of(table.get_ref());
    let whole = deserialize::<ScenarioFile>(table);
    // The first error serde would meet: by top-level key, a missing key of the top last.
    let first_entry_error = failed.into_iter().flatten().next();
    let file = match (whole, first_entry_error) {
        (Ok(f), None) => f,
        (Ok(_), Some(e)) => return Err(e),
        (Err(e), entry) => {
            let skeleton_error = located(&e, &skeleton);
            let top = skeleton_error.1.split(['.', '[']).next().unwrap_or("");
            let missing_at_top = !skeleton_error.1.contains('.')
                && e.message().trim_start().starts_with("missing field");
            return Err(match entry {
                Some(entry) if missing_at_top || entry.1.split('[').next().unwrap_or("") < top => {
                    entry
                }
                _ => skeleton_error,
            });
        }
    };
    let mut file = file;
    file.note_written(written);
    file.enqueue = enqueue;
    file.script = script;
    file.operator = operator;
    file.burst = burst;
    Ok(file)
}

fn deserialize<T: serde::de::DeserializeOwned>(
    table: toml::Spanned<DeTable<'_>>,
) -> Result<T, toml::de::Error> {
    T::deserialize(toml::de::Deserializer::from(table))
}

/// A parser or serde error in `text` (whose offsets are the file's), worded as durasim words
/// them: an unknown key as a key with the allowed ones, the field from the parser's spans.
fn located(e: &toml::de::Error, text: &str) -> Refused {
    let (message, unknown) = worded(e);
    let positions = Positions::new(text);
    let line = e.span().map(|s| positions.line_of(s.start));
    let field = e
        .span()
        .and_then(|s| positions.field_at(s, unknown.as_deref()))
        .or(unknown)
        .unwrap_or_default();
    (
        line,
        crate::base::messages::clip_name(&field),
        crate::base::messages::plain(&message),
    )
}

/// An error in entry `e` read on its own: its line in the file, its field under the entry's
/// path (`enqueue[3].tenant`); at the entry itself (a key left out), the line of its header.
fn entry_located(err: &toml::de::Error, source: &str, e: &Entry) -> Refused {
    let (message, unknown) = worded(err);
    let body = &source[e.body.clone()];
    let positions = Positions::new(body);
    let inner = err
        .span()
        .and_then(|s| positions.field_at(s, unknown.as_deref()))
        .or(unknown);
    let at = err.span().map_or(e.header, |s| e.body.start + s.start);
    let field = match inner {
        Some(f) => format!("{}.{f}", e.path()),
        None => e.path(),
    };
    (
        Some(line_of(source, at)),
        crate::base::messages::clip_name(&field),
        crate::base::messages::plain(&message),
    )
}

/// The parser's message in durasim's words, and the unknown key it names, if it names one.
pub(super) fn worded(e: &toml::de::Error) -> (String, Option<String>) {
    let message = e.message().trim().to_string();
    let unknown = message
        .strip_prefix("unknown field `")
        .and_then(|r| r.split('`').next())
        .map(str::to_string);
    let message = if unknown.is_some() {
        message
            .replacen("unknown field", "unknown key", 1)
            .replacen("expected one of", "allowed keys are", 1)
            .replacen("expected", "allowed:", 1)
    } else {
        message
    };
    (message, unknown)
}

/// The 1-based line of the byte at `offset`.
pub fn line_of(source: &str, offset: usize) -> usize {
    let mut end = offset.min(source.len());
    while !source.is_char_boundary(end) {
        end -= 1;
    }
    source.as_bytes()[..end]
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        + 1
}

/// Where fields are in a scenario's text: the whole text's positions (parsed once), or, when its
/// entries are read apart, the rest's (parsed when asked) and an entry's own (parsed when a
/// field in it is asked for).
pub struct Locator<'s> {
    source: &'s str,
    shape: Shape,
    whole: Option<Positions<'s>>,
}

impl<'s> Locator<'s> {
    pub fn new(source: &'s str) -> Locator<'s> {
        let shape = shape::scan(source, shape::struct_fields::<ScenarioFile>()).unwrap_or_default();
        Locator {
            source,
            shape,
            whole: None,
        }
    }

    /// The line of `path` (as [`Positions::line`]).
    pub fn line(&mut self, path: &str) -> Option<usize> {
        if !self.shape.apart() {
            let source = self.source;
            return self
                .whole
                .get_or_insert_with(|| Positions::new(source))
                .line(path);
        }
        let (head, rest) = path.split_once('.').unwrap_or((path, ""));
        if let Some((name, index)) = head.split_once('[') {
            let index = index.trim_end_matches(']').parse().ok();
            if let Some(e) = index.and_then(|i| self.shape.entry(name, i)) {
                let header = line_of(self.source, e.header);
                if rest.is_empty() {
                    return Some(header);
                }
                let body = &self.source[e.body.clone()];
                let before = line_of(self.source, e.body.start);
                return Some(
                    Positions::new(body)
                        .line(rest)
                        .map_or(header, |l| before + l - 1),
                );
            }
        }
        Positions::new(&self.shape.skeleton(self.source)).line(path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::shape::APART_FROM;

    /// A file of many entries, with `edit` made to the text of `enqueue[at]`.
    fn many(at: usize, edit: &str) -> String {
        let mut text =
            String::from("name = \"x\"\n[arrivals]\njobs = 0\n[queue]\nlease_ms = 500\n");
        for i in 0..APART_FROM + 10 {
            text.push_str(&format!(
                "[[enqueue]]\nat_ms = {i}\ntenant = \"acme\"\ndocument = \"d-{i}\"\n{}",
                if i == at { edit } else { "" }
            ));
            if i == 3 {
                text.push_str("[[script]]\nat_ms = 0\nfault = \"relay_crash\"\n");
            }
        }
        text.push_str("[run]\ntime_limit_ms = 10000\n");
        text
    }

    #[test]
    fn entries_read_apart_give_what_the_whole_text_gives() {
        let text = many(0, "");
        let (whole, _) = read_as(&text, Some(false)).unwrap();
        let (apart, shape) = read(&text).unwrap();
        assert!(shape.apart());
        assert_eq!(
            serde_json::to_value(&whole).unwrap(),
            serde_json::to_value(&apart).unwrap()
        );
        assert!(apart.queue.written.lease_ms && !apart.queue.written.heartbeat_ms);
        assert_eq!(
            (apart.enqueue.len(), apart.script.len()),
            (APART_FROM + 10, 1)
        );
    }

    #[test]
    fn an_error_in_an_entry_read_apart_is_the_whole_texts_error() {
        for edit in [
            "colour = 1\n",
            "version = \"two\"\n",
            "at_ms = 5\n",
            "x = = 1\n",
            "payload = [[1]]\n",
        ] {
            let text = many(200, edit);
            let whole = read_as(&text, Some(false)).unwrap_err();
            let apart = read(&text).unwrap_err();
            assert_eq!(apart, whole, "{edit:?}");
            assert!(apart.1.starts_with("enqueue[200]"), "{edit:?}: {apart:?}");
        }
        // An error of the rest and one of an entry: serde meets `enqueue` before `run`.
        let text =
            many(200, "colour = 1\n").replace("time_limit_ms = 10000", "time_limit_ms = \"x\"");
        assert_eq!(
            read(&text).unwrap_err(),
            read_as(&text, Some(false)).unwrap_err()
        );
        // A syntax error anywhere comes before any value's error.
        let text = many(200, "colour = 1\n").replace("[run]", "[run");
        assert_eq!(
            read(&text).unwrap_err(),
            read_as(&text, Some(false)).unwrap_err()
        );
    }

    #[test]
    fn fields_in_entries_read_apart_are_located() {
        let text = many(0, "");
        let mut apart = Locator::new(&text);
        let whole = Positions::new(&text);
        for path in [
            "enqueue[200].tenant",
            "enqueue[200]",
            "enqueue[200].payload",
            "script[0].fault",
            "queue.lease_ms",
            "run.time_limit_ms",
            "name",
        ] {
            assert_eq!(apart.line(path), whole.line(path), "{path}");
        }
    }
}
