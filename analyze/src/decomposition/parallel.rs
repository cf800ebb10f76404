//! The join's second pass on the host's cores: one thread reads and
//! decodes the blocks and hands them round (block `k` to worker
//! `k mod n`), each worker joins its blocks as the join of one thread
//! would, and the workers' joins are merged at the end, blocks back in
//! trace order. A long capture is joined in a fraction of the time; a
//! short trace, which gains nothing, is joined on the calling thread.
//!
//! The figures are those of one thread's join: medians per block are the
//! same blocks' medians, pooled quantiles come from the same values (held
//! exactly, or the same sketch bins); only a mean's last bits can differ
//! (floating-point sums in another order), the same on every run with as
//! many cores.

use std::collections::BTreeSet;
use std::sync::mpsc;

use hopscope_probe::Block;

use super::error::AnalyzeError;
use crate::join::{Join, LaneOps};
use crate::source::BlockSource;

/// Blocks below which the join runs on the calling thread.
pub(super) const MIN_BLOCKS: u64 = 64;

/// Most worker threads.
const MAX_WORKERS: usize = 8;

/// Blocks waiting per worker: enough to keep it busy while the reader
/// decodes, few enough to hold memory flat.
const QUEUED: usize = 2;

/// Replay `source` into `visit` in trace order, the file's reading and
/// decoding on a thread of their own when the host has two cores: a pass
/// that only reads each block (the scan) then costs its own work alone.
pub(super) fn replay(source: &mut impl BlockSource, visit: &mut dyn FnMut(usize, &Block)) -> Result<(), AnalyzeError> {
    if cores() < 2 {
        return source.replay(visit);
    }
    std::thread::scope(|scope| {
        let (tx, rx) = mpsc::sync_channel::<(usize, Block)>(QUEUED * 2);
        let reader = scope.spawn(move || {
            source.replay_owned(&mut |index, block| {
                // The receiver stops only when `visit` panicked.
                let _ = tx.send((index, block));
            })
        });
        for (index, block) in rx {
            visit(index, &block);
        }
        reader.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))
    })
}

/// The host's cores, up to [`MAX_WORKERS`].
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZero::get).min(MAX_WORKERS)
}

/// Join the blocks of `source` not in `skip` (rounds left out), starting
/// from `join` (fresh from the scan), `blocks` the count the scan saw.
pub(super) fn join(
    source: &mut impl BlockSource,
    join: Join,
    skip: Option<&BTreeSet<(u32, u32)>>,
    blocks: u64,
) -> Result<Vec<LaneOps>, AnalyzeError> {
    let kept = |block: &Block| !skip.is_some_and(|s| s.contains(&(block.pass, block.sample)));
    let workers = cores();
    if workers < 2 || blocks < MIN_BLOCKS {
        let mut join = join;
        source.replay(&mut |index, block| {
            if kept(block) {
                join.add(index, block);
            }
        })?;
        return Ok(join.finish());
    }
    std::thread::scope(|scope| {
        let (senders, handles): (Vec<_>, Vec<_>) = (0..workers)
            .map(|_| {
                let (tx, rx) = mpsc::sync_channel::<(usize, Block)>(QUEUED);
                let mut join = join.clone();
                let handle = scope.spawn(move || {
                    for (index, block) in rx {
                        join.add(index, &block);
                    }
                    join
                });
                (tx, handle)
            })
            .unzip();
        let mut handed = 0usize;
        let replayed = source.replay_owned(&mut |index, block| {
            if kept(&block) {
                // A worker only stops receiving by panicking, which the
                // join below passes on.
                let _ = senders[handed % workers].send((index, block));
                handed += 1;
            }
        });
        drop(senders);
        let mut joins = handles.into_iter().map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)));
        let mut all = joins.next().unwrap_or(join);
        for other in joins {
            all.merge(other);
        }
        replayed?;
        Ok(all.finish())
    })
}
