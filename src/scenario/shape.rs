//! The shape of a scenario's text, read before anything is built from it: how deep its values
//! nest, how many values its arrays and tables hold, which top-level keys it names, and where its
//! `[[enqueue]]`, `[[script]]`, `[[operator]]` and `[[burst]]` entries are.
//!
//! Owns: [`scan`], one pass over the TOML lexer's tokens (`toml_parser`, streaming: nothing is
//! kept per token), which refuses a text over the limits below at the token that crosses one (an
//! unknown top-level key at the key, before its value is read), and otherwise returns the
//! entries' places, so that a large file's entries are parsed one at a time ([`Shape::apart`])
//! rather than all at once; [`Shape::skeleton`], the text without them; and the keys serde allows
//! in a struct's table ([`struct_fields`]).
//! Why: the TOML parser holds a few hundred bytes per key and value it reads (a spanned tree),
//! so a 16 MiB file of `x = [{a=1},{a=1},...]` cost 3.9 GB before its unknown key was reported.
//! With these limits reading any file costs at most [`COST_PER_BYTE`] times its size, plus
//! [`COST_FIXED`] (docs/limits.md; `tests/it/fuzz/scenario_smoke.rs` measures it).
//! Does not: parse values or check keys below the top level (serde does, `mod.rs`), or say where
//! a field is (`position.rs`).

use std::ops::Range;
use toml_parser::lexer::TokenKind;

/// Arrays and inline tables nest at most this deep in one value (`x = [[1]]` is 2 deep). The
/// deepest a scenario needs is 3 (`faults = { stall_ms = { dist = ... } }` written inline).
pub const MAX_DEPTH: usize = 4;
/// Parts of a dotted key or a table's header (`[faults.outage]` has 2).
pub const MAX_KEY_PARTS: usize = 4;
/// Values in one array (`arrivals.tenants` holds at most 4096 tenants).
pub const MAX_ITEMS: usize = 4096;
/// Keys in one table (a section, an entry or an inline table; `[expect]` has about 60).
pub const MAX_KEYS: usize = 256;
/// Keys and values in one `[[enqueue]]`, `[[script]]`, `[[operator]]` or `[[burst]]` entry.
pub const MAX_ENTRY_NODES: usize = 256;
/// Keys and values outside those entries: this many, plus one per [`BYTES_PER_NODE`] bytes of
/// the file.
pub const FIXED_NODES: usize = 8192;
pub const BYTES_PER_NODE: usize = 32;
/// A file with at least this many entries has them parsed one at a time.
pub const APART_FROM: usize = 256;

/// The peak memory of reading a scenario file (parsing, validating, and the scenario it makes)
/// is at most this many times the file's size, plus [`COST_FIXED`] bytes.
pub const COST_PER_BYTE: u64 = 24;
pub const COST_FIXED: u64 = 16 << 20;

/// The arrays of tables whose entries a large file has parsed one at a time, in the order serde
/// visits them (by name).
pub const ENTRY_ARRAYS: [&str; 4] = ["burst", "enqueue", "operator", "script"];

/// A text over a limit: where (a byte offset), the field it is in, and what is allowed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ShapeError {
    pub offset: usize,
    pub field: String,
    pub message: String,
}

/// One `[[NAME]]` entry of an array in [`ENTRY_ARRAYS`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// Its array, an index into [`ENTRY_ARRAYS`].
    pub array: usize,
    /// Its index in its array.
    pub index: usize,
    /// Where its `[[` is.
    pub header: usize,
    /// Its keys: from the end of its header to the next header (or the end of the text).
    pub body: Range<usize>,
}

impl Entry {
    /// Its field path (`enqueue[3]`).
    pub fn path(&self) -> String {
        format!("{}[{}]", ENTRY_ARRAYS[self.array], self.index)
    }
}

/// What [`scan`] found in a text within the limits.
#[derive(Clone, Debug, Default)]
pub struct Shape {
    /// The entries of the arrays in [`ENTRY_ARRAYS`], in the text's order.
    pub entries: Vec<Entry>,
    /// Those arrays are also written otherwise (`enqueue = [...]`, `[enqueue]`, `[enqueue.x]`):
    /// their entries cannot be read apart from the rest.
    entangled: bool,
}

impl Shape {
    /// Whether the entries are parsed one at a time: there are many, and nothing else in the
    /// text writes to their arrays.
    pub fn apart(&self) -> bool {
        !self.entangled && self.entries.len() >= APART_FROM
    }

    /// The entries' arrays are also written otherwise: they can only be read with the rest.
    pub fn entangled(&self) -> bool {
        self.entangled
    }

    /// The text without the entries: each blanked to spaces, its newlines kept, so that every
    /// offset and line of the rest is the text's own.
    pub fn skeleton(&self, source: &str) -> String {
        let mut bytes = source.as_bytes().to_vec();
        for e in &self.entries {
            for b in &mut bytes[e.header..e.body.end] {
                if *b != b'\n' {
                    *b = b' ';
                }
            }
        }
        String::from_utf8(bytes).expect("ASCII spaces keep UTF-8 valid")
    }

    /// The entry `index` of the array `name`, if the text has it.
    pub fn entry(&self, name: &str, index: usize) -> Option<&Entry> {
        let array = ENTRY_ARRAYS.iter().position(|a| *a == name)?;
        self.entries.iter().filter(|e| e.array == array).nth(index)
    }
}

/// One open array or inline table inside a value.
#[derive(Clone, Copy, Debug)]
enum Frame {
    Array { items: usize, expect_value: bool },
    Table { keys: usize, state: TableState },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum TableState {
    Key,
    Value,
    AfterValue,
}

/// Where a statement at the top level (outside any value) is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Statement {
    Start,
    Header,
    Key,
    Value,
    AfterValue,
}

struct Scanner<'s> {
    source: toml_parser::Source<'s>,
    text: &'s str,
    allowed: &'static [&'static str],
    stack: Vec<Frame>,
    statement: Statement,
    /// Parts of the key or header being read.
    parts: usize,
    /// The first part of the key or header being read (decoded), and whether it has more.
    first: String,
    /// A header being read is `[[...]]`, starting at this offset.
    header_at: usize,
    /// Where the key being read starts.
    key_at: usize,
    aot: bool,
    /// A header has been read: keys are no longer top-level.
    in_section: bool,
    /// The table the statements go into: its path, for messages.
    table: String,
    /// The top-level statement's key, for messages.
    key: String,
    table_keys: usize,
    /// The entry being read, if the current table is one.
    entry: Option<Entry>,
    entry_nodes: usize,
    counts: [usize; ENTRY_ARRAYS.len()],
    nodes: usize,
    max_nodes: usize,
    shape: Shape,
}

/// Scans `text` within the limits; the first limit crossed, or an unknown top-level key (of
/// those in `allowed`), is refused at that token.
pub fn scan(text: &str, allowed: &'static [&'static str]) -> Result<Shape, ShapeError> {
    let mut s = Scanner {
        source: toml_parser::Source::new(text),
        text,
        allowed,
        stack: Vec::with_capacity(MAX_DEPTH + 1),
        statement: Statement::Start,
        parts: 0,
        first: String::new(),
        header_at: 0,
        key_at: 0,
        aot: false,
        in_section: false,
        table: String::new(),
        key: String::new(),
        table_keys: 0,
        entry: None,
        entry_nodes: 0,
        counts: [0; ENTRY_ARRAYS.len()],
        nodes: 0,
        max_nodes: FIXED_NODES + text.len() / BYTES_PER_NODE,
        shape: Shape::default(),
    };
    let mut skip_bracket = false;
    for token in s.source.lex() {
        let kind = token.kind();
        let span = token.span();
        if matches!(kind, TokenKind::Whitespace | TokenKind::Comment) {
            continue;
        }
        if skip_bracket {
            skip_bracket = false;
            if kind == TokenKind::LeftSquareBracket {
                continue;
            }
        }
        if s.stack.is_empty() {
            skip_bracket = s.top_level(kind, span.start(), span.end(), &token)?;
        } else {
            s.in_value(kind, span.start())?;
        }
    }
    s.end_entry(text.len());
    Ok(s.shape)
}

impl<'s> Scanner<'s> {
    fn error(&self, offset: usize, message: String) -> ShapeError {
        let field = match (self.table.is_empty(), self.key.is_empty()) {
            (true, _) => self.key.clone(),
            (false, true) => self.table.clone(),
            (false, false) => format!("{}.{}", self.table, self.key),
        };
        ShapeError {
            offset,
            field: crate::base::messages::clip_name(&field),
            message,
        }
    }

    /// One more key or value; refused past the file's share or the entry's.
    fn node(&mut self, offset: usize) -> Result<(), ShapeError> {
        if self.entry.is_some() {
            self.entry_nodes += 1;
            if self.entry_nodes > MAX_ENTRY_NODES {
                return Err(self.error(
                    offset,
                    format!(
                        "more than {MAX_ENTRY_NODES} keys and values in one entry; an entry has a \
                         few keys, each with one value"
                    ),
                ));
            }
        } else {
            self.nodes += 1;
            if self.nodes > self.max_nodes {
                return Err(self.error(
                    offset,
                    format!(
                        "more than {} keys and values in a file of {} bytes: a scenario holds at \
                         most {FIXED_NODES} plus one per {BYTES_PER_NODE} bytes of its file \
                         (besides its [[enqueue]], [[script]], [[operator]] and [[burst]] entries)",
                        self.max_nodes,
                        self.text.len()
                    ),
                ));
            }
        }
        Ok(())
    }

    /// A token outside any value. Returns whether the next token is the second `[` of `[[`.
    fn top_level(
        &mut self,
        kind: TokenKind,
        start: usize,
        end: usize,
        token: &toml_parser::lexer::Token,
    ) -> Result<bool, ShapeError> {
        use TokenKind as T;
        match (self.statement, kind) {
            (Statement::Start | Statement::AfterValue, T::Newline) => {
                self.statement = Statement::Start;
            }
            (Statement::Start, T::LeftSquareBracket) => {
                self.aot = self.text.as_bytes().get(end) == Some(&b'[');
                self.header_at = start;
                self.statement = Statement::Header;
                self.parts = 0;
                self.first.clear();
                self.end_entry(start);
                return Ok(self.aot);
            }
            (Statement::Start, T::Atom | T::BasicString | T::LiteralString) => {
                self.statement = Statement::Key;
                self.key_at = start;
                self.parts = 0;
                self.first.clear();
                self.key_part(token, start)?;
            }
            (Statement::Header | Statement::Key, T::Atom | T::BasicString | T::LiteralString) => {
                self.key_part(token, start)?;
            }
            (Statement::Header, T::RightSquareBracket) => {
                self.statement = Statement::AfterValue;
                let close = if self.aot && self.text.as_bytes().get(end) == Some(&b']') {
                    end + 1
                } else {
                    end
                };
                self.header(close)?;
            }
            (Statement::Key, T::Equals) => {
                self.statement = Statement::Value;
                self.key_done(self.key_at)?;
            }
            (Statement::Value, T::LeftSquareBracket) => {
                self.node(start)?;
                self.push(
                    Frame::Array {
                        items: 0,
                        expect_value: true,
                    },
                    start,
                )?;
            }
            (Statement::Value, T::LeftCurlyBracket) => {
                self.node(start)?;
                self.push(
                    Frame::Table {
                        keys: 0,
                        state: TableState::Key,
                    },
                    start,
                )?;
            }
            (Statement::Value, _) if is_value(kind) => {
                self.node(start)?;
                self.statement = Statement::AfterValue;
            }
            // Anything else is the parser's to refuse (a dot between key parts included).
            _ => {}
        }
        Ok(false)
    }

    /// A part of a key or a header: counted, and the first one decoded.
    fn key_part(
        &mut self,
        token: &toml_parser::lexer::Token,
        start: usize,
    ) -> Result<(), ShapeError> {
        self.parts += 1;
        if self.parts > MAX_KEY_PARTS {
            return Err(self.error(
                start,
                format!("a key of more than {MAX_KEY_PARTS} dotted parts"),
            ));
        }
        if self.statement == Statement::Key {
            self.node(start)?;
        }
        if self.parts == 1 {
            if let Some(raw) = self.source.get(token) {
                raw.decode_key(&mut self.first, &mut ());
            }
        }
        Ok(())
    }

    /// A top-level key is allowed, or refused before its value is read.
    fn check_top(&self, offset: usize) -> Result<(), ShapeError> {
        if self.allowed.contains(&self.first.as_str()) {
            return Ok(());
        }
        let list: Vec<String> = self.allowed.iter().map(|k| format!("`{k}`")).collect();
        Err(ShapeError {
            offset,
            field: crate::base::messages::clip_name(&self.first),
            message: format!(
                "unknown key `{}`, allowed keys are {}",
                crate::base::messages::clip_name(&self.first),
                list.join(", ")
            ),
        })
    }

    /// The entry array named by the key or header being read, if it names one.
    fn entry_array(&self) -> Option<usize> {
        ENTRY_ARRAYS.iter().position(|a| *a == self.first)
    }

    /// A header read whole (`close`: just past its last `]`).
    fn header(&mut self, close: usize) -> Result<(), ShapeError> {
        self.check_top(self.header_at)?;
        self.in_section = true;
        self.table_keys = 0;
        self.key.clear();
        self.table = self.first.clone();
        match (self.entry_array(), self.aot, self.parts) {
            (Some(array), true, 1) => {
                let index = self.counts[array];
                self.counts[array] += 1;
                let entry = Entry {
                    array,
                    index,
                    header: self.header_at,
                    body: close..close,
                };
                self.table = entry.path();
                self.entry = Some(entry);
                self.entry_nodes = 0;
            }
            (Some(_), _, _) => self.shape.entangled = true,
            _ => {}
        }
        Ok(())
    }

    /// The entry being read ends at `at` (a header, or the end of the text).
    fn end_entry(&mut self, at: usize) {
        if let Some(mut e) = self.entry.take() {
            e.body.end = at.max(e.body.start);
            self.shape.entries.push(e);
        }
    }

    /// A key read whole, its `=` at `offset`.
    fn key_done(&mut self, offset: usize) -> Result<(), ShapeError> {
        if !self.in_section {
            self.check_top(offset)?;
            if self.entry_array().is_some() {
                self.shape.entangled = true;
            }
        }
        self.key = self.first.clone();
        self.table_keys += 1;
        if self.table_keys > MAX_KEYS {
            return Err(self.error(offset, format!("more than {MAX_KEYS} keys in one table")));
        }
        Ok(())
    }

    fn push(&mut self, frame: Frame, offset: usize) -> Result<(), ShapeError> {
        if self.stack.len() >= MAX_DEPTH {
            return Err(self.error(
                offset,
                format!(
                    "values nested more than {MAX_DEPTH} deep (arrays and inline tables inside \
                     one another)"
                ),
            ));
        }
        self.stack.push(frame);
        Ok(())
    }

    /// A token inside an array or an inline table.
    fn in_value(&mut self, kind: TokenKind, offset: usize) -> Result<(), ShapeError> {
        use TokenKind as T;
        let top = self.stack.len() - 1;
        match kind {
            T::RightSquareBracket | T::RightCurlyBracket => {
                self.stack.pop();
                match self.stack.last_mut() {
                    None => self.statement = Statement::AfterValue,
                    Some(Frame::Table { state, .. }) => *state = TableState::AfterValue,
                    Some(Frame::Array { .. }) => {}
                }
                return Ok(());
            }
            T::Comma => {
                match &mut self.stack[top] {
                    Frame::Array { expect_value, .. } => *expect_value = true,
                    Frame::Table { state, .. } => *state = TableState::Key,
                }
                return Ok(());
            }
            _ => {}
        }
        let opens = match kind {
            T::LeftSquareBracket => Some(Frame::Array {
                items: 0,
                expect_value: true,
            }),
            T::LeftCurlyBracket => Some(Frame::Table {
                keys: 0,
                state: TableState::Key,
            }),
            _ => None,
        };
        let starts_value = match &mut self.stack[top] {
            Frame::Array {
                items,
                expect_value,
            } => {
                if !*expect_value || !(is_value(kind) || opens.is_some()) {
                    return Ok(());
                }
                *expect_value = false;
                *items += 1;
                if *items > MAX_ITEMS {
                    return Err(self.error(
                        offset,
                        format!(
                            "more than {MAX_ITEMS} values in one array (the longest a scenario \
                             needs, arrivals.tenants, holds at most 4096)"
                        ),
                    ));
                }
                true
            }
            Frame::Table { keys, state } => match (*state, kind) {
                (TableState::Key, T::Atom | T::BasicString | T::LiteralString) => {
                    self.node(offset)?;
                    return Ok(());
                }
                (TableState::Key, T::Equals) => {
                    *keys += 1;
                    *state = TableState::Value;
                    if *keys > MAX_KEYS {
                        return Err(
                            self.error(offset, format!("more than {MAX_KEYS} keys in one table"))
                        );
                    }
                    return Ok(());
                }
                (TableState::Value, _) if is_value(kind) || opens.is_some() => {
                    *state = TableState::AfterValue;
                    true
                }
                _ => return Ok(()),
            },
        };
        if starts_value {
            self.node(offset)?;
            if let Some(frame) = opens {
                self.push(frame, offset)?;
            }
        }
        Ok(())
    }
}

/// A token that is a whole value (a number, a string, a boolean, a date).
fn is_value(kind: TokenKind) -> bool {
    use TokenKind as T;
    matches!(
        kind,
        T::Atom | T::BasicString | T::LiteralString | T::MlBasicString | T::MlLiteralString
    )
}

/// The keys serde allows in `T`'s table: the fields its derived `Deserialize` names (every
/// section and `ScenarioFile` deny unknown keys, so these are all it accepts).
pub fn struct_fields<T: serde::de::DeserializeOwned>() -> &'static [&'static str] {
    use std::cell::Cell;
    #[derive(Debug)]
    struct Stop;
    impl std::fmt::Display for Stop {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("stop")
        }
    }
    impl std::error::Error for Stop {}
    impl serde::de::Error for Stop {
        fn custom<M: std::fmt::Display>(_: M) -> Self {
            Stop
        }
    }
    struct Probe<'a>(&'a Cell<&'static [&'static str]>);
    impl<'de> serde::Deserializer<'de> for Probe<'_> {
        type Error = Stop;
        fn deserialize_any<V: serde::de::Visitor<'de>>(self, _: V) -> Result<V::Value, Stop> {
            Err(Stop)
        }
        fn deserialize_struct<V: serde::de::Visitor<'de>>(
            self,
            _name: &'static str,
            fields: &'static [&'static str],
            _visitor: V,
        ) -> Result<V::Value, Stop> {
            self.0.set(fields);
            Err(Stop)
        }
        serde::forward_to_deserialize_any! {
            bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string bytes byte_buf
            option unit unit_struct newtype_struct seq tuple tuple_struct map enum identifier
            ignored_any
        }
    }
    let fields = Cell::new(&[][..]);
    let _ = T::deserialize(Probe(&fields));
    fields.get()
}

#[cfg(test)]
mod tests {
    use super::*;

    const TOP: &[&str] = &["name", "arrivals", "enqueue", "queue", "faults", "script"];

    fn refused(text: &str) -> ShapeError {
        scan(text, TOP).unwrap_err()
    }

    #[test]
    fn an_unknown_top_level_key_is_refused_at_the_key() {
        let e = refused("name = \"x\"\nx = [{a=1},{a=1}]\n");
        assert_eq!((e.offset, e.field.as_str()), (11, "x"));
        assert!(e
            .message
            .starts_with("unknown key `x`, allowed keys are `name`, "));
        assert_eq!(refused("[[x]]\n").field, "x");
        assert_eq!(refused("[x.y]\n").field, "x");
        assert_eq!(refused("\"x y\" = 1\n").field, "x y");
        // Below the top level, serde judges the keys.
        assert!(scan("[queue]\nx = 1\n[faults.outage]\nfrom_ms = 1\n", TOP).is_ok());
        assert!(scan("queue.lease_ms = 5\n", TOP).is_ok());
    }

    #[test]
    fn depth_items_keys_and_parts_are_capped() {
        let deep = format!("name = {}{}\n", "[".repeat(5), "]".repeat(5));
        assert!(refused(&deep).message.contains("nested more than 4 deep"));
        assert!(scan(&format!("name = {}{}\n", "[".repeat(4), "]".repeat(4)), TOP).is_ok());
        let inline = format!("name = {}1{}\n", "{a=".repeat(5), "}".repeat(5));
        assert!(refused(&inline).message.contains("nested"));
        let items = format!("[arrivals]\ntenants = [{}1]\n", "1,".repeat(MAX_ITEMS));
        let e = refused(&items);
        assert!(e.message.contains("more than 4096 values"), "{e:?}");
        assert_eq!(e.field, "arrivals.tenants");
        let keys: String = (0..=MAX_KEYS).map(|i| format!("k{i} = 1\n")).collect();
        assert!(refused(&format!("[queue]\n{keys}"))
            .message
            .contains("more than 256 keys"));
        assert!(refused("queue.a.b.c.d = 1\n")
            .message
            .contains("dotted parts"));
    }

    #[test]
    fn entries_are_found_and_read_apart_only_when_many_and_alone() {
        let mut text = String::from("name = \"x\"\n[queue]\nlease_ms = 5\n");
        for i in 0..APART_FROM {
            text.push_str(&format!("[[enqueue]]\nat_ms = {i}\n# note\n"));
        }
        text.push_str("[faults]\ncrash = 0.5\n[[script]]\nat_ms = 1\n");
        let shape = scan(&text, TOP).unwrap();
        assert_eq!(shape.entries.len(), APART_FROM + 1);
        assert!(shape.apart());
        let e = shape.entry("enqueue", 3).unwrap();
        assert_eq!(&text[e.body.clone()], "\nat_ms = 3\n# note\n");
        assert_eq!(shape.entry("script", 0).unwrap().path(), "script[0]");
        let skeleton = shape.skeleton(&text);
        assert_eq!(skeleton.len(), text.len());
        assert_eq!(skeleton.matches('\n').count(), text.matches('\n').count());
        assert!(!skeleton.contains("enqueue") && skeleton.contains("crash = 0.5"));
        let mixed = text.replace("[faults]", "[enqueue.x]\n[faults]");
        assert!(!scan(&mixed, TOP).unwrap().apart());
        let inline = format!("enqueue = []\n{}", &text[11..]);
        assert!(!scan(&inline, TOP).unwrap().apart());
    }

    #[test]
    fn values_outside_entries_are_capped_by_the_file_size() {
        let mut text = String::from("[arrivals]\n");
        let row = format!("tenants = [{}1]\n", "1,".repeat(MAX_ITEMS - 1));
        for i in 0..3 {
            text.push_str(&row.replace("tenants", &format!("t{i}")));
        }
        let e = refused(&text);
        assert!(e.message.contains("keys and values in a file of"), "{e:?}");
    }

    #[test]
    fn serde_names_a_structs_keys() {
        #[derive(serde::Deserialize)]
        #[allow(dead_code)]
        struct T {
            a: u32,
            #[serde(default)]
            b: String,
        }
        assert_eq!(struct_fields::<T>(), ["a", "b"]);
    }
}
