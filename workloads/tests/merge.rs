//! The merge model's correctness, on both paths: replicas that exchange
//! changesets converge, the memo never outlives a savepoint rollback, and a
//! malformed change is refused before anything is written.

use hopscope_workloads::merge::changeset::site;
use hopscope_workloads::merge::{
    COLUMNS, Change, ChangesetSpec, MergeError, MergeKnobs, Merger, Replica, TABLE, generate,
};
use rusqlite::types::Value as SqlValue;

fn text(s: &str) -> SqlValue {
    SqlValue::Text(s.to_owned())
}

/// Every knob setting worth checking: both paths and each step alone.
fn all_knobs() -> Vec<MergeKnobs> {
    let mut all = vec![MergeKnobs::NAIVE, MergeKnobs::TUNED];
    all.extend(MergeKnobs::one_step_each().map(|(_, k)| k));
    all
}

/// Two replicas with overlapping local histories: the same cells edited on
/// both (equal versions, different values), cells edited twice on one side,
/// and rows only one side has.
fn two_replicas() -> (Replica, Replica) {
    let mut a = Replica::in_memory(site(1)).expect("replica a");
    let mut b = Replica::in_memory(site(2)).expect("replica b");
    a.write(&[("r1", "a", SqlValue::Integer(1)), ("r1", "b", text("from a")), ("r2", "a", SqlValue::Real(2.5))])
        .expect("a writes");
    a.write(&[("r1", "a", SqlValue::Integer(10))]).expect("a writes again");
    b.write(&[("r1", "a", SqlValue::Integer(5)), ("r1", "b", text("from b")), ("r3", "d", SqlValue::Null)])
        .expect("b writes");
    b.write(&[("r2", "a", text("b's r2")), ("r2", "c", SqlValue::Blob(vec![1, 2, 3]))]).expect("b writes again");
    (a, b)
}

fn exchange(from: &Replica, to: &Replica, knobs: MergeKnobs) {
    let changes = from.changes_since(0).expect("changes");
    Merger::new(to.conn(), knobs).import(&changes).expect("import");
}

#[test]
fn two_replicas_exchanging_both_ways_converge_on_every_path() {
    for knobs in all_knobs() {
        for a_first in [true, false] {
            let (a, b) = two_replicas();
            if a_first {
                exchange(&a, &b, knobs);
                exchange(&b, &a, knobs);
            } else {
                exchange(&b, &a, knobs);
                exchange(&a, &b, knobs);
            }
            let (sa, sb) = (a.snapshot().expect("snapshot a"), b.snapshot().expect("snapshot b"));
            assert_eq!(sa, sb, "{knobs:?} a_first={a_first}: tables and clocks differ");
            // r1.a: a wrote it twice (version 2) and beats b's version 1.
            let r1 = sa.rows.iter().find(|(pk, _)| pk == "r1").expect("r1");
            assert_eq!(r1.1[0], SqlValue::Integer(10));
            // r1.b: a tie between sites goes to the larger value, everywhere.
            assert_eq!(r1.1[1], text("from b"));
            // A second exchange changes nothing: every change is known.
            exchange(&a, &b, knobs);
            exchange(&b, &a, knobs);
            assert_eq!(a.snapshot().expect("a"), sa, "{knobs:?}: a re-import changed a");
            assert_eq!(b.snapshot().expect("b"), sb, "{knobs:?}: a re-import changed b");
        }
    }
}

#[test]
fn naive_and_tuned_import_the_same_changeset_to_the_same_state_and_reimport_loses_everything() {
    let changes = generate(ChangesetSpec { rows: 300, columns: 4, sites: 2 });
    assert_eq!(changes.len(), 1200);
    let mut snapshots = Vec::new();
    for knobs in all_knobs() {
        let replica = Replica::in_memory(site(9)).expect("replica");
        let mut merger = Merger::new(replica.conn(), knobs);
        let cold = merger.import(&changes).expect("cold import");
        assert_eq!((cold.changes, cold.won, cold.lost), (1200, 1200, 0), "{knobs:?}");
        let again = merger.import(&changes).expect("idempotent re-import");
        assert_eq!((again.won, again.lost), (0, 1200), "{knobs:?}: every change of a re-import loses");
        snapshots.push(replica.snapshot().expect("snapshot"));
    }
    assert!(snapshots.windows(2).all(|w| w[0] == w[1]), "paths disagree about the merged state");
    assert_eq!(snapshots[0].rows.len(), 300);
    assert_eq!(snapshots[0].clocks.len(), 1200);
}

fn change(pk: &str, column: &str, value: SqlValue) -> Change {
    Change {
        table: TABLE.to_owned(),
        pk: vec![text(pk)],
        column: column.to_owned(),
        value,
        col_version: 1,
        db_version: 1,
        site: site(7),
        seq: 0,
    }
}

/// Merge `x`, then under a savepoint merge `y` and roll it back; then let
/// another row take the key `y` had, and merge `y` again. A memo that
/// survived the rollback would file `y`'s clock under the other row's key.
fn merge_across_a_savepoint_rollback(knobs: MergeKnobs) -> hopscope_workloads::merge::Snapshot {
    let replica = Replica::in_memory(site(3)).expect("replica");
    let mut merger = Merger::new(replica.conn(), knobs);
    merger.begin().expect("begin");
    merger.merge(0, &change("x", "a", SqlValue::Integer(1))).expect("x");
    merger.savepoint("s").expect("savepoint");
    merger.merge(1, &change("y", "a", SqlValue::Integer(2))).expect("y");
    merger.rollback_to("s").expect("rollback to");
    merger.release("s").expect("release");
    replica.conn().execute("INSERT INTO items__pks (id) VALUES ('z')", []).expect("z takes the freed key");
    merger.merge(2, &change("y", "b", SqlValue::Integer(3))).expect("y again");
    merger.commit().expect("commit");
    replica.snapshot().expect("snapshot")
}

#[test]
fn a_savepoint_rollback_invalidates_the_memo() {
    let without_memo = merge_across_a_savepoint_rollback(MergeKnobs { row_memo: false, ..MergeKnobs::TUNED });
    let with_memo = merge_across_a_savepoint_rollback(MergeKnobs::TUNED);
    assert_eq!(with_memo, without_memo);
    let y_clocks: Vec<_> = with_memo.clocks.iter().filter(|c| c.0 == "y").map(|c| c.1.as_str()).collect();
    assert_eq!(y_clocks, ["b"], "y's clock is filed under y, and only its surviving change");
    assert!(with_memo.clocks.iter().all(|c| c.0 != "z"), "no clock under the row that took the freed key");
}

/// Whether an error is the one a malformed change should get.
type Expected = fn(&MergeError) -> bool;

#[test]
fn a_malformed_change_is_refused_before_anything_is_written() {
    let good = change("ok", "a", SqlValue::Integer(1));
    let cases: Vec<(Change, Expected)> = vec![
        (Change { table: "nope".to_owned(), ..good.clone() }, |e| matches!(e, MergeError::UnknownTable { .. })),
        (Change { column: "zz".to_owned(), ..good.clone() }, |e| matches!(e, MergeError::UnknownColumn { .. })),
        (Change { pk: vec![], ..good.clone() }, |e| matches!(e, MergeError::PkArity { found: 0, .. })),
        (Change { pk: vec![text("a"), text("b")], ..good.clone() }, |e| {
            matches!(e, MergeError::PkArity { found: 2, .. })
        }),
        (Change { pk: vec![SqlValue::Integer(4)], ..good.clone() }, |e| matches!(e, MergeError::BadType { .. })),
        (Change { col_version: 0, ..good.clone() }, |e| matches!(e, MergeError::BadType { .. })),
    ];
    for knobs in [MergeKnobs::NAIVE, MergeKnobs::TUNED] {
        for (bad, is_expected) in &cases {
            // Inside a transaction: the bad change is refused, the good one
            // merged before it stays.
            let replica = Replica::in_memory(site(4)).expect("replica");
            let mut merger = Merger::new(replica.conn(), knobs);
            merger.begin().expect("begin");
            assert!(merger.merge(0, &good).expect("good change"));
            let err = merger.merge(1, bad).expect_err("refused");
            assert!(is_expected(&err), "{knobs:?}: unexpected {err}");
            assert!(err.to_string().starts_with("change 1"), "{err}");
            merger.commit().expect("commit");
            let state = replica.snapshot().expect("snapshot");
            assert_eq!(state.rows.len(), 1, "the earlier change is intact, the bad one wrote nothing");
            assert_eq!(state.clocks.len(), 1);

            // As a whole import: nothing at all is applied.
            let replica = Replica::in_memory(site(5)).expect("replica");
            let err = Merger::new(replica.conn(), knobs).import(&[good.clone(), bad.clone()]).expect_err("refused");
            assert!(is_expected(&err), "{knobs:?}: unexpected {err}");
            let state = replica.snapshot().expect("snapshot");
            assert!(state.rows.is_empty() && state.clocks.is_empty(), "an import applies completely or not at all");
        }
    }
    assert_eq!(COLUMNS.len(), 4);
}

#[test]
fn the_naive_path_sets_the_sync_bit_through_sql_and_the_tuned_path_does_not() {
    let changes = generate(ChangesetSpec { rows: 3, ..ChangesetSpec::PUBLISHED });
    let sync_bit_after_import = |knobs: MergeKnobs| {
        let replica = Replica::in_memory(site(9)).expect("replica");
        Merger::new(replica.conn(), knobs).import(&changes).expect("import");
        // The function returns the bit it replaces: off again after every apply.
        replica.conn().query_row("SELECT merge_sync_bit(0)", [], |r| r.get::<_, bool>(0))
    };
    assert!(!sync_bit_after_import(MergeKnobs::NAIVE).expect("naive registers merge_sync_bit()"));
    // While a merged value is written the bit is on: a trigger on the data
    // table reads it (setting it to what it already is).
    let replica = Replica::in_memory(site(9)).expect("replica");
    replica
        .conn()
        .execute_batch(
            "CREATE TEMP TABLE seen (bit);
             CREATE TEMP TRIGGER on_insert AFTER INSERT ON items BEGIN INSERT INTO seen VALUES (merge_sync_bit(1)); END;
             CREATE TEMP TRIGGER on_update AFTER UPDATE ON items BEGIN INSERT INTO seen VALUES (merge_sync_bit(1)); END;",
        )
        .expect("triggers");
    Merger::new(replica.conn(), MergeKnobs::NAIVE).import(&changes).expect("import");
    let (writes, on): (i64, i64) = replica
        .conn()
        .query_row("SELECT count(*), sum(bit) FROM seen", [], |r| Ok((r.get(0)?, r.get(1)?)))
        .expect("seen");
    assert_eq!((writes, on), (changes.len() as i64, changes.len() as i64), "every merged write saw the bit on");
    let tuned = sync_bit_after_import(MergeKnobs::TUNED).expect_err("the tuned path runs no such statement");
    assert!(tuned.to_string().contains("no such function"), "{tuned}");
}
