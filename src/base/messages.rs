//! How durasim shows a user's values and a parser's complaints in its messages.
//!
//! Owns: [`clip`] (at most [`MAX_SHOWN`] characters of any offending value, with control and
//! bidirectional characters escaped), [`plain`] (serde's and the TOML parser's internal wording
//! — "internally tagged enum Dist", "wanted exactly 1 element" — rewritten in plain words, and
//! every quoted value in them clipped), and [`Warnings`], the suspicious-but-valid settings a
//! command prints as `warning:` lines (`--deny-warnings` turns them into exit 2).
//! Does not: decide what is valid (`scenario/`, `limits.rs`) or print anything.

/// How much of a user's value a message shows: longer values are cut (with their length said),
/// so a 100 KB string cannot flood a terminal or a CI log.
pub const MAX_SHOWN: usize = 80;

/// A user's value as a message shows it: quoted, control and bidirectional-override characters
/// escaped (they could reorder or hide what the terminal prints), at most [`MAX_SHOWN`]
/// characters as shown (escapes count as what they print), and when cut, the value's full length.
pub fn clip(value: &str) -> String {
    let (shown, cut) = shown_within(value, MAX_SHOWN, true);
    if cut {
        format!("\"{shown}…\" ({} characters)", value.chars().count())
    } else {
        format!("\"{shown}\"")
    }
}

/// A line of a file (a trace line, a record) as a message shows it: unquoted, at most 400
/// characters as shown, invisible characters escaped.
pub fn clip_line(line: &str) -> String {
    let (shown, cut) = shown_within(line, 400, false);
    if cut {
        format!("{shown}… ({} characters)", line.chars().count())
    } else {
        shown
    }
}

/// A name taken from the user's file (a key, a field path) as a message shows it: unquoted, at
/// most [`MAX_SHOWN`] characters as shown, invisible characters escaped.
pub fn clip_name(name: &str) -> String {
    let (shown, cut) = shown_within(name, MAX_SHOWN, false);
    if cut {
        format!("{shown}…")
    } else {
        shown
    }
}

/// `value` as shown (control and invisible characters escaped, and `"`/`\\` too when `quoted`);
/// if that is longer than `max` characters, its first `max - 20` and `true`.
fn shown_within(value: &str, max: usize, quoted: bool) -> (String, bool) {
    let mut out = String::new();
    let mut width = 0;
    let mut parts = Vec::new();
    for c in value.chars() {
        let part = match c {
            '"' if quoted => "\\\"".to_string(),
            '\\' if quoted => "\\\\".to_string(),
            c if c.is_control() || is_invisible(c) => c.escape_unicode().to_string(),
            c => c.to_string(),
        };
        width += part.chars().count();
        parts.push(part);
        if width > max {
            break;
        }
    }
    if width <= max {
        return (parts.concat(), false);
    }
    let mut used = 0;
    for p in parts {
        let w = p.chars().count();
        if used + w > max - 20 {
            break;
        }
        used += w;
        out.push_str(&p);
    }
    (out, true)
}

fn push_shown(out: &mut String, c: char) {
    if c.is_control() || is_invisible(c) {
        out.push_str(&c.escape_unicode().to_string());
    } else {
        out.push(c);
    }
}

/// Format characters that change how text around them is shown: bidirectional controls
/// (U+202A..U+202E, U+2066..U+2069), zero-width characters and the byte-order mark.
pub fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

/// serde's and the TOML parser's wording, in plain words (longest patterns first).
const PLAIN: [(&str, &str); 17] = [
    (
        "expected internally tagged enum Dist",
        "expected a distribution, one of { dist = \"constant\", value }, { dist = \"uniform\", min, max }, { dist = \"exponential\", mean }, { dist = \"lognormal\", median, sigma }",
    ),
    (
        "wanted exactly 1 element, more than 1 element",
        "expected one word in quotes (a table is not allowed here)",
    ),
    (
        "wanted exactly 1 element, found 0 elements",
        "expected one word in quotes (a table is not allowed here)",
    ),
    ("wanted string or table", "expected one word in quotes"),
    ("expected an array of length 2", "expected an array of two values [min, max]"),
    ("expected a sequence", "expected an array [...]"),
    ("expected a string", "expected a string in quotes"),
    ("expected a boolean", "expected true or false"),
    (
        "expected u64",
        "expected a whole number from 0 to 18446744073709551615",
    ),
    ("expected u32", "expected a whole number from 0 to 4294967295"),
    ("expected f64", "expected a number"),
    ("invalid type: sequence", "got an array"),
    ("invalid type: map", "got a table"),
    ("invalid type: ", "got "),
    ("invalid value: ", "got "),
    ("floating point", "the number"),
    ("unknown variant", "unknown value"),
];

/// A parser's message in plain words, every quoted value clipped to [`MAX_SHOWN`] characters.
pub fn plain(message: &str) -> String {
    let mut m = message.trim().to_string();
    for (from, to) in PLAIN {
        m = m.replace(from, to);
    }
    // "expected struct Outage" and the like: a table.
    if let Some(i) = m.find("expected struct ") {
        let end = m[i + 16..]
            .find(|c: char| !c.is_alphanumeric())
            .map_or(m.len(), |e| i + 16 + e);
        m.replace_range(i..end, "expected a table { ... }");
    }
    m = m.replace("missing field", "missing key");
    clip_quoted(&m)
}

/// Clips every `"..."` (Rust's debug quoting, with `\"` escapes) and `` `...` `` segment of a
/// message longer than [`MAX_SHOWN`] characters, and escapes invisible characters anywhere.
pub fn clip_quoted(message: &str) -> String {
    let chars: Vec<char> = message.chars().collect();
    let mut out = String::with_capacity(message.len().min(4096));
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '"' || c == '`' {
            // Find the closing quote (skipping `\"` escapes inside double quotes).
            let mut j = i + 1;
            while j < chars.len() && chars[j] != c {
                if c == '"' && chars[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            if j < chars.len() {
                let inner: String = chars[i + 1..j].iter().collect();
                let (shown, cut) = shown_within(&inner, MAX_SHOWN, false);
                out.push(c);
                out.push_str(&shown);
                if cut {
                    out.push_str(&format!("…{c} ({} characters)", j - i - 1));
                } else {
                    out.push(c);
                }
                i = j + 1;
                continue;
            }
        }
        push_shown(&mut out, c);
        i += 1;
    }
    out
}

/// Settings that are valid but probably not what the author meant: printed as `warning:` lines,
/// and turned into exit 2 by `--deny-warnings`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Warnings(pub Vec<String>);

impl Warnings {
    pub fn push(&mut self, w: String) {
        self.0.push(w);
    }
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_values_are_clipped_and_invisible_characters_escaped() {
        let long = "x".repeat(100_000);
        let c = clip(&long);
        assert!(c.chars().count() < MAX_SHOWN + 30, "{c}");
        assert!(c.contains("100000 characters"));
        assert_eq!(clip("evil\u{202e}"), "\"evil\\u{202e}\"");
        // Escapes count as what they print: 60 control characters are not 420 shown ones.
        let c = clip(&"\u{15}".repeat(60));
        assert!(c.chars().count() < MAX_SHOWN + 30, "{c}");
        let m = clip_quoted(&format!("field `a{}`", "\u{15}".repeat(60)));
        assert!(m.chars().count() < MAX_SHOWN + 40, "{m}");
        let m = plain(&format!("invalid type: string \"{long}\", expected u64"));
        assert!(m.len() < 250, "{m}");
        assert!(m.contains("whole number"), "{m}");
    }

    #[test]
    fn serde_internals_become_plain_words() {
        for jargon in [
            "invalid type: integer `5`, expected internally tagged enum Dist",
            "wanted exactly 1 element, more than 1 element",
            "invalid type: integer `5`, expected struct Outage",
            "unknown variant `gamma`, expected one of `constant`",
        ] {
            let m = plain(jargon);
            for word in [
                "internally tagged",
                "enum",
                "struct",
                "variant",
                "wanted exactly",
            ] {
                assert!(!m.contains(word), "{jargon} -> {m}");
            }
        }
    }
}
