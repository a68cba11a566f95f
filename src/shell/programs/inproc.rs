//! durasim's own program for a role, on a thread of its own, talking the protocol over
//! channels instead of pipes: the same lockstep, no process.
//!
//! Owns: the thread (it runs `client::reference::run`), the two channels, and their kill
//! (dropping the channel to the thread: its next wait returns "gone" and it ends).
//! Does not: decide anything of the role (the reference program does).

use crate::shell::client::{reference, Client, Transport};
use crate::sim::program::{Program, ProgramFault, Role, Sent};
use serde_json::Value;
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

struct Channels {
    from_durasim: Receiver<Value>,
    to_durasim: Sender<Value>,
}

impl Transport for Channels {
    fn recv(&mut self) -> Option<Value> {
        self.from_durasim.recv().ok()
    }

    fn send(&mut self, line: Value) -> bool {
        self.to_durasim.send(line).is_ok()
    }
}

pub struct InProcess {
    role: Role,
    to: Option<Sender<Value>>,
    from: Receiver<Value>,
    thread: Option<JoinHandle<()>>,
    lines: u64,
    timeout: Duration,
}

impl InProcess {
    pub fn start(role: Role, timeout: Duration) -> InProcess {
        let (to, from_durasim) = channel();
        let (to_durasim, from) = channel();
        let thread = std::thread::Builder::new()
            .name(format!("durasim-{}", role.name()))
            .spawn(move || {
                let t = Channels {
                    from_durasim,
                    to_durasim,
                };
                if let Ok(c) = Client::connect(Box::new(t)) {
                    let _ = reference::run(c);
                }
            })
            .expect("a thread for durasim's own program");
        InProcess {
            role,
            to: Some(to),
            from,
            thread: Some(thread),
            lines: 0,
            timeout,
        }
    }
}

impl Program for InProcess {
    fn deliver(&mut self, message: &Value) -> Result<Vec<Sent>, ProgramFault> {
        let gone = || ProgramFault(format!("durasim's own {} ended", self.role.name()));
        let to = self.to.as_ref().ok_or_else(gone)?;
        to.send(message.clone()).map_err(|_| gone())?;
        let mut sent = Vec::new();
        loop {
            let value = match self.from.recv_timeout(self.timeout) {
                Ok(v) => v,
                Err(RecvTimeoutError::Timeout) => {
                    return Err(ProgramFault(format!(
                        "durasim's own {} said nothing for {:?}",
                        self.role.name(),
                        self.timeout
                    )))
                }
                Err(RecvTimeoutError::Disconnected) => return Err(gone()),
            };
            self.lines += 1;
            if value["call"] == "idle" {
                return Ok(sent);
            }
            sent.push(Sent {
                line: self.lines,
                value,
            });
        }
    }

    fn kill(&mut self) {
        self.to = None;
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }

    fn describe(&self) -> String {
        format!("durasim's own {}", self.role.name())
    }
}

impl Drop for InProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
