//! Each road's marks, with the `hopscope` feature; without it every road
//! runs the writer unmarked.

#[cfg(feature = "hopscope")]
pub(crate) use marked::*;
#[cfg(not(feature = "hopscope"))]
pub(crate) use unmarked::*;

#[cfg(not(feature = "hopscope"))]
mod unmarked {
    use crate::request::{Outcomes, Request, Road, insert};

    pub(crate) fn caller(_road: Road, _op: u64, _enter: bool) {}

    pub(crate) fn replied(_road: Road, _op: u64) {}

    pub(crate) fn transaction(conn: &rusqlite::Connection, batch: &[Request], _road: Road) -> Outcomes {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let ids = batch.iter().map(|r| insert(conn, r)).collect();
        conn.execute_batch("COMMIT")?;
        Ok(ids)
    }
}

#[cfg(feature = "hopscope")]
mod marked {
    use hopscope_probe::sqlite::with_op;
    use hopscope_probe::{Hop, OpId, hop, serves};
    use rusqlite::Connection;

    use crate::hops::HOPS;
    use crate::request::{Outcomes, Request, Road, insert};

    /// A producer's marks around its call: `enter` and `done`.
    pub(crate) fn caller(road: Road, op: u64, enter: bool) {
        if road == Road::Marks {
            hop!(OpId(op), if enter { Hop::ENTER } else { Hop::DONE });
        }
    }

    /// The writer hands an event's reply over.
    pub(crate) fn replied(road: Road, op: u64) {
        if road == Road::Marks {
            hop!(OpId(op), Hop::REPLIED);
        }
    }

    /// The batch in one transaction, marked by `road`.
    pub(crate) fn transaction(conn: &Connection, batch: &[Request], road: Road) -> Outcomes {
        match road {
            Road::Marks => marked(conn, batch),
            Road::Spans => spans(conn, batch),
            _ => hooked(conn, batch),
        }
    }

    // readme-excerpt: marks
    /// Direct marks: the batch's BEGIN and COMMIT marked once, under an id
    /// of its own, linked to every event it serves.
    fn marked(conn: &Connection, batch: &[Request]) -> Outcomes {
        let txn = hopscope_probe::local::next_op();
        for r in batch {
            hop!(OpId(r.op), Hop::WOKE);
            serves!(txn, OpId(r.op));
        }
        hop!(txn, HOPS.begin);
        conn.execute_batch("BEGIN IMMEDIATE")?;
        hop!(txn, HOPS.began);
        let ids = batch.iter().map(|r| {
            hop!(OpId(r.op), HOPS.executing);
            let id = insert(conn, r);
            hop!(OpId(r.op), Hop::EXECUTED);
            id
        });
        let ids = ids.collect();
        hop!(txn, HOPS.commit);
        conn.execute_batch("COMMIT")?;
        hop!(txn, HOPS.committed);
        Ok(ids)
    }
    // readme-excerpt: end

    // readme-excerpt: spans
    /// Spans: the batch's `begin` and `commit` spans (`HopLayer::shared`),
    /// each recording every event it serves, and each event's statement in
    /// a `statement` span.
    fn spans(conn: &Connection, batch: &[Request]) -> Outcomes {
        let begin = tracing::info_span!("begin", serves = tracing::field::Empty);
        let commit = tracing::info_span!("commit", serves = tracing::field::Empty);
        for r in batch {
            begin.record("serves", r.op);
            commit.record("serves", r.op);
        }
        begin.in_scope(|| conn.execute_batch("BEGIN IMMEDIATE"))?;
        let statement = |r: &Request| tracing::info_span!("statement", op = r.op).in_scope(|| insert(conn, r));
        let ids = batch.iter().map(statement).collect();
        commit.in_scope(|| conn.execute_batch("COMMIT"))?;
        Ok(ids)
    }
    // readme-excerpt: end

    // readme-excerpt: hook
    /// SQLite's hook: each statement named with its event; the probe
    /// (`SqliteProbe::transactions`) finds BEGIN and COMMIT by itself.
    fn hooked(conn: &Connection, batch: &[Request]) -> Outcomes {
        conn.execute_batch("BEGIN IMMEDIATE")?;
        let ids = batch.iter().map(|r| with_op(OpId(r.op), || insert(conn, r))).collect();
        conn.execute_batch("COMMIT")?;
        Ok(ids)
    }
    // readme-excerpt: end
}
