//! Output directories: written whole or not at all, and never over something durasim did not
//! write.
//!
//! Owns: the rules every command that writes a directory (`run`, `sweep`, `merge`, `chart`)
//! follows.
//! - Everything is written into a fresh temporary sibling (`.NAME.partial-PID-N`), which is
//!   renamed into place only when complete; on an error, a panic or SIGINT/SIGTERM/SIGHUP the
//!   sibling is removed (see [`remove_live_dirs`]), so a failed run never leaves a directory that
//!   looks like a good one. A sibling left by a process that is gone (the OOM killer and SIGKILL
//!   leave no chance to clean up) is removed by the next command that writes the same NAME.
//! - A committed directory carries [`MANIFEST`], listing every file durasim wrote into it.
//! - The target is replaced only if `manifest.rs` finds it absent, an empty directory, or a
//!   directory whose manifest is valid and lists every file in it; anything else is refused
//!   with a message that says how to proceed, and nothing is written or removed.
//!
//! Does not: decide what goes into the directory, print anything, or read a manifest and judge
//! a target by it (`manifest.rs`, re-exported here).

use super::manifest::{all_files, io, list_files, replaceable, WRITTEN_BY};
pub use super::manifest::{
    inspect, read_manifest, Existing, Kind, Manifest, OutputError, MANIFEST,
};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Temporary directories (and replaced directories on their way out) that must not outlive the
/// process; removed by [`remove_live_dirs`] when a signal ends it.
static LIVE: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

fn live() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    LIVE.lock().unwrap_or_else(|e| e.into_inner())
}

/// Removes every temporary directory this process is writing. Called by the signal handler
/// thread before the process dies; holds the lock, so a commit in progress finishes first.
pub fn remove_live_dirs() {
    let mut dirs = live();
    for d in dirs.drain(..) {
        remove_tree(&d);
    }
    // Keep the lock until the process ends: no new directory may be registered and written.
    std::mem::forget(dirs);
}

/// `remove_dir_all`, retried: a writer may still be adding a file while it runs. A temporary
/// file (of [`write_own_file`]) is removed as a file.
fn remove_tree(path: &Path) {
    if std::fs::symlink_metadata(path).is_ok_and(|m| !m.is_dir()) {
        let _ = std::fs::remove_file(path);
        return;
    }
    for _ in 0..5 {
        match std::fs::remove_dir_all(path) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => continue,
            _ => return,
        }
    }
}

/// A fresh sibling of `target`: `.NAME.TAG-PID-N`, created with `create_dir` (never an
/// existing directory, never someone else's).
fn fresh_sibling(target: &Path, tag: &str) -> Result<PathBuf, OutputError> {
    let (parent, name) = split(target)?;
    remove_stale_partials(&parent, &name);
    for n in 0..1000 {
        let p = parent.join(format!(".{name}.{tag}-{}-{n}", std::process::id()));
        match std::fs::create_dir(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io("cannot create", &p)(e)),
        }
    }
    Err(OutputError::Refused(format!(
        "cannot find a free temporary name next to {}",
        target.display()
    )))
}

/// Removes the temporary siblings of `parent/name` (`.NAME.partial-PID-N`, `.NAME.partial-PID`)
/// left by a process that is gone (killed by the OOM killer or SIGKILL, which no handler sees).
/// Only where `/proc` says which processes live; a sibling of a live process is never touched.
fn remove_stale_partials(parent: &Path, name: &str) {
    let proc = Path::new("/proc");
    if !proc.join("self").exists() {
        return;
    }
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    let prefix = format!(".{name}.partial-");
    let own = std::process::id().to_string();
    for entry in entries.flatten() {
        let file = entry.file_name();
        let Some(rest) = file.to_str().and_then(|f| f.strip_prefix(&prefix)) else {
            continue;
        };
        let (pid, n) = rest.split_once('-').unwrap_or((rest, "0"));
        let numeric = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if numeric(pid) && numeric(n) && pid != own && !proc.join(pid).exists() {
            remove_tree(&entry.path());
        }
    }
}

/// The parent directory (created if missing) and the last component of an output path.
fn split(target: &Path) -> Result<(PathBuf, String), OutputError> {
    use std::path::Component;
    let name = match target.components().next_back() {
        Some(Component::Normal(n)) => n.to_string_lossy().into_owned(),
        _ => {
            return Err(OutputError::Refused(format!(
                "{:?} does not name a directory (it ends in `.`, `..` or `/`): give a path such as reports/my-run",
                target.display().to_string()
            )))
        }
    };
    let parent = target
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
        .to_path_buf();
    Ok((parent, name))
}

/// A directory being written; renamed into place by [`OutputDir::commit`], removed on drop
/// otherwise.
pub struct OutputDir {
    final_path: PathBuf,
    temp_path: PathBuf,
    kind: Kind,
    /// Made by [`OutputDir::extend`]: the outputs nested in the target were carried over.
    extends: bool,
    committed: bool,
}

impl OutputDir {
    /// Checks that `final_path` may be written (absent, empty or durasim's own, see
    /// [`inspect`]), before any work is done, and creates the temporary sibling.
    pub fn create(final_path: &Path, kind: Kind) -> Result<OutputDir, OutputError> {
        replaceable(final_path, inspect(final_path)?)?;
        let (parent, _) = split(final_path)?;
        std::fs::create_dir_all(&parent).map_err(io("cannot create", &parent))?;
        let mut dirs = live();
        let temp_path = fresh_sibling(final_path, "partial")?;
        dirs.push(temp_path.clone());
        Ok(OutputDir {
            final_path: final_path.to_path_buf(),
            temp_path,
            kind,
            extends: false,
            committed: false,
        })
    }

    /// Like [`OutputDir::create`], starting from the files of the existing durasim directory
    /// `final_path` and of the outputs nested in it (hard links, so nothing is copied or
    /// changed), except those `replaced` accepts: `durasim chart DIR` adds its charts to a run's
    /// or a sweep's directory this way.
    pub fn extend(
        final_path: &Path,
        replaced: impl Fn(&str) -> bool,
    ) -> Result<OutputDir, OutputError> {
        let (manifest, nested) = match inspect(final_path)? {
            Existing::Own { manifest, nested } => (manifest, nested),
            _ => {
                return Err(OutputError::Refused(format!(
                    "{} is not a durasim output directory (it has no {MANIFEST})",
                    final_path.display()
                )))
            }
        };
        let mut dirs = live();
        let temp_path = fresh_sibling(final_path, "partial")?;
        dirs.push(temp_path.clone());
        drop(dirs);
        let out = OutputDir {
            final_path: final_path.to_path_buf(),
            temp_path,
            kind: manifest.kind,
            extends: true,
            committed: false,
        };
        let mut keep: Vec<String> = manifest
            .files
            .iter()
            .filter(|f| !replaced(f))
            .cloned()
            .collect();
        for n in &nested {
            keep.extend(
                all_files(&final_path.join(n))?
                    .into_iter()
                    .map(|f| format!("{n}/{f}")),
            );
        }
        for f in &keep {
            let from = final_path.join(f);
            let to = out.temp_path.join(f);
            if let Some(p) = to.parent() {
                std::fs::create_dir_all(p).map_err(io("cannot create", p))?;
            }
            if std::fs::hard_link(&from, &to).is_err() {
                std::fs::copy(&from, &to).map_err(io("cannot copy", &from))?;
            }
        }
        Ok(out)
    }

    pub fn path(&self) -> &Path {
        &self.temp_path
    }

    pub fn file(&self, name: &str) -> PathBuf {
        self.temp_path.join(name)
    }

    /// Writes the manifest and moves the directory into place, replacing the previous one only
    /// if it is still durasim's own (checked again: it may have changed while this one was
    /// written).
    pub fn commit(mut self) -> Result<PathBuf, OutputError> {
        let files: Vec<String> = list_files(&self.temp_path)?
            .0
            .into_iter()
            .filter(|f| f != MANIFEST)
            .collect();
        let digests = files
            .iter()
            .filter_map(|f| {
                super::manifest::file_digest(&self.temp_path.join(f)).map(|d| (f.clone(), d))
            })
            .collect();
        let manifest = Manifest {
            written_by: WRITTEN_BY.into(),
            kind: self.kind,
            files,
            digests,
        };
        let text = serde_json::to_string_pretty(&manifest).expect("a manifest serializes") + "\n";
        let mp = self.temp_path.join(MANIFEST);
        std::fs::write(&mp, text).map_err(io("cannot write", &mp))?;
        let mut dirs = live();
        let target = &self.final_path;
        // Extending keeps the nested outputs (their files are linked into the new directory).
        let existing = match inspect(target)? {
            Existing::Own { manifest, .. } if self.extends => Existing::Own {
                manifest,
                nested: Vec::new(),
            },
            e => replaceable(target, e)?,
        };
        match existing {
            Existing::Absent => {}
            Existing::Empty => std::fs::remove_dir(target).map_err(io("cannot replace", target))?,
            Existing::Own { .. } => {
                // Out of the way first (a rename cannot replace a non-empty directory), then
                // deleted once the new one is in place.
                let old = fresh_sibling(target, "old")?;
                std::fs::remove_dir(&old).map_err(io("cannot create", &old))?;
                std::fs::rename(target, &old).map_err(io("cannot move aside", target))?;
                dirs.push(old.clone());
                if let Err(e) = std::fs::rename(&self.temp_path, target) {
                    let _ = std::fs::rename(&old, target);
                    dirs.retain(|d| d != &old);
                    return Err(io("cannot move outputs into", target)(e));
                }
                remove_tree(&old);
                dirs.retain(|d| d != &old);
            }
        }
        if !target.exists() {
            std::fs::rename(&self.temp_path, target)
                .map_err(io("cannot move outputs into", target))?;
        }
        dirs.retain(|d| d != &self.temp_path);
        self.committed = true;
        Ok(self.final_path.clone())
    }
}

impl Drop for OutputDir {
    fn drop(&mut self) {
        if !self.committed {
            let mut dirs = live();
            remove_tree(&self.temp_path);
            dirs.retain(|d| d != &self.temp_path);
        }
    }
}

/// Checks that `path` may be written as a single file durasim owns (a JUnit report, a frozen
/// scenario): absent, or a regular file whose contents `is_ours` recognises. Commands check
/// before they start work, and [`write_own_file`] checks again.
pub fn check_own_file(
    path: &Path,
    what: &str,
    is_ours: impl Fn(&str) -> bool,
) -> Result<(), OutputError> {
    let (parent, name) = split(path)?;
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // Where the file can never be written (`/proc/x.xml`), say so before the work.
            if parent.is_dir() {
                let probe = parent.join(format!(".{name}.partial-{}", std::process::id()));
                std::fs::OpenOptions::new()
                    .write(true)
                    .create_new(true)
                    .open(&probe)
                    .map_err(io("cannot write", path))?;
                let _ = std::fs::remove_file(&probe);
            }
            Ok(())
        }
        Err(e) => Err(io("cannot inspect", path)(e)),
        Ok(m) => {
            let text = (m.is_file() && m.len() <= 64 << 20)
                .then(|| std::fs::read_to_string(path).ok())
                .flatten();
            let ours = text.as_deref().is_some_and(&is_ours);
            if ours && text.as_deref().is_some_and(digest_holds) {
                Ok(())
            } else if ours {
                Err(OutputError::Refused(format!(
                    "{} is a {what} durasim wrote, edited since (its contents no longer have the \
                     digest durasim wrote on its last line): replacing it would lose the edits; \
                     choose another file name, or move or remove it yourself",
                    path.display()
                )))
            } else {
                Err(OutputError::Refused(format!(
                    "{} exists and is not a {what} durasim wrote: durasim will not replace it; \
                     choose another file name, or move or remove it yourself",
                    path.display()
                )))
            }
        }
    }
}

/// What a file durasim owns ends with: a comment holding the blake3 digest of everything
/// before it (`# durasim-digest: HEX`, or `<!-- durasim-digest: HEX -->` in XML).
const DIGEST_MARK: &str = "durasim-digest: ";

/// `text` with its digest line appended (a comment in its own syntax).
pub(super) fn with_digest(text: &str) -> String {
    let mut out = text.to_string();
    if !out.ends_with('\n') {
        out.push('\n');
    }
    let hex = blake3::hash(out.as_bytes()).to_hex();
    let (open, close) = match text.starts_with('<') {
        true => ("<!-- ", " -->"),
        false => ("# ", ""),
    };
    out.push_str(&format!("{open}{DIGEST_MARK}{hex}{close}\n"));
    out
}

/// Whether `text` ends with the digest line of everything before it ([`with_digest`]).
fn digest_holds(text: &str) -> bool {
    let body = text.strip_suffix('\n').unwrap_or(text);
    let start = body.rfind('\n').map_or(0, |i| i + 1);
    let last = &body[start..];
    let Some(hex) = last.split(DIGEST_MARK).nth(1) else {
        return false;
    };
    let hex = hex.trim_end_matches(" -->").trim();
    blake3::hash(&text.as_bytes()[..start]).to_hex().as_str() == hex
}

/// Writes a single file durasim owns (see [`check_own_file`]) through a temporary sibling
/// renamed into place, ending with the digest of its contents: a later write replaces it only
/// while it still has that digest (an edited file is refused, naming it).
pub fn write_own_file(
    path: &Path,
    text: &str,
    what: &str,
    is_ours: impl Fn(&str) -> bool,
) -> Result<(), OutputError> {
    check_own_file(path, what, is_ours)?;
    let (parent, name) = split(path)?;
    std::fs::create_dir_all(&parent).map_err(io("cannot create", &parent))?;
    remove_stale_partials(&parent, &name);
    let temp = parent.join(format!(".{name}.partial-{}", std::process::id()));
    // Registered like a temporary directory: a signal while it is written removes it.
    live().push(temp.clone());
    let written = std::fs::write(&temp, with_digest(text))
        .map_err(io("cannot write", &temp))
        .and_then(|()| std::fs::rename(&temp, path).map_err(io("cannot write", path)));
    let mut dirs = live();
    if written.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    dirs.retain(|d| d != &temp);
    written
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("durasim-outdir-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn a_committed_directory_is_marked_and_can_be_replaced() {
        let d = tmp("own");
        let target = d.join("out");
        let o = OutputDir::create(&target, Kind::Run).unwrap();
        std::fs::create_dir(o.file("charts")).unwrap();
        std::fs::write(o.file("charts/a.png"), "x").unwrap();
        std::fs::write(o.file("summary.json"), "{}").unwrap();
        o.commit().unwrap();
        let m = read_manifest(&target).unwrap();
        assert_eq!(m.files, vec!["charts/a.png", "summary.json"]);
        assert_eq!(
            inspect(&target).unwrap(),
            Existing::Own {
                manifest: m,
                nested: Vec::new()
            }
        );
        let o = OutputDir::create(&target, Kind::Run).unwrap();
        std::fs::write(o.file("summary.json"), "{\"again\":1}").unwrap();
        o.commit().unwrap();
        assert!(!target.join("charts").exists());
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "no sibling left");
    }

    #[test]
    fn a_foreign_or_edited_directory_is_refused_and_untouched() {
        let d = tmp("foreign");
        let target = d.join("mine");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("thesis.tex"), "years of work").unwrap();
        let e = OutputDir::create(&target, Kind::Run).err().unwrap();
        assert!(matches!(e, OutputError::Refused(_)), "{e}");
        assert!(e.to_string().contains("choose another --out"), "{e}");
        // A fake or broken manifest is no mark.
        std::fs::write(target.join(MANIFEST), "{\"writtenBy\":\"me\"}").unwrap();
        assert!(OutputDir::create(&target, Kind::Run).is_err());
        std::fs::write(
            target.join(MANIFEST),
            "{\"writtenBy\":\"durasim\",\"kind\":\"run\",\"files\":[\"../x\"]}",
        )
        .unwrap();
        assert!(OutputDir::create(&target, Kind::Run).is_err());
        // A real manifest that does not list a file.
        std::fs::write(
            target.join(MANIFEST),
            "{\"writtenBy\":\"durasim\",\"kind\":\"run\",\"files\":[\"summary.json\"]}",
        )
        .unwrap();
        let e = OutputDir::create(&target, Kind::Run).err().unwrap();
        assert!(e.to_string().contains("thesis.tex"), "{e}");
        assert_eq!(
            std::fs::read_to_string(target.join("thesis.tex")).unwrap(),
            "years of work"
        );
        assert_eq!(std::fs::read_dir(&d).unwrap().count(), 1, "no sibling left");
    }

    #[test]
    fn paths_that_name_no_directory_are_refused() {
        for p in [".", "..", "a/..", "/"] {
            assert!(
                OutputDir::create(Path::new(p), Kind::Run).is_err(),
                "{p} accepted"
            );
        }
    }
}
