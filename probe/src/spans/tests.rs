use tracing_subscriber::layer::SubscriberExt;

use super::layer::SHARED_ID_BIT;
use super::*;
use crate::hop::{Edge, Hop, Mark, OpId, Owner, Side, SpanEdge};

fn hops(drained: &Drained, thread: &str) -> Vec<(OpId, Hop)> {
    drained.threads.iter().filter(|t| t.name == thread).flat_map(|t| t.marks.iter().map(|m| (m.op, m.hop))).collect()
}

#[test]
fn watched_spans_on_two_threads_join_into_one_operation_without_any_hand_in() {
    let layer = HopLayer::new()
        .span("send", Hop::BUILT, Some(Hop::SENT))
        .span("serve", Hop::WOKE, Some(Hop::REPLIED))
        .span_exit("wait", Hop::RECEIVED);
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
    on_thread("caller", &dispatch, || {
        tracing::info_span!("send", op = 7u64).in_scope(|| {});
        tracing::info_span!("unwatched", op = 7u64).in_scope(|| {});
        tracing::info_span!("send").in_scope(|| {});
        tracing::info_span!("wait", op = 7u64).in_scope(|| {});
    });
    on_thread("writer", &dispatch, || tracing::info_span!("serve", op = 7i64).in_scope(|| {}));
    let drained = layer.collector().drain();
    assert_eq!(
        hops(&drained, "caller"),
        [(OpId(7), Hop::BUILT), (OpId(7), Hop::SENT), (OpId(7), Hop::RECEIVED)],
        "unwatched and op-less spans mark nothing; an exit-only span marks its exit"
    );
    assert_eq!(hops(&drained, "writer"), [(OpId(7), Hop::WOKE), (OpId(7), Hop::REPLIED)]);
    let send = layer.counts().into_iter().find(|c| c.span == "send").expect("send counted");
    assert_eq!((send.closed, send.enters, send.without_op), (1, 1, 1));
}

#[test]
fn named_spans_become_hops_of_their_own_with_their_side_and_edge() {
    let layer = HopLayer::new().caller("write").writer("execute");
    let table = layer.hops();
    let enter = table.find("execute.enter").expect("declared");
    let def = table.get(enter).expect("def");
    assert_eq!(def.side, Side::Writer);
    assert_eq!(def.span, Some(SpanEdge { span: "execute".into(), edge: Edge::Enter }));
    assert_eq!(table.get(table.find("write.exit").expect("declared")).map(|d| d.side), Some(Side::Caller));
    assert_eq!(table.len(), 16, "the standard ten, the two closing ones, then two per span");
}

#[test]
fn each_kind_of_span_declares_who_owns_its_inside() {
    let layer = HopLayer::new()
        .caller("insert")
        .writer("harvest")
        .database("execute")
        .wait("wait")
        .span("own", Hop::BUILT, None)
        .span_exit("after", Hop::LOCKED)
        .owned_by("after", Owner::Caller);
    assert_eq!(layer.problem(), None);
    let table = layer.hops();
    let owns = |name: &str| table.get(table.find(name).expect("declared")).and_then(|d| d.owns);
    assert_eq!(owns("insert.exit"), None, "the subject's own code: undeclared, library");
    assert_eq!(owns("harvest.exit"), None);
    assert_eq!(owns("execute.exit"), Some(Owner::Sqlite));
    assert_eq!(owns("execute.enter"), None, "the slice ending at the enter is not the database's");
    assert_eq!(owns("wait.exit"), Some(Owner::Wait));
    assert_eq!(owns("locked"), Some(Owner::Caller), "owned_by declares a mapped span's exit hop");
    // What cannot be declared is a problem naming the span, not a panic.
    let problem = |layer: HopLayer| layer.problem().map(str::to_owned).unwrap_or_default();
    assert!(problem(HopLayer::new().owned_by("nope", Owner::Sqlite)).contains("`nope` is not watched"));
    assert!(problem(HopLayer::new().span("own", Hop::BUILT, None).owned_by("own", Owner::Sqlite)).contains("no exit"));
    assert!(problem(HopLayer::new().caller("x").owned_by("x", Owner::Boundary)).contains("boundary"));
}

#[test]
fn an_op_id_recorded_after_creation_still_binds_the_span() {
    let layer = HopLayer::new().caller("late");
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
    tracing::dispatcher::with_default(&dispatch, || {
        let span = tracing::info_span!("late", op = tracing::field::Empty);
        span.in_scope(|| {
            tracing::Span::current().record("op", 42u64);
        });
    });
    let ops: Vec<u64> = layer.collector().drain().threads.iter().flat_map(|t| &t.marks).map(|m| m.op.0).collect();
    assert_eq!(ops, [42, 42], "enter and exit, both carrying the late id");
}

#[test]
fn a_span_entered_on_every_poll_marks_its_first_enter_and_last_exit_across_threads() {
    let layer = HopLayer::new().caller("poll");
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
    let span = tracing::dispatcher::with_default(&dispatch, || tracing::info_span!("poll", op = 5u64));
    // Three polls, the second on another thread, as a future that moves.
    let poll = |span: &tracing::Span| span.in_scope(|| std::hint::black_box(()));
    tracing::dispatcher::with_default(&dispatch, || poll(&span));
    let moved = span.clone();
    let other = dispatch.clone();
    std::thread::spawn(move || tracing::dispatcher::with_default(&other, || poll(&moved))).join().expect("thread");
    tracing::dispatcher::with_default(&dispatch, || {
        poll(&span);
        drop(span);
    });
    let drained = layer.collector().drain();
    let marks: Vec<Mark> = drained.threads.iter().flat_map(|t| t.marks.clone()).collect();
    assert_eq!(marks.len(), 2, "one enter and one exit for three polls: {marks:?}");
    let enter = layer.hops().find("poll.enter").expect("hop");
    assert_eq!(marks[0].hop, enter);
    assert!(marks[0].ticks < marks[1].ticks);
    let counts = layer.counts();
    assert_eq!((counts[0].closed, counts[0].enters), (1, 3), "the polls are counted");
}

#[test]
fn every_enter_mode_marks_each_poll() {
    let layer = HopLayer::new().caller("poll").edges(Edges::EveryEnter);
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
    tracing::dispatcher::with_default(&dispatch, || {
        let span = tracing::info_span!("poll", op = 1u64);
        span.in_scope(|| {});
        span.in_scope(|| {});
    });
    assert_eq!(layer.collector().drain().marks(), 4);
}

#[test]
fn two_subscribers_sharing_a_layer_keep_their_spans_apart() {
    // Two registries hand out the same ids: each gets its own binding table.
    let layer = HopLayer::new().span("send", Hop::BUILT, Some(Hop::SENT));
    let first = tracing::Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
    let second = tracing::Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
    let a = tracing::dispatcher::with_default(&first, || tracing::info_span!("send", op = 1u64));
    let b = tracing::dispatcher::with_default(&second, || tracing::info_span!("send", op = 2u64));
    assert_eq!(a.id(), b.id(), "the test needs colliding ids");
    tracing::dispatcher::with_default(&first, || a.in_scope(|| {}));
    tracing::dispatcher::with_default(&second, || b.in_scope(|| {}));
    tracing::dispatcher::with_default(&first, || drop(a));
    tracing::dispatcher::with_default(&second, || drop(b));
    let mut ops: Vec<u64> = layer.collector().drain().threads.iter().flat_map(|t| &t.marks).map(|m| m.op.0).collect();
    ops.sort_unstable();
    assert_eq!(ops, [1, 1, 2, 2]);
}

#[test]
fn a_bad_declaration_is_a_problem_not_a_panic() {
    assert!(HopLayer::new().span("x", Hop(900), None).problem().is_some_and(|p| p.contains("outside the hop table")));
    assert!(HopLayer::new().ring_marks(0).problem().is_some());
    let mut many = HopLayer::new();
    for i in 0..=MAX_WATCHES {
        many = many.caller(&format!("s{i}"));
    }
    assert!(many.problem().is_some_and(|p| p.contains("watched spans")));
    assert!(HopLayer::new().caller("fine").problem().is_none());
}

#[test]
fn the_switch_creates_no_span_while_no_layer_is_active_and_marks_through_the_active_one() {
    let layer = HopLayer::new().caller("work");
    let switch = LayerSwitch::new();
    let index = switch.add(&layer);
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(switch.clone()));
    let run = || {
        tracing::dispatcher::with_default(&dispatch, || {
            let span = tracing::info_span!("work", op = 3u64);
            let created = !span.is_disabled();
            span.in_scope(|| {});
            created
        })
    };
    assert!(!run(), "clean: the span is not even created");
    switch.activate(Some(index));
    assert!(run(), "probed: the span is created and marks");
    switch.activate(None);
    assert_eq!(layer.collector().drain().marks(), 2);
}

#[test]
fn a_span_closed_after_the_switch_moved_on_still_frees_its_slot() {
    let layer = HopLayer::new().caller("work");
    let switch = LayerSwitch::new();
    let index = switch.add(&layer);
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(switch.clone()));
    switch.activate(Some(index));
    let span = tracing::dispatcher::with_default(&dispatch, || tracing::info_span!("work", op = 9u64));
    span.in_scope(|| {});
    switch.activate(None);
    tracing::dispatcher::with_default(&dispatch, || drop(span));
    let active = switch.active_layer();
    assert!(active.is_none());
    assert_eq!(layer.collector().drain().marks(), 2, "its marks are handed over at close");
}

#[test]
fn the_machinery_measurement_states_every_kind() {
    let m = std::thread::spawn(|| machinery::measure(300)).join().expect("thread");
    for (what, ns) in [
        ("inside", m.inside_ns),
        ("between", m.between_ns),
        ("into", m.into_ns),
        ("out of", m.out_of_ns),
        ("bare mark", m.bare_mark_ns),
        ("span life", m.span_life_ns),
        ("registry life", m.registry_life_ns),
    ] {
        assert!(ns.is_finite() && ns > 0.0, "{what}: {ns}");
    }
    assert!(m.samples >= 300, "every empty operation joined: {}", m.samples);
}

#[test]
fn settle_waits_for_a_span_closing_on_another_thread() {
    let layer = HopLayer::new().writer("reply");
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
    let entered = std::sync::Arc::new(std::sync::Barrier::new(2));
    let writer = {
        let (dispatch, entered) = (dispatch.clone(), entered.clone());
        std::thread::spawn(move || {
            tracing::dispatcher::with_default(&dispatch, || {
                let span = tracing::info_span!("reply", op = 1u64).entered();
                entered.wait();
                std::thread::sleep(std::time::Duration::from_millis(30));
                drop(span);
            });
        })
    };
    entered.wait();
    let mut long_lived = Vec::new();
    layer.settle(std::time::Duration::from_secs(5), &mut long_lived);
    assert!(long_lived.is_empty());
    assert_eq!(layer.collector().drain().marks(), 2, "the span closed before the drain");
    writer.join().expect("writer");
    // A span that outlives the wait is remembered and not waited for again.
    let held = tracing::dispatcher::with_default(&dispatch, || tracing::info_span!("reply", op = 2u64));
    layer.settle(std::time::Duration::from_millis(5), &mut long_lived);
    assert_eq!(long_lived.len(), 1);
    let start = std::time::Instant::now();
    layer.settle(std::time::Duration::from_secs(5), &mut long_lived);
    assert!(start.elapsed() < std::time::Duration::from_secs(5));
    drop(held);
}

/// `f` on a thread named `name`, under `dispatch`.
fn on_thread(name: &str, dispatch: &tracing::Dispatch, f: impl FnOnce() + Send + 'static) {
    let dispatch = dispatch.clone();
    std::thread::Builder::new()
        .name(name.to_owned())
        .spawn(move || tracing::dispatcher::with_default(&dispatch, f))
        .expect("spawn")
        .join()
        .expect("thread");
}

#[test]
fn the_profiling_subscriber_marks_what_the_layer_marks_without_a_registry() {
    let subscriber = HopLayer::new()
        .span("send", Hop::BUILT, Some(Hop::SENT))
        .span("serve", Hop::WOKE, Some(Hop::REPLIED))
        .span_exit("wait", Hop::RECEIVED)
        .subscriber();
    let dispatch = tracing::Dispatch::new(subscriber.clone());
    on_thread("caller", &dispatch, || {
        tracing::info_span!("send", op = 7u64).in_scope(|| {});
        tracing::info_span!("unwatched", op = 7u64).in_scope(|| {});
        tracing::info_span!("send").in_scope(|| {});
        // An id recorded after creation, and a span whose handle is cloned:
        // its marks come when the last handle closes.
        let late = tracing::info_span!("wait", op = tracing::field::Empty);
        late.record("op", 7u64);
        let again = late.clone();
        late.in_scope(|| {});
        drop(late);
        again.in_scope(|| {});
    });
    on_thread("writer", &dispatch, || tracing::info_span!("serve", op = 7i64).in_scope(|| {}));
    let drained = subscriber.layer().collector().drain();
    assert_eq!(hops(&drained, "caller"), [(OpId(7), Hop::BUILT), (OpId(7), Hop::SENT), (OpId(7), Hop::RECEIVED)]);
    assert_eq!(hops(&drained, "writer"), [(OpId(7), Hop::WOKE), (OpId(7), Hop::REPLIED)]);
    let counts = subscriber.layer().counts();
    let of = |span: &str| counts.iter().find(|c| c.span == span).map(|c| (c.closed, c.enters, c.without_op));
    assert_eq!(of("send"), Some((1, 1, 1)));
    assert_eq!(of("wait"), Some((1, 2, 0)), "one span, entered through both handles");
    // Every slot is free again: nothing waits to close.
    let mut long_lived = Vec::new();
    subscriber.layer().settle(std::time::Duration::ZERO, &mut long_lived);
    assert!(long_lived.is_empty(), "{long_lived:?}");
}

#[test]
fn the_profiling_subscriber_creates_no_unwatched_span_and_counts_what_finds_no_slot() {
    let subscriber = HopLayer::new().span("op", Hop::ENTER, Some(Hop::DONE)).subscriber();
    let dispatch = tracing::Dispatch::new(subscriber.clone());
    tracing::dispatcher::with_default(&dispatch, || {
        assert!(tracing::info_span!("unwatched").is_disabled(), "never created");
        assert!(!tracing::info_span!("op", op = 1u64).is_disabled());
        // More live at once than the table holds: the rest are counted.
        let held: Vec<tracing::Span> = (0..MAX_LIVE_SPANS + 10).map(|i| tracing::info_span!("op", op = i)).collect();
        assert_eq!(subscriber.layer().unbound(), 10);
        drop(held);
    });
    let drained = subscriber.layer().collector().drain();
    let marks: usize = drained.threads.iter().map(|t| t.marks.len()).sum();
    // Spans never entered hand over no marks; none was lost or doubled.
    assert_eq!(marks, 0);
    let op = subscriber.layer().counts().into_iter().find(|c| c.span == "op").expect("counted");
    assert_eq!(op.closed, MAX_LIVE_SPANS as u64 + 1, "every bound span closed once");
}

/// The shapes a program's slices take: a sibling's whole life between two
/// exits, a child closed inside its parent's last slice, an unwatched span,
/// a span entered twice.
fn shapes(op: u64) {
    let _write = tracing::info_span!("write", op).entered();
    tracing::info_span!("execute", op).in_scope(|| {});
    // execute.exit → reply.exit: close, create, enter (unmarked) inside.
    tracing::info_span!("reply", op).in_scope(|| {});
    tracing::info_span!("noise").in_scope(|| {});
    let wait = tracing::info_span!("wait", op);
    wait.in_scope(|| {});
    wait.in_scope(|| {});
    drop(wait);
    // wait.exit → write.exit: the wait closes inside.
}

fn shape_layer() -> HopLayer {
    HopLayer::new().caller("write").caller("execute").span_exit("reply", Hop::REPLIED).span_exit("wait", Hop::RECEIVED)
}

fn sequences(layer: &HopLayer) -> Vec<(String, String, crate::SpanEvents, bool)> {
    let name = |hop: Hop| layer.hops().get(hop).map_or(format!("#{}", hop.0), |d| d.name.clone());
    let mut found: Vec<_> =
        layer.take_sequences().into_iter().map(|s| (name(s.from), name(s.to), s.events, s.varied)).collect();
    found.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    found
}

#[test]
fn both_paths_record_the_span_events_inside_each_slice() {
    use crate::SpanEvents as E;
    let registry = shape_layer();
    let profiling = shape_layer().subscriber();
    let dispatches = [
        (tracing::Dispatch::new(tracing_subscriber::registry().with(registry.clone())), registry.clone()),
        (tracing::Dispatch::new(profiling.clone()), profiling.layer().clone()),
    ];
    for (path, (dispatch, layer)) in dispatches.iter().enumerate() {
        on_thread("shapes", dispatch, || (1..=3).for_each(shapes));
        let found = sequences(layer);
        let get = |from: &str, to: &str| {
            found.iter().find(|f| f.0 == from && f.1 == to).map(|f| (f.2, f.3)).unwrap_or_else(|| panic!("{found:?}"))
        };
        let plain = |e: E| (e, false);
        assert_eq!(get("write.enter", "execute.enter"), plain(E { creates: 1, ..E::default() }), "path {path}");
        assert_eq!(get("execute.enter", "execute.exit"), plain(E::default()));
        // Only the Registry path sees the unwatched span (the profiling
        // subscriber never creates it).
        let unwatched = if path == 0 { 4 } else { 0 };
        assert_eq!(get("execute.exit", "replied"), plain(E { creates: 1, closes: 1, enters: 1, ..E::default() }));
        let wait = get("replied", "received").0;
        assert_eq!((wait.creates, wait.closes, wait.enters, wait.unwatched), (1, 1, 1, unwatched));
        // The wait is entered twice: its first exit is followed by its
        // second, which is what says its slice is not one sequence.
        assert!(get("received", "received").0.reentered);
        assert_eq!(get("received", "write.exit"), plain(E { closes: 1, ..E::default() }));
    }
}

/// One batch under `dispatch`: three requests' spans, then a shared
/// `commit` span that serves them, linked by `serves` or `follows_from`.
fn batch(dispatch: &tracing::Dispatch, by_follows: bool) {
    tracing::dispatcher::with_default(dispatch, || {
        let requests: Vec<tracing::Span> = (1..=3u64).map(|op| tracing::info_span!("execute", op)).collect();
        for request in &requests {
            request.in_scope(|| {});
        }
        let commit = tracing::info_span!("commit", serves = tracing::field::Empty);
        for (op, request) in (1..=3u64).zip(&requests) {
            if by_follows {
                commit.follows_from(request);
            } else {
                commit.record("serves", op);
            }
        }
        commit.in_scope(|| {});
    });
}

/// The links in `drained`, `(member, shared interval)`, and the ops the
/// `commit` span's two marks carry.
fn links_and_commit(layer: &HopLayer, drained: &Drained) -> (Vec<(u64, u64)>, Vec<u64>) {
    let marks: Vec<&Mark> = drained.threads.iter().flat_map(|t| &t.marks).collect();
    let links = marks.iter().filter_map(|m| m.link().map(|shared| (m.op.0, shared.0))).collect();
    let (enter, exit) = (layer.hops().find("commit.enter"), layer.hops().find("commit.exit"));
    let commit = marks.iter().filter(|m| Some(m.hop) == enter || Some(m.hop) == exit).map(|m| m.op.0).collect();
    (links, commit)
}

/// How a test reaches a layer: directly, or through the switches the
/// harness installs globally (a link the switch drops is lost to a
/// harness run however well the layer makes it).
#[derive(Debug, Clone, Copy)]
enum Path {
    Layer,
    Profiling,
    LayerSwitch,
    SubscriberSwitch,
}

fn dispatch_for(layer: &HopLayer, path: Path) -> tracing::Dispatch {
    match path {
        Path::Layer => tracing::Dispatch::new(tracing_subscriber::registry().with(layer.clone())),
        Path::Profiling => tracing::Dispatch::new(layer.clone().subscriber()),
        Path::LayerSwitch => {
            let switch = LayerSwitch::new();
            let index = switch.add(layer);
            switch.activate(Some(index));
            tracing::Dispatch::new(tracing_subscriber::registry().with(switch))
        }
        Path::SubscriberSwitch => {
            let switch = super::SubscriberSwitch::new();
            let number = switch.add(layer).expect("room for a layer");
            switch.activate(Some(number));
            tracing::Dispatch::new(switch)
        }
    }
}

#[test]
fn a_shared_span_marks_once_under_its_own_id_and_links_each_operation_it_serves() {
    for by_follows in [false, true] {
        for path in [Path::Layer, Path::Profiling, Path::LayerSwitch, Path::SubscriberSwitch] {
            let profiling = format!("{path:?}");
            let layer = HopLayer::new().database("execute").shared("commit").owned_by("commit", Owner::Sqlite);
            assert_eq!(layer.problem(), None);
            let dispatch = dispatch_for(&layer, path);
            batch(&dispatch, by_follows);
            let (links, commit) = links_and_commit(&layer, &layer.collector().drain());
            let shared = commit.first().copied().expect("the commit span marked");
            assert_eq!(commit, [shared, shared], "enter and exit, once, under one id");
            assert!(shared & SHARED_ID_BIT != 0, "an id of its own, apart from the ops': {shared:#x}");
            assert_eq!(links, [(1, shared), (2, shared), (3, shared)], "follows_from {by_follows}, path {profiling}");
            assert_eq!(layer.unlinked(), 0);
        }
    }
    // An operation recorded into a span that is no shared interval links
    // nothing, and is counted.
    let layer = HopLayer::new().writer("commit");
    let dispatch = tracing::Dispatch::new(tracing_subscriber::registry().with(layer.clone()));
    batch(&dispatch, false);
    assert_eq!(links_and_commit(&layer, &layer.collector().drain()).0, []);
    assert_eq!(layer.unlinked(), 3);
}
