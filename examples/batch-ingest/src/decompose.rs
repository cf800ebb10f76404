//! The harness lane of the ingest writer, one road at a time: the writer
//! under [`PRODUCERS`] producers, clean and probed through the road chosen.

use hopscope_harness::{BoxError, HandIn, Lane, Ops, Role, Setup, Workload};
use hopscope_probe::collector::{Collector, DEFAULT_RING_MARKS};
use hopscope_probe::sqlite::{SqliteProbe, TransactionHops};
use hopscope_probe::{Hop, HopLayer, HopTable, Owner};

pub use crate::hops::{BatchHops, HOPS, hops};
use crate::{Ingest, Road};

/// Events one transaction runs at most.
pub const MAX_BATCH: usize = 64;

/// Producers at once.
pub const PRODUCERS: usize = 8;

// readme-excerpt: layer
/// The spans road's layer: each producer's `insert`, each event's
/// `statement` (SQLite's), and the batch's `begin` and `commit`, shared
/// and SQLite's too.
pub fn layer() -> HopLayer {
    let layer = HopLayer::new().caller("insert").database("statement");
    let layer = layer.shared("begin").owned_by("begin", Owner::Sqlite);
    layer.shared("commit").owned_by("commit", Owner::Sqlite)
}
// readme-excerpt: end

// readme-excerpt: probe
/// The hook road's probe: each statement marked `woke`…`executed` under
/// the operation its thread names, each transaction one shared interval
/// with hops of its own, declared in `table`.
pub fn probe(table: &mut HopTable) -> SqliteProbe {
    let transactions = TransactionHops::declare(table);
    SqliteProbe::new(Collector::new(DEFAULT_RING_MARKS), Hop::WOKE, Hop::EXECUTED).transactions(transactions)
}
// readme-excerpt: end

// readme-excerpt: workload
/// The writer as a lane: its producers are the harness's callers.
struct Writer(Ingest);

impl Workload for Writer {
    fn run(&self, _caller: usize, ops: Ops) -> Result<u64, BoxError> {
        let mut done = 0;
        for op in ops {
            self.0.insert(op.index(), "an event")?;
            done += 1;
        }
        Ok(done)
    }

    fn hand_in(&self, hand_in: &HandIn) -> Result<(), BoxError> {
        let hand_in = hand_in.clone();
        Ok(self.0.on_writer(Box::new(move || hand_in.collect("writer")))?)
    }
}
// readme-excerpt: end

/// Open the writer marked by `road` in `setup`'s directory.
fn open(setup: &Setup, road: Road) -> Result<Writer, BoxError> {
    let init = setup.thread_init();
    let probe = setup.sqlite_probe().cloned();
    let attach = move |conn: &rusqlite::Connection| {
        init.enter();
        if let Some(probe) = probe {
            let _ = probe.attach(conn);
        }
    };
    Ok(Writer(Ingest::open(&setup.path("ingest.db"), MAX_BATCH, road, attach)?))
}

/// The lane of one road, and the hop table its run declares.
pub fn lanes(road: Road) -> (Vec<Lane>, Option<HopTable>) {
    let lane = |road| Lane::new(Role::Subject, "ingest", move |s: &Setup| open(s, road));
    let writer = match road {
        Road::Spans => lane(Road::Spans).probed_by_spans(layer()),
        Road::Hook => {
            let mut table = HopTable::standard();
            let probe = probe(&mut table);
            return (
                vec![lane(Road::Hook).threads(&["writer"]).callers(PRODUCERS).probed_by_sqlite(probe)],
                Some(table),
            );
        }
        _ => lane(Road::Plain).probed(lane(Road::Marks)),
    };
    let table = (road != Road::Spans).then(hops);
    (vec![writer.threads(&["writer"]).callers(PRODUCERS)], table)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_direct_marks_hops_are_declared_at_their_ids() {
        let table = hops();
        let named = |hop: Hop| table.get(hop).map(|d| d.name.as_str());
        assert_eq!(named(HOPS.begin), Some("begin"));
        assert_eq!(named(HOPS.began), Some("began"));
        assert_eq!(named(HOPS.executing), Some("executing"));
        assert_eq!(named(HOPS.commit), Some("commit"));
        assert_eq!(named(HOPS.committed), Some("committed"));
    }
}
