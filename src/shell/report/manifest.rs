//! The manifest: the mark durasim leaves in every directory it writes, and what a target path is
//! by it.
//!
//! Owns: [`MANIFEST`] and its contents ([`Manifest`]: who wrote the directory, its [`Kind`], every
//! file written), reading one back and refusing a fake or broken one, and the inspection of a
//! target ([`inspect`]: absent, empty, or durasim's own and unchanged, with the durasim outputs
//! nested in it; anything else — a user's directory, a durasim directory someone added a file
//! to, a symbolic link, a plain file — is refused with a message that says how to proceed), and
//! [`OutputError`], why a target may not be replaced or the I/O error that stopped the check.
//! Does not: write or remove anything (`output_dir.rs` does, after asking this file).

use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// The mark durasim leaves in every directory it writes.
pub const MANIFEST: &str = "durasim-manifest.json";
/// The manifest's `writtenBy` value.
pub(super) const WRITTEN_BY: &str = "durasim";
/// A directory with more entries than this is not one durasim wrote (a sweep writes at most a
/// few dozen files; a run with charts about twenty).
const MAX_ENTRIES: usize = 10_000;
/// A manifest is a few kilobytes; anything larger is not one.
const MAX_MANIFEST_BYTES: u64 = 1 << 20;

/// What kind of output a directory holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `durasim run` (and `durasim chart` on a run, which adds to it).
    Run,
    /// `durasim sweep` and `durasim merge`.
    Sweep,
    /// `durasim chart DIR --out OUT`: charts and a report only.
    Chart,
}

/// The manifest file's contents.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Manifest {
    pub written_by: String,
    pub kind: Kind,
    /// Every file durasim wrote, relative to the directory, `/`-separated, sorted; the manifest
    /// itself excluded. Sub-directories are implied by their files.
    pub files: Vec<String>,
    /// Each file's blake3 digest as durasim wrote it (hex): a file whose contents differ was
    /// edited, and the directory is not replaced. Absent in manifests of older versions.
    #[serde(default, skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub digests: std::collections::BTreeMap<String, String>,
}

/// The blake3 digest (hex) of the regular file `path`, read as a stream; `None` if it is not a
/// regular file or cannot be read.
pub fn file_digest(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut file = std::fs::File::open(path).ok()?;
    let mut hasher = blake3::Hasher::new();
    std::io::copy(&mut file, &mut hasher).ok()?;
    Some(hasher.finalize().to_hex().to_string())
}

/// The files of `manifest` in `dir` whose contents are no longer what durasim wrote.
pub fn edited_files(dir: &Path, manifest: &Manifest) -> Vec<String> {
    manifest
        .digests
        .iter()
        .filter(|(f, digest)| {
            let p = dir.join(f);
            std::fs::symlink_metadata(&p).is_ok() && file_digest(&p).as_ref() != Some(*digest)
        })
        .map(|(f, _)| f.clone())
        .collect()
}

/// Why a directory may not be replaced, or the I/O error that stopped the check.
#[derive(Debug, thiserror::Error)]
pub enum OutputError {
    /// The target exists and is not durasim's to replace: bad input, exit 2.
    #[error("{0}")]
    Refused(String),
    #[error("{what} {path}: {source}")]
    Io {
        what: &'static str,
        path: PathBuf,
        source: std::io::Error,
    },
}

pub(super) fn io<'a>(
    what: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> OutputError + 'a {
    move |source| OutputError::Io {
        what,
        path: path.to_path_buf(),
        source,
    }
}

/// What is at a target path now.
#[derive(Debug, PartialEq, Eq)]
pub enum Existing {
    Absent,
    Empty,
    /// A directory durasim wrote, unchanged since: every file it holds is in its manifest, or
    /// inside `nested`, sub-directories that are durasim outputs of their own (a sweep per bug
    /// switch inside a sweep's directory, as `durasim chart` reads them).
    Own {
        manifest: Manifest,
        nested: Vec<String>,
    },
}

pub(super) const HOW: &str = "choose another --out, or move or remove it yourself";

/// Decides whether `path` may be replaced by a new output directory.
pub fn inspect(path: &Path) -> Result<Existing, OutputError> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Existing::Absent),
        Err(e) => return Err(io("cannot inspect", path)(e)),
    };
    let shown = path.display();
    if meta.file_type().is_symlink() {
        return Err(OutputError::Refused(format!(
            "{shown} is a symbolic link: durasim writes only into a real directory it creates; {HOW}"
        )));
    }
    if !meta.is_dir() {
        return Err(OutputError::Refused(format!(
            "{shown} exists and is not a directory: durasim will not replace it; {HOW}"
        )));
    }
    let (files, nested) = list_files(path)?;
    if files.is_empty() && nested.is_empty() {
        return Ok(Existing::Empty);
    }
    let manifest = match read_manifest(path) {
        Some(m) => m,
        None => {
            return Err(OutputError::Refused(format!(
                "{shown} is not empty and durasim did not write it (it has no valid {MANIFEST}): \
                 durasim replaces only directories it wrote itself; {HOW}"
            )))
        }
    };
    let foreign: Vec<&String> = files
        .iter()
        .filter(|f| f.as_str() != MANIFEST && manifest.files.binary_search(f).is_err())
        .collect();
    if !foreign.is_empty() {
        let shown_files: Vec<String> = foreign
            .iter()
            .take(3)
            .map(|f| crate::scenario::clip(f))
            .collect();
        let more = if foreign.len() > 3 {
            format!(" and {} more", foreign.len() - 3)
        } else {
            String::new()
        };
        return Err(OutputError::Refused(format!(
            "{shown} was written by durasim but now also holds files it did not write ({}{more}): \
             replacing it would delete them; {HOW}",
            shown_files.join(", ")
        )));
    }
    let edited = edited_files(path, &manifest);
    if !edited.is_empty() {
        let shown_files: Vec<String> = edited
            .iter()
            .take(3)
            .map(|f| crate::scenario::clip(f))
            .collect();
        let more = if edited.len() > 3 {
            format!(" and {} more", edited.len() - 3)
        } else {
            String::new()
        };
        return Err(OutputError::Refused(format!(
            "{shown} was written by durasim but its files were edited since ({}{more}): \
             replacing it would lose the edits; {HOW}",
            shown_files.join(", ")
        )));
    }
    Ok(Existing::Own { manifest, nested })
}

/// Refuses a durasim directory that holds other durasim outputs: replacing it would delete them.
pub(super) fn replaceable(path: &Path, existing: Existing) -> Result<Existing, OutputError> {
    match &existing {
        Existing::Own { nested, .. } if !nested.is_empty() => {
            let shown: Vec<String> = nested
                .iter()
                .take(3)
                .map(|n| crate::scenario::clip(n))
                .collect();
            Err(OutputError::Refused(format!(
                "{} holds other durasim outputs ({}{}): replacing it would delete them; {HOW}",
                path.display(),
                shown.join(", "),
                if nested.len() > 3 {
                    format!(" and {} more", nested.len() - 3)
                } else {
                    String::new()
                }
            )))
        }
        _ => Ok(existing),
    }
}

/// The manifest of `dir`, if it has a valid one.
pub fn read_manifest(dir: &Path) -> Option<Manifest> {
    let p = dir.join(MANIFEST);
    let meta = std::fs::symlink_metadata(&p).ok()?;
    if !meta.is_file() || meta.len() > MAX_MANIFEST_BYTES {
        return None;
    }
    let m: Manifest = serde_json::from_str(&std::fs::read_to_string(&p).ok()?).ok()?;
    let sorted = m.files.windows(2).all(|w| w[0] < w[1]);
    let safe = m.files.iter().all(|f| {
        !f.is_empty()
            && !f.starts_with('/')
            && f.split('/').all(|c| !c.is_empty() && c != "." && c != "..")
    });
    (m.written_by == WRITTEN_BY && sorted && safe).then_some(m)
}

/// Every file under `dir` (symbolic links and other non-directories count as files), relative,
/// `/`-separated, sorted, and apart from them the sub-directories that are durasim outputs of
/// their own (not descended into). Refuses a tree larger than [`MAX_ENTRIES`].
pub(super) fn list_files(dir: &Path) -> Result<(Vec<String>, Vec<String>), OutputError> {
    let mut out = Vec::new();
    let mut nested = Vec::new();
    let mut stack = vec![(dir.to_path_buf(), String::new())];
    let mut seen = 0usize;
    while let Some((abs, rel)) = stack.pop() {
        for entry in std::fs::read_dir(&abs).map_err(io("cannot read", &abs))? {
            let entry = entry.map_err(io("cannot read", &abs))?;
            seen += 1;
            if seen > MAX_ENTRIES {
                return Err(OutputError::Refused(format!(
                    "{} holds more than {MAX_ENTRIES} entries: not a directory durasim wrote; {HOW}",
                    dir.display()
                )));
            }
            let name = entry.file_name().to_string_lossy().into_owned();
            let rel_name = if rel.is_empty() {
                name
            } else {
                format!("{rel}/{name}")
            };
            let ft = entry.file_type().map_err(io("cannot read", &abs))?;
            if !ft.is_dir() {
                out.push(rel_name);
            } else if entry.path().join(MANIFEST).exists()
                && matches!(inspect(&entry.path()), Ok(Existing::Own { .. }))
            {
                nested.push(rel_name);
            } else {
                stack.push((entry.path(), rel_name));
            }
        }
    }
    out.sort();
    nested.sort();
    Ok((out, nested))
}

/// Every file under `dir`, nested outputs included.
pub(super) fn all_files(dir: &Path) -> Result<Vec<String>, OutputError> {
    let (mut files, nested) = list_files(dir)?;
    for n in nested {
        files.extend(
            all_files(&dir.join(&n))?
                .into_iter()
                .map(|f| format!("{n}/{f}")),
        );
    }
    Ok(files)
}
