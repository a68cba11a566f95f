//! Reading a file a user (or an earlier durasim command) hands over, with caps.
//!
//! Owns: opening only regular files (`/dev/zero`, a FIFO or a directory is refused before
//! anything is read), opening a history for the core's reader (`open_history`), reading a whole file no larger than a cap, reading a line no longer than
//! [`MAX_LINE_BYTES`], and the errors that name the file, the line and what is allowed.
//! Does not: decide the caps (`limits.rs` does) or what a file means (the shell and `report/`
//! parse what they read). A shell module: the simulator's core never touches the file system.

use crate::base::limits::MAX_LINE_BYTES;
use std::io::{BufRead, Read};
use std::path::Path;

/// Why a file could not be read; each names the file and, for a line, its number. The message
/// is whole (an I/O error is part of it, not a `source`), so it prints the same everywhere.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("{path}: cannot read {what}: {error}")]
    Io {
        path: String,
        what: String,
        error: std::io::Error,
    },
    #[error(
        "{path}: not a regular file (a {what} is read only from a regular file, not a \
         directory, a device or a pipe)"
    )]
    NotRegularWhole { path: String, what: String },
    #[error("{path}: not a regular file (a {what} is read only from a regular file)")]
    NotRegular { path: String, what: String },
    #[error("{path}: {bytes} bytes, larger than any {what} durasim reads (at most {} MiB)", max >> 20)]
    TooLarge {
        path: String,
        what: String,
        bytes: u64,
        max: u64,
    },
    #[error("{path}: {what} is not UTF-8 text (invalid byte at offset {offset})")]
    NotUtf8 {
        path: String,
        what: String,
        offset: usize,
    },
    #[error("{path}:{line}: cannot read: {error}")]
    LineIo {
        path: String,
        line: usize,
        error: std::io::Error,
    },
    #[error("{path}:{line}: line longer than {MAX_LINE_BYTES} bytes: not a file durasim wrote")]
    LineTooLong { path: String, line: usize },
    #[error("{path}:{line}: not UTF-8 text")]
    LineNotUtf8 { path: String, line: usize },
}

fn io(path: &Path, what: &str) -> impl FnOnce(std::io::Error) -> ReadError {
    let (path, what) = (path.display().to_string(), what.to_string());
    move |error| ReadError::Io { path, what, error }
}

/// A user's file, read whole with a cap: refused (with a message naming it) unless it is a
/// regular file of at most `max` bytes. Symbolic links are followed to what they name.
pub fn read_capped(path: &Path, max: u64, what: &str) -> Result<String, ReadError> {
    let shown = path.display().to_string();
    let meta = std::fs::metadata(path).map_err(io(path, what))?;
    if !meta.is_file() {
        return Err(ReadError::NotRegularWhole {
            path: shown,
            what: what.into(),
        });
    }
    let too_large = |bytes: u64| ReadError::TooLarge {
        path: path.display().to_string(),
        what: what.into(),
        bytes,
        max,
    };
    if meta.len() > max {
        return Err(too_large(meta.len()));
    }
    let file = std::fs::File::open(path).map_err(io(path, what))?;
    let mut bytes = Vec::with_capacity(meta.len() as usize);
    // The size may have changed since: never read more than the cap.
    file.take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(io(path, what))?;
    if bytes.len() as u64 > max {
        return Err(too_large(bytes.len() as u64));
    }
    String::from_utf8(bytes).map_err(|e| ReadError::NotUtf8 {
        path: shown,
        what: what.into(),
        offset: e.utf8_error().valid_up_to(),
    })
}

/// Opens a user's file to read it line by line: a regular file only, any size.
pub fn open_regular(path: &Path, what: &str) -> Result<std::fs::File, ReadError> {
    let meta = std::fs::metadata(path).map_err(io(path, what))?;
    if !meta.is_file() {
        return Err(ReadError::NotRegular {
            path: path.display().to_string(),
            what: what.into(),
        });
    }
    std::fs::File::open(path).map_err(io(path, what))
}

/// Reads the next line (without its `\n`) into `line`, refusing one longer than
/// [`MAX_LINE_BYTES`]. `Ok(false)` at the end of the input.
pub fn read_line_capped(
    reader: &mut impl BufRead,
    line: &mut String,
    path: &Path,
    number: usize,
) -> Result<bool, ReadError> {
    line.clear();
    let mut bytes = Vec::new();
    let n = Read::take(reader, MAX_LINE_BYTES + 1)
        .read_until(b'\n', &mut bytes)
        .map_err(|error| ReadError::LineIo {
            path: path.display().to_string(),
            line: number,
            error,
        })?;
    if n == 0 {
        return Ok(false);
    }
    if bytes.last() == Some(&b'\n') {
        bytes.pop();
    } else if n as u64 > MAX_LINE_BYTES {
        return Err(ReadError::LineTooLong {
            path: path.display().to_string(),
            line: number,
        });
    }
    *line = String::from_utf8(bytes).map_err(|_| ReadError::LineNotUtf8 {
        path: path.display().to_string(),
        line: number,
    })?;
    Ok(true)
}

/// Opens the history file `durasim verify` and `durasim conform` judge: it must be a regular
/// file (a symbolic link to one is followed) no larger than `limits.max_file_bytes`. The reader
/// (`history::reader`, core) then reads it line by line from the buffered file.
pub fn open_history(
    path: &Path,
    limits: crate::history::reader::Limits,
) -> Result<
    crate::history::reader::HistoryReader<std::io::BufReader<std::fs::File>>,
    crate::history::reader::HistoryError,
> {
    use crate::history::reader::{HistoryError, HistoryReader};
    let file = path.display().to_string();
    let err = |message: String| HistoryError {
        file: file.clone(),
        line: None,
        field: None,
        message,
    };
    let meta = std::fs::metadata(path).map_err(|e| err(format!("cannot read: {e}")))?;
    if !meta.is_file() {
        return Err(err(
            "not a regular file (a history is read from a regular file only, not a directory, a pipe or a device)".into(),
        ));
    }
    if meta.len() > limits.max_file_bytes {
        return Err(err(format!(
            "{} bytes; a history may have at most {} bytes",
            meta.len(),
            limits.max_file_bytes
        )));
    }
    let f = std::fs::File::open(path).map_err(|e| err(format!("cannot read: {e}")))?;
    Ok(HistoryReader::from_reader(
        &file,
        std::io::BufReader::with_capacity(1 << 16, f),
        limits,
    ))
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_history_is_opened_from_a_regular_file_only() {
        let limits = crate::history::reader::Limits::default();
        let e = super::open_history(&std::env::temp_dir(), limits)
            .err()
            .unwrap();
        assert!(e.message.contains("not a regular file"), "{e}");
    }

    use super::*;

    #[test]
    fn only_regular_files_of_bounded_size_are_read() {
        assert!(read_capped(Path::new("/dev/zero"), 10, "scenario file")
            .unwrap_err()
            .to_string()
            .contains("not a regular file"));
        assert!(read_capped(Path::new("/"), 10, "scenario file").is_err());
        let p = std::env::temp_dir().join(format!("durasim-files-{}", std::process::id()));
        std::fs::write(&p, "0123456789abc").unwrap();
        assert_eq!(
            read_capped(&p, 10, "scenario file")
                .unwrap_err()
                .to_string(),
            format!(
                "{}: 13 bytes, larger than any scenario file durasim reads (at most 0 MiB)",
                p.display()
            )
        );
        assert_eq!(read_capped(&p, 20, "x").unwrap(), "0123456789abc");
        let _ = std::fs::remove_file(p);
    }
}
