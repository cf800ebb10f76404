//! `receipt.md` of a resolution run: lane level and slice level side by
//! side, one row per injected size.

use hopscope_analyze::resolution::Resolution;
use hopscope_probe::{RunFact, RunFacts};

/// Render `r` as Markdown: lane level and slice level side by side.
pub fn markdown(r: &Resolution) -> String {
    let pct = |x: Option<f64>| x.map_or("–".to_owned(), |e| format!("{e:+.0}%"));
    let mut out = format!("# hopscope resolution: delay injected into `{}`\n\n", r.slice);
    out.push_str(
        "| injected ns | measured ns | repeats | lane: detected | lane: estimate ns | lane: error | lane: blamed slice | \
         slice: detected | slice: estimate ns | slice: error | other slices flagged | any slice flagged | \
         s per decision |\n",
    );
    out.push_str("|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|\n");
    for d in &r.deltas {
        out.push_str(&format!(
            "| {} | {:.1} | {} | {:.0}% | {:.0} | {} | {} ({:.0}%) | {:.0}% | {} | {} | {:.0}% | {:.0}% | {:.2} |\n",
            d.injected_ns,
            d.delay_measured_ns,
            if d.contended_repeats > 0 {
                format!("{} ({} contended, left out)", d.repeats, d.contended_repeats)
            } else {
                d.repeats.to_string()
            },
            d.detection_rate * 100.0,
            d.estimated_ns,
            pct(d.error_pct),
            d.attributed_slice.as_deref().unwrap_or("–"),
            d.attribution_rate * 100.0,
            d.slice_detection_rate * 100.0,
            d.slice_estimated_ns.map_or("–".to_owned(), |e| format!("{e:.1}")),
            pct(d.slice_error_pct),
            d.elsewhere_rate * 100.0,
            d.any_flag_rate * 100.0,
            d.seconds / d.repeats.max(1) as f64,
        ));
    }
    out.push_str(
        "\n*Measured ns* is what the injected busy-wait cost per call on this host, timed before the \
         repeats: the truth the estimates and their errors are held to. At 0 ns a detection is a false \
         positive. Each repeat is a crossover: two instances of the writer, four passes (`a→b`, `b→a`, \
         `a→b`, `b→a`), `b` carrying the delay in the first two and `a` in the last two; within each order \
         a pass of each carrier is matched and their rounds averaged in pairs as delayed − undelayed, so \
         the instances' own difference and the order's cancel. **Lane level**: a repeat detects when the \
         pooled rounds show a slowdown whose CI excludes zero in both orders; its estimate is the mean \
         of the two orders' effects; its blamed slice is the one whose paired growth is the most \
         significant. **Slice level**: every slice's \
         per-block interquartile means are paired by round, each slice gets a Wilcoxon signed-rank \
         p-value, Holm's procedure holds the chance of flagging any unchanged slice at 5%, and a flagged \
         slice must move the same way in both orders (pooled as the lanes are); a repeat detects when the injected slice is flagged \
         slower, and its estimate is that slice's median change. *Any slice flagged* at 0 ns is the slice \
         verdicts' family-wise false-positive rate. A decision is one repeat: both arms, both orders, \
         both verdicts. A repeat another process held the CPUs of (half its rounds waited for a CPU beyond \
         what the writer's own threads explain) counts in no rate.\n",
    );
    let meta = |fact: RunFact| r.meta.fact(&fact).unwrap_or("unknown");
    out.push_str(&format!(
        "\n- command: {}\n- commit: {}\n- sizes: {} ops per block · {} samples × 4 passes per arm\n- host: {} · {} cores\n",
        super::wording::code_span(meta(RunFact::Command)),
        meta(RunFact::Commit),
        meta(RunFact::OpsPerBlock),
        meta(RunFact::Samples),
        r.host.cpu_model,
        r.host.cores
    ));
    out
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use hopscope_analyze::resolution::{RESOLUTION_SCHEMA, Repeat, SliceRepeat, summarize};

    use super::*;

    fn repeat(detected: bool, ns: f64, slice: &str) -> Repeat {
        let injected = "locked→built";
        Repeat {
            detected,
            estimated_ns: ns,
            attributed_slice: Some(slice.to_owned()),
            slice: Some(SliceRepeat { name: injected.to_owned(), detected: slice == injected, estimated_ns: ns / 2.0 }),
            flagged: vec![slice.to_owned()],
            contended: false,
        }
    }

    #[test]
    fn a_row_reads_detections_sizes_and_blame_side_by_side() {
        let repeats = [
            repeat(true, 210.0, "locked→built"),
            repeat(true, 190.0, "locked→built"),
            repeat(false, 20.0, "sent→woke"),
            repeat(true, 205.0, "locked→built"),
            // A repeat another process slowed: counted, shown, left out.
            Repeat { contended: true, ..repeat(false, 9_000.0, "sent→woke") },
        ];
        let row = summarize(200, 201.0, "locked→built", &repeats, 12.0);
        let md = markdown(&Resolution {
            schema: RESOLUTION_SCHEMA.to_owned(),
            slice: "locked→built".to_owned(),
            deltas: vec![row],
            host: hopscope_analyze::HostInfo::detect(),
            meta: BTreeMap::new(),
        });
        assert!(
            md.contains(
                "| 200 | 201.0 | 5 (1 contended, left out) | 75% | 198 | -2% | locked→built (75%) | 75% | 98.8 | -51% | 25% | 100% | 2.40 |"
            ),
            "{md}"
        );
    }
}
