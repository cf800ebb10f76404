//! `hopscope calibrate`'s table: what the instrument costs on this host,
//! as a terminal reads it.

use std::fmt::Write as _;

use hopscope_probe::calibrate::{HostCalibration, MAX_MARK_TO_CLOCK_RATIO};
use hopscope_probe::{SliceKind, SpanMachinery};

/// The clock, a mark against a bare clock read, the counters, and the span
/// machinery, one fact per line.
pub fn table(c: &HostCalibration) -> String {
    let mut out = String::new();
    // Writing to a String cannot fail.
    let _ = host_lines(c, &mut out).and_then(|()| span_lines(&c.span_machinery, &mut out));
    out
}

fn host_lines(c: &HostCalibration, out: &mut String) -> std::fmt::Result {
    let (clock, host) = (&c.clock, &c.host);
    let ghz = 1.0 / clock.ns_per_tick;
    writeln!(out, "host          {} · {} cores · kernel {}", host.cpu_model, host.cores, host.kernel)?;
    writeln!(
        out,
        "clock         {} · {:.6} ns/tick ({ghz:.3} GHz) · invariant TSC: {} · kernel clocksource: {}",
        clock.source,
        clock.ns_per_tick,
        if clock.invariant_tsc { "yes" } else { "no" },
        clock.kernel_clocksource
    )?;
    match clock.grain_ticks {
        Some(g) => writeln!(
            out,
            "clock grain   {:>6.2} ns  ({g} ticks: no two reads differ by less; a slice within two grains is not resolved)",
            clock.to_ns(g)
        )?,
        None => writeln!(out, "clock grain   not measured")?,
    }
    let (read, mark) = (&c.costs.clock_read, &c.costs.mark);
    writeln!(
        out,
        "clock read    {:>6.2} ns  (median of {} rounds × 1000, MAD {:.2} ns)",
        read.median_ns, read.rounds, read.mad_ns
    )?;
    writeln!(
        out,
        "probe mark    {:>6.2} ns  (median of {} rounds × 1000, MAD {:.2} ns)",
        mark.median_ns, mark.rounds, mark.mad_ns
    )?;
    let verdict = if c.mark_within_contract() { "within" } else { "ABOVE" };
    writeln!(
        out,
        "mark / clock  {:>6.2}×     ({verdict} the {MAX_MARK_TO_CLOCK_RATIO}× target)",
        c.costs.mark_to_clock_ratio
    )?;
    writeln!(out, "counters")?;
    for counter in &c.counters {
        writeln!(out, "  {:<17} {}", counter.counter.name(), counter.support)?;
    }
    Ok(())
}

/// The span machinery next to bare marks: what a `tracing` span costs whole,
/// and what it leaves inside each kind of slice.
fn span_lines(m: &SpanMachinery, out: &mut String) -> std::fmt::Result {
    writeln!(out, "tracing spans (Registry + HopLayer, medians of {} empty operations)", m.samples)?;
    writeln!(
        out,
        "  span life      {:>7.1} ns  create + enter + exit + close (bare Registry: {:.1} ns, HopLayer adds {:+.1} ns)",
        m.span_life_ns,
        m.registry_life_ns,
        m.span_life_ns - m.registry_life_ns
    )?;
    writeln!(out, "  inside a slice (what a slice between two edges holds besides your code):")?;
    writeln!(out, "    {:<36} {:>7.1} ns", "two probe marks (hop!)", m.bare_mark_ns)?;
    for kind in [SliceKind::Inside, SliceKind::Between, SliceKind::Into, SliceKind::OutOf] {
        let ns = m.share_ns(kind);
        writeln!(out, "    {:<36} {:>7.1} ns  ({:.1}× a hop! slice)", kind.describe(), ns, ns / m.bare_mark_ns)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use hopscope_probe::calibrate::{Cost, Costs};
    use hopscope_probe::counters::{Counter, CounterSupport, Support};
    use hopscope_probe::{ClockInfo, HostInfo, SpanPath};

    use super::*;

    fn calibration(ratio: f64) -> HostCalibration {
        let cost = |ns: f64| Cost { median_ns: ns, mad_ns: 0.5, rounds: 301 };
        HostCalibration {
            clock: ClockInfo::measure(),
            host: HostInfo::detect(),
            costs: Costs { clock_read: cost(10.0), mark: cost(10.0 * ratio), mark_to_clock_ratio: ratio },
            counters: vec![
                CounterSupport { counter: Counter::TaskClock, support: Support::Supported },
                CounterSupport { counter: Counter::Cycles, support: Support::Unsupported { reason: "ENOENT".into() } },
            ],
            span_machinery: SpanMachinery {
                path: SpanPath::default(),
                inside_ns: 120.0,
                between_ns: 60.0,
                into_ns: 200.0,
                out_of_ns: 180.0,
                bare_mark_ns: 20.0,
                span_life_ns: 400.0,
                registry_life_ns: 300.0,
                samples: 1_000,
                edges: None,
            },
        }
    }

    #[test]
    fn the_table_says_each_cost_and_holds_the_mark_to_its_contract() {
        let within = table(&calibration(1.2));
        assert!(within.contains("mark / clock    1.20×     (within the 1.5× target)"), "{within}");
        assert!(within.contains("  cycles            unsupported: ENOENT"), "{within}");
        assert!(within.contains("  task-clock        supported"), "{within}");
        assert!(within.contains("HopLayer adds +100.0 ns"), "{within}");
        assert!(table(&calibration(2.0)).contains("(ABOVE the 1.5× target)"));
    }

    #[test]
    fn the_json_keeps_its_documented_keys() {
        let json = serde_json::to_value(calibration(1.2)).expect("serializes");
        assert_eq!(json["schema"], "hopscope.calibration/1");
        assert_eq!(json["mark_to_clock_target"], MAX_MARK_TO_CLOCK_RATIO);
        assert_eq!(json["counters"]["cycles"], "unsupported: ENOENT");
        assert_eq!(json["spread"]["rounds"], 301);
        assert_eq!(json["span_machinery"]["samples"], 1_000);
    }
}
