//! A throwaway PostgreSQL cluster: created in a temporary directory, listening only on a Unix
//! socket inside it, `fsync=off`, stopped and removed when dropped.
//!
//! Owns: finding PostgreSQL's programs, the cluster's life (initdb, pg_ctl start/stop), running
//! it as a non-root user when we are root (PostgreSQL refuses to run as root: `runuser -u
//! postgres`, the account Debian's package creates, or `durasim-pg`, created if needed), and
//! fresh databases for runs.
//! Does not: touch any cluster it did not create.

use anyhow::{anyhow, bail, Context, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

pub struct Server {
    dir: PathBuf,
    bin: PathBuf,
    user: Option<String>,
    databases: u32,
}

/// Where PostgreSQL's server programs are: `DURASIM_PG_BIN`, Debian's
/// `/usr/lib/postgresql/<version>/bin` (newest first), or the PATH.
pub fn find_bin() -> Option<PathBuf> {
    if let Ok(dir) = std::env::var("DURASIM_PG_BIN") {
        return Some(PathBuf::from(dir));
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| {
            let v: u32 = e.file_name().to_str()?.parse().ok()?;
            let bin = e.path().join("bin");
            bin.join("initdb").exists().then_some((v, bin))
        })
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    std::env::var_os("PATH").and_then(|p| {
        std::env::split_paths(&p).find(|d| d.join("initdb").exists() && d.join("pg_ctl").exists())
    })
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

fn user_exists(name: &str) -> bool {
    Command::new("id")
        .arg("-u")
        .arg(name)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The account the server runs as when we are root.
fn server_user() -> Result<String> {
    for name in ["postgres", "durasim-pg"] {
        if user_exists(name) {
            return Ok(name.to_string());
        }
    }
    let status = Command::new("useradd")
        .args([
            "--system",
            "--no-create-home",
            "--shell",
            "/usr/sbin/nologin",
            "durasim-pg",
        ])
        .status()
        .context("cannot run useradd to create the durasim-pg account")?;
    if !status.success() {
        bail!("useradd durasim-pg failed");
    }
    Ok("durasim-pg".to_string())
}

impl Server {
    /// Creates and starts a cluster. Takes about a second (initdb) plus a fraction for the start.
    pub fn start() -> Result<Server> {
        let bin = find_bin().ok_or_else(|| anyhow!("no PostgreSQL found (looked in $DURASIM_PG_BIN, /usr/lib/postgresql/*/bin and PATH); install it, e.g. `apt-get install postgresql`"))?;
        let user = if is_root() {
            Some(server_user()?)
        } else {
            None
        };
        let dir = tempdir()?;
        let server = Server {
            dir,
            bin,
            user,
            databases: 0,
        };
        if let Some(u) = &server.user {
            let status = Command::new("chown")
                .arg(format!("{u}:"))
                .arg(&server.dir)
                .status()?;
            if !status.success() {
                bail!("cannot give {} to {u}", server.dir.display());
            }
        }
        let data = server.dir.join("data");
        server.run(
            "initdb",
            &[
                "-D",
                path(&data),
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            ],
        )?;
        let opts = format!(
            "-c listen_addresses='' -c unix_socket_directories='{}' -c fsync=off -c synchronous_commit=off -c full_page_writes=off -c max_connections=60 -c shared_buffers=32MB",
            server.dir.display()
        );
        let log = server.dir.join("server.log");
        server.run(
            "pg_ctl",
            &[
                "-D",
                path(&data),
                "-l",
                path(&log),
                "-o",
                &opts,
                "-w",
                "-t",
                "30",
                "start",
            ],
        )?;
        Ok(server)
    }

    fn run(&self, program: &str, args: &[&str]) -> Result<()> {
        let exe = self.bin.join(program);
        let output = match &self.user {
            Some(u) => Command::new("runuser")
                .arg("-u")
                .arg(u)
                .arg("--")
                .arg(&exe)
                .args(args)
                .current_dir("/")
                .output(),
            None => Command::new(&exe).args(args).output(),
        }
        .with_context(|| format!("cannot run {}", exe.display()))?;
        if !output.status.success() {
            bail!(
                "{program} failed: {}{}",
                String::from_utf8_lossy(&output.stderr),
                String::from_utf8_lossy(&output.stdout)
            );
        }
        Ok(())
    }

    /// A libpq connection string for `database`.
    pub fn conninfo(&self, database: &str) -> String {
        format!(
            "host={} user=postgres dbname={database}",
            self.dir.display()
        )
    }

    /// A fresh, empty database for one run.
    pub fn new_database(&mut self) -> Result<String> {
        self.databases += 1;
        let name = format!("run{}", self.databases);
        let mut c = postgres::Client::connect(&self.conninfo("postgres"), postgres::NoTls)?;
        c.batch_execute(&format!("CREATE DATABASE {name}"))?;
        Ok(self.conninfo(&name))
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let data = self.dir.join("data");
        let _ = self.run(
            "pg_ctl",
            &["-D", path(&data), "-m", "immediate", "-w", "stop"],
        );
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn path(p: &Path) -> &str {
    p.to_str().expect("temporary paths are UTF-8")
}

/// A new private directory under the system's temporary directory.
fn tempdir() -> Result<PathBuf> {
    let base = std::env::temp_dir();
    for n in 0..1000u32 {
        let dir = base.join(format!("durasim-pg-{}-{n}", std::process::id()));
        match std::fs::create_dir(&dir) {
            Ok(()) => {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o700))?;
                return Ok(dir);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e).context("cannot create a temporary directory"),
        }
    }
    bail!(
        "cannot create a temporary directory under {}",
        base.display()
    )
}
