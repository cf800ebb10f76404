//! Runs the shapes program marked by spans and by direct marks, placement
//! by placement, and holds each span slice to the direct one.

use hopscope_harness::{Placement, SpanProbe};

use crate::program::{self, EVENTS, Sliced, WAITS};

/// How far a span slice net of its stated machinery may land from the
/// same slice marked directly, in an optimised build: this, or twice the
/// machinery stated (the Registry's creation and close cost ~0.1 µs each
/// measured on a warm thread, and up to twice that on a writer woken on a
/// core of its own). An unoptimised build is not held to it: the
/// program's `tracing` macros run unoptimised there while the calibration
/// (in the optimised probe) does not. The figures are printed; those of
/// release runs go in the notes.
const TOLERANCE_US: f64 = 0.25;

/// Run both markings in every placement (`HOPSCOPE_SHAPES_RUNS` times
/// each), print every slice, and check each.
pub(crate) fn every_placement(path: &str, spans: impl Fn() -> SpanProbe) {
    crate::common::ns_per_tick();
    let runs: usize = std::env::var("HOPSCOPE_SHAPES_RUNS").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let placements: Vec<Placement> =
        Placement::ALL.into_iter().filter(|p| hopscope_harness::placement::unachievable(*p).is_none()).collect();
    for placement in placements {
        for run in 0..runs {
            let slices = program::run(placement, spans(), path);
            check(path, placement, run, &slices);
        }
    }
}

fn check(path: &str, placement: Placement, run: usize, slices: &[Sliced]) {
    for (name, _) in WAITS {
        let s = slices.iter().find(|s| s.name == name).unwrap_or_else(|| panic!("no slice {name}"));
        let Some(machinery) = s.machinery_us else {
            panic!("{name}: a span slice states its machinery ({:?})", s.unknown);
        };
        // Stated for the events that really lie between its two edges.
        let events = s.events.unwrap_or_else(|| panic!("{name}: its span events are recorded"));
        let expected = EVENTS.iter().find(|(n, _)| *n == name).map(|(_, e)| *e);
        let seen =
            [events.creates, events.closes, events.creates_root, events.closes_root, events.enters, events.exits];
        let expected = expected.unwrap_or_else(|| panic!("{name}: no expected events"));
        if path == "registry" {
            assert_eq!(seen, expected, "{name}");
        } else {
            // The profiling subscriber keeps no span stack: a span is a
            // root only when created with `parent: None`, and its cost does
            // not depend on a parent. Creations and closes in all.
            let folded = |e: [u8; 6]| [e[0] + e[2], e[1] + e[3], e[4], e[5]];
            assert_eq!(folded(seen), folded(expected), "{name}");
        }
        assert_eq!((events.unwatched, events.reentered), (0, false), "{name}");
        let raw = s.spans_us - s.direct_us;
        let net = raw - machinery;
        eprintln!(
            "shapes {path} {placement} run {run}: {name:<28} direct {:>6.3} · spans {:>6.3} · raw {raw:+.3} · \
             machinery {machinery:.3} · net {net:+.3}",
            s.direct_us, s.spans_us
        );
        assert!(
            cfg!(debug_assertions) || net.abs() <= TOLERANCE_US.max(2.0 * machinery),
            "{path} {placement}: {name} net {net:+.3} µs off the direct marks ({machinery:.3} stated)"
        );
    }
}
