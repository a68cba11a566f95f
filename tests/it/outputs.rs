//! durasim never harms what the user owns: it replaces only directories it wrote itself, never
//! writes outside the output directory it was given or chose, and leaves no half-written
//! directory when it fails, is interrupted, or its reader goes away.
//!
//! Each test is one of the cases of issue 10's "What was seen", named after what it protects.

use crate::support::{bin, durasim_in, root, temp_dir, text};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// A fresh working directory with the bundled scenarios linked in, so default outputs
/// (`reports/...`) land here and never in the checkout.
fn sandbox(name: &str) -> PathBuf {
    crate::support::sandbox(temp_dir!(name))
}

/// Every file under `dir` with its contents, sorted: a snapshot to compare before and after.
fn snapshot(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else if e.file_type().unwrap().is_file() {
                let rel = p.strip_prefix(dir).unwrap().display().to_string();
                out.push((rel, std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// Hidden temporary siblings (`.NAME.partial-*`, `.NAME.old-*`) left anywhere under `dir`.
fn leftovers(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let e = e.unwrap();
            let name = e.file_name().to_string_lossy().into_owned();
            if name.contains(".partial-") || name.contains(".old-") {
                out.push(e.path().display().to_string());
            }
            if e.file_type().unwrap().is_dir() && name != "scenarios" {
                stack.push(e.path());
            }
        }
    }
    out
}

/// A user's directory: some files and a sub-directory.
fn users_project(dir: &Path) -> Vec<(String, Vec<u8>)> {
    std::fs::create_dir_all(dir.join("src")).unwrap();
    std::fs::write(dir.join("thesis.tex"), "years of work").unwrap();
    std::fs::write(dir.join("src/main.rs"), "fn main() {}").unwrap();
    snapshot(dir)
}

const INCIDENT: &str = "scenarios/incident-crash-before-ack.toml";

#[test]
fn run_out_never_empties_a_directory_durasim_did_not_write() {
    let sb = sandbox("run-out");
    let project = sb.join("project");
    let before = users_project(&project);
    let o = durasim_in(&sb, &["run", INCIDENT, "--out", project.to_str().unwrap()]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("durasim did not write it"), "{t}");
    assert!(
        t.contains("choose another --out") && t.contains("remove it yourself"),
        "says how to proceed: {t}"
    );
    assert_eq!(snapshot(&project), before, "the user's files are untouched");
    assert!(leftovers(&sb).is_empty(), "{:?}", leftovers(&sb));
    // The same for every command that writes a directory.
    let sweep_dir = sb.join("sweep-out");
    std::fs::create_dir_all(&sweep_dir).unwrap();
    std::fs::write(sweep_dir.join("notes.md"), "mine").unwrap();
    let o = durasim_in(
        &sb,
        &[
            "sweep",
            "scenarios/chaos.toml",
            "--seeds",
            "0..4",
            "--out",
            project.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // A run to chart from, then chart --out into the user's directory.
    let run = sb.join("run");
    let o = durasim_in(&sb, &["run", INCIDENT, "--out", run.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let o = durasim_in(
        &sb,
        &[
            "chart",
            run.to_str().unwrap(),
            "--out",
            project.to_str().unwrap(),
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // `chart DIR` in place on a directory durasim did not write.
    std::fs::write(project.join("summary.json"), "{}").unwrap();
    let before = snapshot(&project);
    let o = durasim_in(&sb, &["chart", project.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("--out NEWDIR"), "{}", text(&o));
    assert_eq!(snapshot(&project), before);
    assert!(leftovers(&sb).is_empty(), "{:?}", leftovers(&sb));
}

#[test]
fn run_out_replaces_its_own_output_but_not_one_a_user_added_files_to() {
    let sb = sandbox("own");
    let out = sb.join("out");
    let o = durasim_in(&sb, &["run", INCIDENT, "--out", "out", "--trace"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    let manifest = std::fs::read_to_string(out.join("durasim-manifest.json")).unwrap();
    assert!(manifest.contains("\"trace.jsonl\""), "{manifest}");
    // Its own directory is replaced whole: trace.jsonl goes with the old run.
    let o = durasim_in(&sb, &["run", INCIDENT, "--out", "out"]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    assert!(!out.join("trace.jsonl").exists());
    // A file the user put in it makes it theirs.
    std::fs::write(out.join("analysis.ipynb"), "{}").unwrap();
    let before = snapshot(&out);
    let o = durasim_in(&sb, &["run", INCIDENT, "--out", "out"]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(t.contains("analysis.ipynb"), "names the file: {t}");
    assert_eq!(snapshot(&out), before);
    // An edited manifest is no licence either.
    std::fs::remove_file(out.join("analysis.ipynb")).unwrap();
    std::fs::write(
        out.join("durasim-manifest.json"),
        "{\"writtenBy\": \"durasim\"}",
    )
    .unwrap();
    let o = durasim_in(&sb, &["run", INCIDENT, "--out", "out"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    // Nor a plain file or a symbolic link in the directory's place.
    let o = durasim_in(&sb, &["run", INCIDENT, "--out", "scenarios/chaos.toml"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    std::os::unix::fs::symlink(&out, sb.join("link")).unwrap();
    let o = durasim_in(&sb, &["run", INCIDENT, "--out", "link"]);
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("symbolic link"), "{}", text(&o));
    assert!(leftovers(&sb).is_empty(), "{:?}", leftovers(&sb));
}

/// `name = "/some/abs/dir"` used to replace that directory, `"../../escape"` wrote outside
/// `reports/`, `"."` emptied `reports/`.
#[test]
fn a_scenario_name_can_never_steer_the_default_output_out_of_reports() {
    let sb = sandbox("names");
    let victim = sb.join("victim");
    let before = users_project(&victim);
    std::fs::create_dir_all(sb.join("reports/kept")).unwrap();
    std::fs::write(sb.join("reports/kept/notes.md"), "mine").unwrap();
    let body = std::fs::read_to_string(root().join(INCIDENT)).unwrap();
    let names = [
        victim.display().to_string(),
        "../../escape".to_string(),
        "../victim".to_string(),
        ".".to_string(),
        "..".to_string(),
        "a/b".to_string(),
        "".to_string(),
        " ".to_string(),
        "x".repeat(65),
        "Upper".to_string(),
        "evil\u{202e}gnp.exe".to_string(),
    ];
    for (i, name) in names.iter().enumerate() {
        let renamed = body.replacen(
            "name = \"incident-crash-before-ack\"",
            &format!("name = {}", toml_string(name)),
            1,
        );
        assert_ne!(renamed, body);
        let file = sb.join(format!("s{i}.toml"));
        std::fs::write(&file, renamed).unwrap();
        for cmd in [
            vec!["run", file.to_str().unwrap()],
            vec!["sweep", file.to_str().unwrap(), "--seeds", "0..2"],
            vec!["check", file.to_str().unwrap()],
        ] {
            let o = durasim_in(&sb, &cmd);
            let t = text(&o);
            assert_eq!(o.status.code(), Some(2), "{name:?} {cmd:?}: {t}");
            assert!(t.contains("field `name`"), "{name:?}: {t}");
            assert!(t.contains("a-z, 0-9"), "says what is allowed: {t}");
            assert!(!t.contains('\u{202e}'), "no raw bidi override echoed: {t}");
        }
    }
    assert_eq!(snapshot(&victim), before);
    assert!(!sb.join("escape").exists() && !sb.parent().unwrap().join("escape").exists());
    let reports: Vec<_> = std::fs::read_dir(sb.join("reports"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(reports, vec![std::ffi::OsString::from("kept")]);
    assert!(leftovers(&sb).is_empty(), "{:?}", leftovers(&sb));
}

fn toml_string(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            c if c.is_control() => o.push_str(&format!("\\u{:04X}", c as u32)),
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[test]
fn junit_and_freeze_files_replace_only_files_durasim_wrote() {
    let sb = sandbox("files");
    std::fs::write(sb.join("report.xml"), "<my-own-xml/>").unwrap();
    std::fs::write(sb.join("frozen.toml"), "name = \"mine\"\n").unwrap();
    let o = durasim_in(
        &sb,
        &[
            "sweep",
            "scenarios/chaos.toml",
            "--seeds",
            "0..4",
            "--quiet",
            "--out",
            "s",
            "--junit",
            "report.xml",
        ],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert!(text(&o).contains("report.xml exists"), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(sb.join("report.xml")).unwrap(),
        "<my-own-xml/>"
    );
    assert!(!sb.join("s").exists(), "refused before the sweep ran");
    let o = durasim_in(
        &sb,
        &["run", INCIDENT, "--out", "r", "--freeze", "frozen.toml"],
    );
    assert_eq!(o.status.code(), Some(2), "{}", text(&o));
    assert_eq!(
        std::fs::read_to_string(sb.join("frozen.toml")).unwrap(),
        "name = \"mine\"\n"
    );
    assert!(!sb.join("r").exists(), "a failed run leaves no directory");
    // Their own files are replaced.
    for _ in 0..2 {
        let o = durasim_in(
            &sb,
            &[
                "sweep",
                "scenarios/chaos.toml",
                "--seeds",
                "0..4",
                "--quiet",
                "--out",
                "s",
                "--junit",
                "own.xml",
            ],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
        let o = durasim_in(
            &sb,
            &["run", INCIDENT, "--out", "r", "--freeze", "own.toml"],
        );
        assert_eq!(o.status.code(), Some(0), "{}", text(&o));
    }
    assert!(leftovers(&sb).is_empty(), "{:?}", leftovers(&sb));
}

/// `sweep ... | head -1` was killed by SIGPIPE and left `seeds.jsonl` and `shrunk/` without
/// `sweep.json`.
#[test]
fn a_reader_that_goes_away_leaves_a_complete_directory_or_none() {
    let sb = sandbox("sigpipe");
    let bin = bin();
    for cmd in [
        format!(
            "{bin} sweep scenarios/chaos.toml --seeds 0..40 --bug no_fencing --out s | head -1"
        ),
        format!("{bin} run {INCIDENT} --out r --freeze f.toml | head -1"),
        format!("{bin} run {INCIDENT} --out r2 | head -c 1"),
    ] {
        let o = Command::new("sh")
            .arg("-c")
            .arg(&cmd)
            .current_dir(&sb)
            .output()
            .unwrap();
        assert!(
            !String::from_utf8_lossy(&o.stderr).contains("panicked"),
            "{cmd}: {}",
            text(&o)
        );
    }
    for (dir, needs) in [
        ("s", "sweep.json"),
        ("r", "summary.json"),
        ("r2", "summary.json"),
    ] {
        let d = sb.join(dir);
        assert!(d.join(needs).exists(), "{dir}: incomplete");
        assert!(d.join("durasim-manifest.json").exists(), "{dir}: unmarked");
    }
    assert!(sb.join("s/shrunk").exists());
    assert!(leftovers(&sb).is_empty(), "{:?}", leftovers(&sb));
}

/// Ctrl-C (and `kill`) during a run or a sweep: the process dies by the signal and leaves no
/// temporary directory and no output directory.
#[test]
fn an_interrupted_run_or_sweep_leaves_nothing_behind() {
    let sb = sandbox("signals");
    for (signal, args) in [
        (
            libc::SIGINT,
            vec![
                "run",
                "scenarios/bench-pipeline.toml",
                "--jobs",
                "5000000",
                "--no-rows",
                "--out",
                "big",
            ],
        ),
        (
            libc::SIGTERM,
            vec![
                "run",
                "scenarios/bench-pipeline.toml",
                "--jobs",
                "5000000",
                "--out",
                "big",
            ],
        ),
        (
            libc::SIGINT,
            vec![
                "sweep",
                "scenarios/chaos.toml",
                "--seeds",
                "0..1000000",
                "--out",
                "big",
            ],
        ),
    ] {
        let mut child = Command::new(bin())
            .args(&args)
            .current_dir(&sb)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // A run makes its temporary directory before it starts; a sweep at its end.
        let started = std::time::Instant::now();
        while args[0] == "run" && leftovers(&sb).is_empty() && started.elapsed().as_secs() < 20 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        // SAFETY: sending a signal to our own child process.
        assert_eq!(unsafe { libc::kill(child.id() as i32, signal) }, 0);
        let status = child.wait().unwrap();
        assert_eq!(status.signal(), Some(signal), "{args:?}: {status:?}");
        assert!(leftovers(&sb).is_empty(), "{args:?}: {:?}", leftovers(&sb));
        assert!(!sb.join("big").exists(), "{args:?}");
    }
}
