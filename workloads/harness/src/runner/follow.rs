//! The follower: a harness program run block by block by another process
//! (`hopscope ab --builds`), so that blocks of two builds interleave in time
//! and whatever the host does falls on both.
//!
//! The conversation, over a Unix socket the coordinator listens on:
//!
//! 1. The coordinator sends `hopscope-follow <version>`; a follower of
//!    another [`FOLLOW_PROTOCOL`] refuses it and stops.
//! 2. The follower opens its lanes and sends a trace's preamble and header
//!    (the `.hop` format): its lanes, roles, threads, hops, readings and
//!    clock, with `follow.protocol` and the harness version in its run
//!    facts. That header is the handshake.
//! 3. The coordinator sends one command per line: `warmup <lane> <round>`,
//!    `block <lane> <pass> <sample>` (lane: an index into the header's
//!    lanes) or `stop`. Each block command is answered with one block
//!    record; `stop`, a closed socket or a lane's failure with the end
//!    record, after which the follower closes the socket.
//!
//! A lane that fails ends the trace the same way and the follower exits
//! with the line a run prints (on stderr): the coordinator reads the end
//! record where it waited for a block, and the line from the follower's
//! stderr.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, BufWriter};
use std::path::{Path, PathBuf};

use hopscope_probe::{RunFact, RunFacts, TraceWriter};

use super::open::{OpenRun, Opener};
use crate::error::{At, Failure, RunError};
use crate::lane::Lane;
use crate::plan::Plan;
use crate::run_summary::RunSummary;
use crate::workload::BlockId;

/// The version of the follower protocol; both sides must speak the same.
pub const FOLLOW_PROTOCOL: u32 = 1;

/// The first line a coordinator sends.
pub const HELLO: &str = "hopscope-follow";

/// Longest command line a follower reads: far above any real command.
const MAX_COMMAND_BYTES: u64 = 256;

/// A command from the coordinator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Command {
    Block(usize, BlockId),
    Stop,
}

/// Parse one command line against `lanes` trace lanes.
fn command(line: &str, lanes: usize) -> Result<Command, String> {
    let words: Vec<&str> = line.split_ascii_whitespace().collect();
    let number = |i: usize| -> Result<u32, String> {
        words.get(i).and_then(|w| w.parse::<u32>().ok()).ok_or_else(|| format!("bad command `{line}`"))
    };
    let lane = |i: usize| -> Result<usize, String> {
        let lane = number(i)? as usize;
        if lane >= lanes { Err(format!("`{line}`: lane {lane}, but this program runs {lanes}")) } else { Ok(lane) }
    };
    match (words.first().copied(), words.len()) {
        (Some("stop"), 1) => Ok(Command::Stop),
        (Some("warmup"), 3) => Ok(Command::Block(lane(1)?, BlockId::Warmup { round: number(2)? })),
        (Some("block"), 4) => Ok(Command::Block(lane(1)?, BlockId::Measured { pass: number(2)?, sample: number(3)? })),
        _ => Err(format!("bad command `{line}`")),
    }
}

/// Read one line of at most [`MAX_COMMAND_BYTES`]; `None` at the end.
fn read_line(input: &mut impl BufRead) -> Result<Option<String>, RunError> {
    let mut line = String::new();
    let got = std::io::Read::take(&mut *input, MAX_COMMAND_BYTES)
        .read_line(&mut line)
        .map_err(|e| RunError::Follow(format!("cannot read the coordinator's command: {e}")))?;
    if got == 0 {
        return Ok(None);
    }
    if !line.ends_with('\n') {
        return Err(RunError::Follow(format!("a command longer than {MAX_COMMAND_BYTES} bytes")));
    }
    Ok(Some(line.trim_end().to_owned()))
}

/// Follow the coordinator listening on `socket`: open `lanes` under `plan`
/// (their scratch space under `dir`, locked), then run the blocks it asks
/// for until it says stop. Every measured block also counts in the summary;
/// the trace goes to the coordinator, none is written under `dir`.
#[cfg(unix)]
pub fn follow(
    socket: &Path,
    plan: &Plan,
    lanes: &[Lane],
    dir: &Path,
    meta: BTreeMap<String, String>,
) -> Result<RunSummary, RunError> {
    use std::os::unix::net::UnixStream;
    let stream = UnixStream::connect(socket)
        .map_err(|e| RunError::Follow(format!("cannot connect to {}: {e}", socket.display())))?;
    let clone = stream.try_clone().map_err(|e| RunError::Follow(format!("cannot share the socket: {e}")))?;
    let mut input = BufReader::new(clone);
    let hello = read_line(&mut input)?.unwrap_or_default();
    let expected = format!("{HELLO} {FOLLOW_PROTOCOL}");
    if hello != expected {
        return Err(RunError::Follow(format!(
            "the coordinator speaks `{hello}`, this program `{expected}` (harness {})",
            env!("CARGO_PKG_VERSION")
        )));
    }
    let mut meta = meta;
    meta.record(RunFact::FollowProtocol, FOLLOW_PROTOCOL.to_string());
    meta.record(RunFact::FollowHarness, env!("CARGO_PKG_VERSION"));
    let mut open = OpenRun::open(plan, lanes, dir, meta, Opener::Follower)?;
    let mut trace = TraceWriter::new(BufWriter::new(stream), open.header.clone())?;
    let mut written = 0u64;
    let mut failed: Option<(String, At, Failure)> = None;
    let mut broken = None;
    loop {
        if crate::interrupt::requested().is_some() {
            break;
        }
        let line = match read_line(&mut input) {
            Ok(Some(line)) => line,
            Ok(None) => break,
            Err(err) => {
                broken = Some(err);
                break;
            }
        };
        let (index, id) = match command(&line, open.lanes.len()) {
            Ok(Command::Block(index, id)) => (index, id),
            Ok(Command::Stop) => break,
            Err(why) => {
                broken = Some(RunError::Follow(why));
                break;
            }
        };
        match open.block(index, id) {
            Ok(block) => {
                if let BlockId::Measured { .. } = id {
                    open.count(&block);
                    written += 1;
                }
                trace.write_block(&block)?;
            }
            Err((at, failure)) => {
                failed = Some((open.lanes[index].name.clone(), at, failure));
                break;
            }
        }
    }
    // The coordinator may be gone already: an end it cannot read is no error.
    let _ = trace.finish();
    let summary = open.close(PathBuf::from(socket), written, failed, None)?;
    match broken {
        Some(err) => Err(err),
        None => Ok(summary),
    }
}

/// Following needs Unix sockets.
#[cfg(not(unix))]
pub fn follow(
    _socket: &Path,
    _plan: &Plan,
    _lanes: &[Lane],
    _dir: &Path,
    _meta: BTreeMap<String, String>,
) -> Result<RunSummary, RunError> {
    Err(RunError::Follow("following another process needs Unix sockets: unsupported on this system".to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commands_parse_and_bad_ones_are_named() {
        assert_eq!(command("stop", 2), Ok(Command::Stop));
        assert_eq!(command("warmup 1 3", 2), Ok(Command::Block(1, BlockId::Warmup { round: 3 })));
        assert_eq!(command("block 0 2 7", 2), Ok(Command::Block(0, BlockId::Measured { pass: 2, sample: 7 })));
        assert!(command("block 2 0 0", 2).unwrap_err().contains("lane 2, but this program runs 2"));
        for bad in ["", "go", "block 0 0", "block x 0 0", "stop now", "block 0 0 -1"] {
            assert!(command(bad, 2).unwrap_err().contains("bad command"), "{bad}");
        }
    }
}
