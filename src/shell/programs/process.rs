//! An external program as a child process: its stdin and stdout carry the protocol's lines,
//! its stderr is kept for messages, and a crash is a SIGKILL.
//!
//! Owns: spawning the command (`sh -c 'exec CMD'`, so the child is the program itself), its
//! stdin as one end of a socket pair (a write to a dead program fails with an error, never a
//! SIGPIPE that would end durasim), a thread reading its stdout line by line and one keeping the
//! last lines of its stderr, the wall-clock limit on each answer, and every way a program can
//! fail the lockstep, each a message naming the command, the line and what was expected: not
//! JSON, a line too long, an exit, silence.
//! Does not: read a call's fields (`sim::program::protocol` does) or know virtual time.

use crate::sim::program::{Program, ProgramFault, Role, Sent};
use serde_json::Value;
use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The longest line a program may write.
pub const MAX_LINE: usize = 1 << 20;
/// The lines of its stderr a message quotes.
const STDERR_LINES: usize = 8;

enum Out {
    Line(String),
    TooLong,
    End,
}

pub struct ProcessProgram {
    command: String,
    role: Role,
    instance: u32,
    child: Child,
    stdin: Option<UnixStream>,
    lines: Receiver<Out>,
    stderr: Arc<Mutex<VecDeque<String>>>,
    read: u64,
    timeout: Duration,
    exited: bool,
}

impl ProcessProgram {
    pub fn spawn(
        command: &str,
        role: Role,
        instance: u32,
        timeout: Duration,
    ) -> Result<ProcessProgram, ProgramFault> {
        let (ours, theirs) = UnixStream::pair()
            .map_err(|e| ProgramFault(format!("cannot make a socket pair for `{command}`: {e}")))?;
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(format!("exec {command}"))
            .stdin(Stdio::from(OwnedFd::from(theirs)))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .env("DURASIM_ROLE", role.name())
            .env("DURASIM_INSTANCE", instance.to_string())
            .spawn()
            .map_err(|e| ProgramFault(format!("cannot start `{command}`: {e}")))?;
        let stdout = child.stdout.take().expect("piped");
        let stderr = child.stderr.take().expect("piped");
        let (tx, lines) = channel();
        std::thread::spawn(move || read_lines(stdout, tx));
        let tail = Arc::new(Mutex::new(VecDeque::new()));
        let keep = Arc::clone(&tail);
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(|l| l.ok()) {
                let mut t = keep.lock().unwrap_or_else(|p| p.into_inner());
                if t.len() == STDERR_LINES {
                    t.pop_front();
                }
                t.push_back(line);
            }
        });
        Ok(ProcessProgram {
            command: command.to_string(),
            role,
            instance,
            child,
            stdin: Some(ours),
            lines,
            stderr: tail,
            read: 0,
            timeout,
            exited: false,
        })
    }

    /// How the program ended (it has, or is killed now), and the last lines of its stderr.
    fn ended(&mut self) -> String {
        let status = match self.child.try_wait() {
            Ok(Some(s)) => Some(s),
            _ => {
                // Its stdout closed: it is exiting. Give it a moment, then make sure.
                std::thread::sleep(Duration::from_millis(50));
                match self.child.try_wait() {
                    Ok(Some(s)) => Some(s),
                    _ => None,
                }
            }
        };
        self.exited = true;
        let how = match status {
            Some(s) => format!("exited ({s})"),
            None => {
                let _ = self.child.kill();
                let _ = self.child.wait();
                "closed its stdout".to_string()
            }
        };
        // The stderr thread reads until the pipe closes; let it catch up.
        std::thread::sleep(Duration::from_millis(20));
        let tail = self.stderr.lock().unwrap_or_else(|p| p.into_inner());
        if tail.is_empty() {
            how
        } else {
            let lines: Vec<&str> = tail.iter().map(String::as_str).collect();
            format!("{how}; its stderr ends:\n    {}", lines.join("\n    "))
        }
    }

    fn fail(&mut self, what: String) -> ProgramFault {
        ProgramFault(what)
    }
}

fn read_lines(stdout: impl Read, tx: std::sync::mpsc::Sender<Out>) {
    let mut r = BufReader::new(stdout);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        // A read error ends the program's output as its end does.
        let n: usize = (&mut r)
            .take(MAX_LINE as u64 + 1)
            .read_until(b'\n', &mut buf)
            .unwrap_or_default();
        if n == 0 {
            let _ = tx.send(Out::End);
            return;
        }
        if buf.len() > MAX_LINE {
            let _ = tx.send(Out::TooLong);
            return;
        }
        let line = String::from_utf8_lossy(&buf).into_owned();
        if tx.send(Out::Line(line)).is_err() {
            return;
        }
    }
}

impl Program for ProcessProgram {
    fn deliver(&mut self, message: &Value) -> Result<Vec<Sent>, ProgramFault> {
        let mut text = message.to_string();
        text.push('\n');
        let written = match self.stdin.as_mut() {
            Some(s) => s.write_all(text.as_bytes()).and_then(|_| s.flush()),
            None => Err(std::io::Error::other("killed")),
        };
        if written.is_err() {
            let how = self.ended();
            return Err(self.fail(format!("cannot write to it: it {how}")));
        }
        let deadline = Instant::now() + self.timeout;
        let mut sent = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let out = match self.lines.recv_timeout(left) {
                Ok(out) => out,
                Err(RecvTimeoutError::Timeout) => {
                    self.kill();
                    let m = format!(
                        "said nothing for {} s after a message ({} lines since it, none of them idle); a program answers every message with its calls, then {{\"call\":\"idle\"}}",
                        self.timeout.as_secs_f64(),
                        sent.len()
                    );
                    return Err(self.fail(m));
                }
                Err(RecvTimeoutError::Disconnected) => Out::End,
            };
            let line = match out {
                Out::Line(l) => l,
                Out::TooLong => {
                    self.kill();
                    let m = format!("line {}: longer than {MAX_LINE} bytes", self.read + 1);
                    return Err(self.fail(m));
                }
                Out::End => {
                    let how = self.ended();
                    let m = format!("it {how} before saying idle (after line {})", self.read);
                    return Err(self.fail(m));
                }
            };
            self.read += 1;
            let value: Value = match serde_json::from_str(line.trim_end_matches(['\n', '\r'])) {
                Ok(v) => v,
                Err(e) => {
                    self.kill();
                    let m = format!(
                        "line {}: not JSON ({e}): {}",
                        self.read,
                        crate::base::messages::clip_line(line.trim_end())
                    );
                    return Err(self.fail(m));
                }
            };
            if value.get("call").and_then(Value::as_str) == Some("idle")
                && value.as_object().is_some_and(|o| o.len() == 1)
            {
                return Ok(sent);
            }
            sent.push(Sent {
                line: self.read,
                value,
            });
        }
    }

    fn kill(&mut self) {
        self.stdin = None;
        if !self.exited {
            let _ = self.child.kill();
            let _ = self.child.wait();
            self.exited = true;
        }
    }

    fn describe(&self) -> String {
        let _ = (self.role, self.instance);
        format!("`{}`, pid {}", self.command, self.child.id())
    }
}

impl Drop for ProcessProgram {
    fn drop(&mut self) {
        self.kill();
    }
}
