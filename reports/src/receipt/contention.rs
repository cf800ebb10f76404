//! A contended run in words: the verdict line when another process held
//! the run's CPUs, and the line naming the rounds left out of every figure
//! ([`hopscope_analyze::contention::ContendedRun`], [`DroppedRounds`]).

use hopscope_analyze::contention::{ContendedRun, Contention, DroppedRounds};

/// The headline's verdict line of a contended run.
pub fn line(c: &ContendedRun) -> String {
    let placed = c.placed.as_ref().map_or(String::new(), |p| {
        format!(
            " In `{}`'s slices they showed most in `{}` ({:.2} µs per µs waited).",
            p.lane, p.slice, p.per_us_waited
        )
    });
    format!(
        "another process held this run's CPUs: {} of {} rounds waited for it; in `{}`'s {} such blocks of {} its \
         threads waited for a CPU {:.1} µs per write of {:.1} µs (summed over its threads; {:.0}% of its wall time in \
         its median block).{placed} The figures below measure that, not the write path, and no verdict is drawn from \
         them. Run on a quieter machine, or give the run cores of its own (--placement).",
        c.contended_rounds,
        c.rounds,
        c.lane,
        c.contended_blocks,
        c.blocks,
        c.waits_us,
        c.wall_us,
        c.share * 100.0,
    )
}

/// The line saying which rounds were left out.
pub fn dropped_line(d: &DroppedRounds) -> String {
    let lanes: Vec<String> = d.lanes.iter().map(|(lane, waited, of)| format!("{lane} {waited} of {of}")).collect();
    format!(
        "{} of {} rounds waited for another process (blocks: {}) and were left out of every figure; the rest are \
         clean",
        d.contended_rounds,
        d.rounds,
        lanes.join(", ")
    )
}

/// `c`'s verdict line, when the run was contended.
pub fn verdict_line(c: Option<&Contention>) -> Option<String> {
    c.and_then(Contention::verdict).as_ref().map(line)
}

/// `c`'s left-out line, when rounds were left out.
pub fn left_out_line(c: Option<&Contention>) -> Option<String> {
    c.and_then(Contention::dropped).as_ref().map(dropped_line)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    /// A run whose writer waited in 30 of its 40 rounds, for the tests of
    /// every sentence that quotes a contended run.
    pub(crate) fn contended() -> ContendedRun {
        ContendedRun {
            rounds: 40,
            contended_rounds: 30,
            lane: "writer".into(),
            contended_blocks: 30,
            blocks: 40,
            waits_us: 11.0,
            wall_us: 18.0,
            share: 0.61,
            placed: None,
        }
    }

    #[test]
    fn the_lines_say_the_rounds_the_lane_and_its_waits() {
        let run = ContendedRun {
            rounds: 9,
            contended_rounds: 7,
            lane: "floor".into(),
            contended_blocks: 7,
            blocks: 9,
            waits_us: 110.0,
            wall_us: 128.0,
            share: 0.86,
            placed: None,
        };
        let said = line(&run);
        assert!(
            said.contains(
                "7 of 9 rounds waited for it; in `floor`'s 7 such blocks of 9 its threads waited for a CPU 110.0 µs \
                 per write of 128.0 µs"
            ),
            "{said}"
        );
        let dropped = DroppedRounds { rounds: 9, contended_rounds: 2, lanes: vec![("floor".into(), 2, 9)] };
        let said = dropped_line(&dropped);
        assert!(said.starts_with("2 of 9 rounds") && said.contains("floor 2 of 9"), "{said}");
    }
}
