//! Why a report could not be written or read back.
//!
//! Owns: `ReportError`, every failure of `report/`, carrying the file and what went wrong.
//! Does not: decide the exit code (the shell maps every error to 2).

use super::output_dir::OutputError;
use crate::shell::files::ReadError;

/// Why a report could not be written or read back. Each message is whole (an I/O error is part
/// of it, not a `source`), so it prints the same everywhere.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    #[error(transparent)]
    Read(#[from] ReadError),
    /// A file durasim writes that says something else (edited, truncated, another program's).
    #[error("{file}: {message}")]
    Malformed { file: String, message: String },
    #[error("cannot {action} {file}: {error}")]
    Io {
        action: &'static str,
        file: String,
        error: std::io::Error,
    },
    #[error("cannot draw {file}: {message}")]
    Draw { file: String, message: String },
    #[error(transparent)]
    Output(#[from] OutputError),
}

impl ReportError {
    /// An I/O failure while doing `action` (`write`, `create`, `read`) to `file`.
    pub fn io(
        action: &'static str,
        file: impl std::fmt::Display,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let file = file.to_string();
        move |error| ReportError::Io {
            action,
            file,
            error,
        }
    }

    pub fn malformed(file: impl std::fmt::Display, message: impl Into<String>) -> Self {
        ReportError::Malformed {
            file: file.to_string(),
            message: message.into(),
        }
    }
}
