//! One follower process as the coordinator holds it: spawned, connected,
//! asked for blocks, and stopped — or killed and reaped, whatever happens,
//! so no follower outlives the coordinator's run.

use std::fs::File;
use std::io::{BufReader, BufWriter, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use hopscope_probe::{Block, RunFact, RunFacts, TraceError, TraceHeader, TraceReader};

use super::error::LockstepError;
use crate::runner::{FOLLOW_PROTOCOL, HELLO};

/// How long a follower may take to start and open its lanes.
pub(super) const OPEN_DEADLINE: Duration = Duration::from_secs(120);

/// How long a follower may take to exit once told to stop.
const EXIT_DEADLINE: Duration = Duration::from_secs(10);

/// How a follower is started: its program and its arguments (the
/// follower's own flags are added).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Launch {
    /// The arm it serves (`a`, `b`, `control`).
    pub arm: String,
    /// The build's name in lines (`build a (./old)`).
    pub build: String,
    /// The program.
    pub program: PathBuf,
    /// Arguments before the follower's own flags (sizes, placement, lanes).
    pub args: Vec<String>,
}

/// A follower, connected and past its handshake.
pub(super) struct Follower {
    pub(super) launch: Launch,
    pub(super) header: TraceHeader,
    child: Child,
    commands: BufWriter<UnixStream>,
    blocks: TraceReader<BufReader<UnixStream>>,
    stderr: PathBuf,
    socket: PathBuf,
    finished: bool,
}

impl Follower {
    /// Start `launch` following on a fresh socket, its output under `logs`,
    /// and read its header; each block may take `deadline` to come back.
    pub(super) fn start(launch: Launch, logs: &Path, deadline: Duration) -> Result<Follower, LockstepError> {
        let fail = |what: String| LockstepError::Follower { build: launch.build.clone(), what };
        std::fs::create_dir_all(logs).map_err(|e| fail(format!("cannot create {}: {e}", logs.display())))?;
        // A short path (a Unix socket's is limited to ~100 bytes), one per
        // follower this process ever starts: runs may overlap in a process.
        static STARTED: AtomicU64 = AtomicU64::new(0);
        let n = STARTED.fetch_add(1, Ordering::Relaxed);
        let socket = std::env::temp_dir().join(format!("hopscope-{}-{n}-{}.sock", std::process::id(), launch.arm));
        let _ = std::fs::remove_file(&socket);
        let listener =
            UnixListener::bind(&socket).map_err(|e| fail(format!("cannot listen on {}: {e}", socket.display())))?;
        let stderr = logs.join(format!("{}.stderr", launch.arm));
        let out = logs.join(format!("{}.stdout", launch.arm));
        let file = |path: &Path| File::create(path).map_err(|e| fail(format!("cannot create {}: {e}", path.display())));
        // The follower keeps its links in this run's output root, wherever
        // its own program file would have put them.
        let child = Command::new(&launch.program)
            .env(crate::rundir::RUNS_ENV, crate::rundir::runs_dir())
            .args(&launch.args)
            .arg("--follow")
            .arg(&socket)
            .arg("--out")
            .arg(logs.join(&launch.arm))
            .stdin(Stdio::null())
            .stdout(file(&out)?)
            .stderr(file(&stderr)?)
            .spawn()
            .map_err(|e| fail(format!("cannot start {}: {e}", launch.program.display())));
        let child = match child {
            Ok(child) => child,
            Err(err) => {
                let _ = std::fs::remove_file(&socket);
                return Err(err);
            }
        };
        let mut held = Held { child: Some(child), socket: socket.clone() };
        let stream = accept(&listener, held.child(), &launch, &stderr)?;
        drop(listener);
        let stream_fail = |e: std::io::Error| fail(format!("cannot use the socket: {e}"));
        stream.set_read_timeout(Some(OPEN_DEADLINE)).map_err(stream_fail)?;
        let mut commands = BufWriter::new(stream.try_clone().map_err(stream_fail)?);
        writeln!(commands, "{HELLO} {FOLLOW_PROTOCOL}").and_then(|()| commands.flush()).map_err(stream_fail)?;
        let blocks = match TraceReader::new(BufReader::new(stream.try_clone().map_err(stream_fail)?), None) {
            Ok(reader) => reader,
            Err(err) => {
                let child = held.child();
                return Err(fail(ended(child, &stderr, &format!("sent no header ({err})"))));
            }
        };
        stream.set_read_timeout(Some(deadline)).map_err(stream_fail)?;
        let header = blocks.header().clone();
        let protocol = header.run.fact(&RunFact::FollowProtocol).unwrap_or_default().to_owned();
        if protocol != FOLLOW_PROTOCOL.to_string() {
            return Err(fail(format!("speaks follower protocol `{protocol}`, this coordinator {FOLLOW_PROTOCOL}")));
        }
        let child = held.release();
        Ok(Follower { launch, header, child, commands, blocks, stderr, socket, finished: false })
    }

    /// Ask for one block and read it back.
    pub(super) fn block(&mut self, command: &str) -> Result<Block, LockstepError> {
        let sent = writeln!(self.commands, "{command}").and_then(|()| self.commands.flush());
        let got = match sent {
            Ok(()) => self.blocks.next_block(),
            Err(e) => Err(TraceError::Io(e)),
        };
        match got {
            Ok(Some(block)) => Ok(block),
            Ok(None) => {
                self.finished = true;
                Err(self.failed("stopped"))
            }
            // The socket's read timeout, reported by the trace reader as a
            // failed read: the follower is alive and has not answered.
            Err(TraceError::Io(e) | TraceError::Read(e))
                if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) =>
            {
                let _ = self.child.kill();
                Err(LockstepError::Follower {
                    build: self.launch.build.clone(),
                    what: format!("did not answer `{command}` within its deadline (--deadline); stopped it"),
                })
            }
            Err(err) => {
                // A follower that died says more by its exit than the
                // broken socket does.
                let what = match wait(&mut self.child, Duration::from_millis(200)) {
                    Some(_) => format!("ended during `{command}`"),
                    None => format!("broke off during `{command}` ({err})"),
                };
                Err(self.failed(&what))
            }
        }
    }

    /// The follower's account of its end: its exit and last stderr line.
    fn failed(&mut self, what: &str) -> LockstepError {
        LockstepError::Follower { build: self.launch.build.clone(), what: ended(&mut self.child, &self.stderr, what) }
    }

    /// Tell it to stop, read its end record and wait for it to exit.
    pub(super) fn stop(mut self) -> Result<(), LockstepError> {
        let _ = writeln!(self.commands, "stop").and_then(|()| self.commands.flush());
        let end = if self.finished { Ok(None) } else { self.blocks.next_block() };
        self.finished = true;
        let status = wait(&mut self.child, EXIT_DEADLINE);
        match (end, status) {
            (Ok(None), Some(status)) if status.success() => Ok(()),
            (end, _) => {
                let what = match end {
                    Ok(None) => "exited badly after stop".to_owned(),
                    Ok(Some(_)) => "sent a block nobody asked for".to_owned(),
                    Err(err) => format!("ended its trace badly ({err})"),
                };
                Err(self.failed(&what))
            }
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        // Never an orphan: a follower not stopped cleanly is killed and reaped.
        if wait(&mut self.child, Duration::ZERO).is_none() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// A child and its socket before the handshake: killed and removed if the
/// start fails.
struct Held {
    child: Option<Child>,
    socket: PathBuf,
}

impl Held {
    fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("held until released")
    }

    fn release(&mut self) -> Child {
        self.child.take().expect("released once")
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
            let _ = std::fs::remove_file(&self.socket);
        }
    }
}

/// Wait for the child's connection, giving up when it exits or after
/// [`OPEN_DEADLINE`].
fn accept(
    listener: &UnixListener,
    child: &mut Child,
    launch: &Launch,
    stderr: &Path,
) -> Result<UnixStream, LockstepError> {
    let fail = |what: String| LockstepError::Follower { build: launch.build.clone(), what };
    listener.set_nonblocking(true).map_err(|e| fail(format!("cannot poll the socket: {e}")))?;
    let started = Instant::now();
    loop {
        match listener.accept() {
            Ok((stream, _)) => {
                stream.set_nonblocking(false).map_err(|e| fail(format!("cannot use the socket: {e}")))?;
                return Ok(stream);
            }
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(fail(format!("cannot accept its connection: {e}"))),
        }
        if let Ok(Some(status)) = child.try_wait() {
            let mut line = ended(child, stderr, "exited before it connected");
            // It ran to its end without following: not a harness program
            // as built (a feature that brings the harness left off).
            if status.success() {
                line.push_str(
                    " (it ran and ended without following: is the harness built into it? a feature left off the \
                     build: give --build)",
                );
            }
            return Err(fail(line));
        }
        if started.elapsed() > OPEN_DEADLINE {
            return Err(fail(format!(
                "did not connect within {} s (is it a hopscope-harness program?)",
                OPEN_DEADLINE.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// `what`, with how the child ended and the last line it printed on stderr.
fn ended(child: &mut Child, stderr: &Path, what: &str) -> String {
    let status = match wait(child, EXIT_DEADLINE) {
        Some(status) => describe(status),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            "still running; killed".to_owned()
        }
    };
    let last = std::fs::read_to_string(stderr)
        .ok()
        .and_then(|text| text.lines().rev().find(|l| !l.trim().is_empty()).map(|l| l.trim().to_owned()));
    match last {
        Some(line) => format!("{what}, {status}: {line}"),
        None => format!("{what}, {status}"),
    }
}

/// An exit status in words.
fn describe(status: std::process::ExitStatus) -> String {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(code), _) => format!("exit status {code}"),
        (None, Some(signal)) => format!("killed by signal {signal}"),
        (None, None) => "ended".to_owned(),
    }
}

/// The child's status once it has exited, waiting up to `limit`.
fn wait(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let started = Instant::now();
    loop {
        if let Ok(Some(status)) = child.try_wait() {
            return Some(status);
        }
        if started.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}
