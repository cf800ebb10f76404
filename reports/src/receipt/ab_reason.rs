//! An A/B outcome's reasons in words
//! ([`hopscope_analyze::ab_reason::AbReason`]), as the receipt, the page,
//! the merge receipt and the terminal say them.

use hopscope_analyze::ab_reason::AbReason;
use hopscope_analyze::recorded::Recorded;

/// A recorded reason in words (an older outcome's sentence as it was).
pub fn reason(recorded: &Recorded<AbReason>) -> String {
    match recorded {
        Recorded::Typed(r) => typed(r),
        Recorded::Sentence(said) => said.clone(),
    }
}

fn direction(faster: bool) -> &'static str {
    if faster { "faster" } else { "slower" }
}

/// A typed reason in words: each group of reasons said by a function of
/// its own, every variant named here so a new one must be placed.
fn typed(r: &AbReason) -> String {
    let said = match r {
        AbReason::Contended(waited) => Some(format!("no verdict: {}", super::contention::line(waited))),
        AbReason::ControlMoved { .. }
        | AbReason::SpreadApart { .. }
        | AbReason::SignFlipped
        | AbReason::DriftDwarfed { .. }
        | AbReason::TwoModes { .. }
        | AbReason::NoPass
        | AbReason::OneOrder
        | AbReason::EveryPass { .. }
        | AbReason::BelowRule { .. } => within_passes(r),
        AbReason::TooFewPasses { .. }
        | AbReason::ControlAcross { .. }
        | AbReason::SpreadAcross { .. }
        | AbReason::OrdersDisagree { .. }
        | AbReason::WithinLayouts { .. }
        | AbReason::Across { .. }
        | AbReason::BelowRuleAcross { .. } => across_processes(r),
        AbReason::Unaccounted { .. } | AbReason::BySlices { .. } => by_slices(r),
    };
    said.unwrap_or_default()
}

/// A reason a verdict of passes gives, in words: a pass whose control
/// moved or whose arms spread apart, the orders' signs, the drift, an arm
/// of two paces, the passes' effect against the rule; `None` for any
/// other reason.
fn within_passes(r: &AbReason) -> Option<String> {
    Some(match r {
        AbReason::ControlMoved { pass, order, pct, max_pct } => {
            format!("pass {pass} ({order}): the control moved {pct:+.1}%, more than the {max_pct:.1}% allowed")
        }
        AbReason::SpreadApart { pass, order, spread_a, spread_b } => {
            let (lo, hi) = (spread_a.min(*spread_b), spread_a.max(*spread_b));
            format!(
                "pass {pass} ({order}): one arm's spread is {:.1}× the other's ({:.1}% vs {:.1}%)",
                hi / lo,
                spread_a * 100.0,
                spread_b * 100.0
            )
        }
        AbReason::SignFlipped => "flipping the order flipped the sign of the effect".to_owned(),
        AbReason::DriftDwarfed { smallest_effect_pct, largest_drift_pct, ratio } => format!(
            "every pass's effect (the smallest {smallest_effect_pct:.1}% of A) is at least {ratio:.0}× the control's \
             move and at least the wider arm's spread found beside it (at most {largest_drift_pct:.1}%): that drift \
             cannot explain it, so the effect is judged and the drift stated"
        ),
        AbReason::TwoModes { arm, low_us, high_us, low_blocks, high_blocks } => format!(
            "arm {} ran at two paces: {low_blocks} blocks near {low_us:.2} µs per operation, {high_blocks} near \
             {high_us:.2} (a writer that batches some blocks and not others, or a cost that comes and goes)",
            arm.to_uppercase()
        ),
        AbReason::NoPass => "no pass has both arms measured".to_owned(),
        AbReason::OneOrder => "the rule asks for both orders and only one ran".to_owned(),
        AbReason::EveryPass { faster } => {
            format!("B is {} than A in every pass, beyond the rule's thresholds", direction(*faster))
        }
        AbReason::BelowRule { pass, order, delta_us: d, delta_pct } => format!(
            "pass {pass} ({order}): Δ {:+.3} µs ({delta_pct:+.1}%), CI {:+.3}…{:+.3}: below the rule",
            d.median, d.ci95[0], d.ci95[1]
        ),
        _ => return None,
    })
}

/// A reason a verdict across fresh processes gives, in words: too few
/// passes, the control or the spread across them, the orders apart, a
/// change within the layouts' spread, the effect against the rule; `None`
/// for any other reason.
fn across_processes(r: &AbReason) -> Option<String> {
    Some(match r {
        AbReason::TooFewPasses { passes, min } => {
            format!("{passes} pass(es) have both arms measured; a verdict across processes needs at least {min}")
        }
        AbReason::ControlAcross { pct, passes, max_pct } => format!(
            "the control (a second process of build A) differs from A by {pct:+.1}% on average over {passes} passes, \
             more than the {max_pct:.1}% allowed"
        ),
        AbReason::SpreadAcross { spread_a, spread_b } => {
            let (lo, hi) = (spread_a.min(*spread_b), spread_a.max(*spread_b));
            format!(
                "one arm's blocks spread {:.1}× the other's ({:.1}% vs {:.1}%, medians over passes)",
                hi / lo,
                spread_a * 100.0,
                spread_b * 100.0
            )
        }
        AbReason::OrdersDisagree { by_order } => {
            let orders: Vec<String> = by_order.iter().map(|(o, m)| format!("{o} {m:+.3} µs")).collect();
            format!("the orders disagree ({}): the effect follows the order", orders.join(", "))
        }
        AbReason::WithinLayouts { mean_us, ci, level_pct, spread_us, pairs } => format!(
            "B − A {mean_us:+.3} µs ({level_pct:.0}% CI {:+.3}…{:+.3}) is no larger than two builds of build A's \
             commit differ by their layout alone ({spread_us:.3} µs, the largest of {pairs} layout pairs): not called",
            ci[0], ci[1]
        ),
        AbReason::Across { mean_us, ci, level_pct, passes } => format!(
            "B is {} than A by {mean_us:+.3} µs per write ({level_pct:.0}% CI {:+.3}…{:+.3}) over {passes} passes, \
             each by fresh processes, beyond the rule's thresholds",
            direction(*mean_us < 0.0),
            ci[0],
            ci[1]
        ),
        AbReason::BelowRuleAcross { mean_us, pct, ci, level_pct, passes } => format!(
            "Δ {mean_us:+.3} µs ({pct:+.2}%), {level_pct:.0}% CI {:+.3}…{:+.3} over {passes} passes: below the rule",
            ci[0], ci[1]
        ),
        _ => return None,
    })
}

/// A reason that rests on the slices' verdicts, in words: a lane's move
/// no slice accounts for, or a verdict the slices settled; `None` for any
/// other reason.
fn by_slices(r: &AbReason) -> Option<String> {
    Some(match r {
        AbReason::Unaccounted { lane_us, ci_us, against } => {
            let why = if against.is_empty() {
                "no slice's verdict moved that way".to_owned()
            } else {
                format!(
                    "the slices the verdicts flagged ({}) moved the other way",
                    against.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", ")
                )
            };
            format!(
                "not called: the lane moved {lane_us:+.3} µs per write (CI {:+.3}…{:+.3}) but {why}: across fresh \
                 processes that is where each process's memory and files sat, not the code (two copies of one build \
                 moved kv-writer's lane ±40 ns)",
                ci_us[0], ci_us[1]
            )
        }
        AbReason::BySlices { slices, delta_us, ci_us, lane_half_width_us, rest_us, rest_ci_us } => {
            let lane = lane_half_width_us.map_or(String::new(), |h| format!(" (its CI ±{:.3} µs)", h));
            format!(
                "judged by its slices, which its own figure{lane} could not settle: the slices the verdicts flagged \
                 ({}), all {}, account for {delta_us:+.3} µs per write (their CIs summed {:+.3}…{:+.3}), beyond the \
                 rule's thresholds; the slices no verdict flagged count as unchanged (together {rest_us:+.3} µs, \
                 their CIs summed {:+.3}…{:+.3})",
                slices.iter().map(|s| format!("`{s}`")).collect::<Vec<_>>().join(", "),
                if *delta_us > 0.0 { "slower" } else { "faster" },
                ci_us[0],
                ci_us[1],
                rest_ci_us[0],
                rest_ci_us[1]
            )
        }
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use hopscope_analyze::lanes::Difference;

    use super::*;

    fn said(r: AbReason) -> String {
        reason(&Recorded::Typed(r))
    }

    #[test]
    fn each_reason_is_said_with_its_figures() {
        let order = "a→b".to_owned();
        assert_eq!(
            said(AbReason::ControlMoved { pass: 2, order: order.clone(), pct: 4.24, max_pct: 3.0 }),
            "pass 2 (a→b): the control moved +4.2%, more than the 3.0% allowed"
        );
        assert_eq!(
            said(AbReason::SpreadApart { pass: 1, order: order.clone(), spread_a: 0.02, spread_b: 0.08 }),
            "pass 1 (a→b): one arm's spread is 4.0× the other's (2.0% vs 8.0%)"
        );
        let delta_us = Difference { median: 0.1234, ci95: [-0.2, 0.4], rounds: 20 };
        assert_eq!(
            said(AbReason::BelowRule { pass: 3, order, delta_us, delta_pct: 0.81 }),
            "pass 3 (a→b): Δ +0.123 µs (+0.8%), CI -0.200…+0.400: below the rule"
        );
        assert_eq!(
            said(AbReason::EveryPass { faster: true }),
            "B is faster than A in every pass, beyond the rule's thresholds"
        );
        let across = said(AbReason::Across { mean_us: 0.5, ci: [0.3, 0.7], level_pct: 95.0, passes: 6 });
        assert_eq!(
            across,
            "B is slower than A by +0.500 µs per write (95% CI +0.300…+0.700) over 6 passes, each by fresh processes, \
             beyond the rule's thresholds"
        );
        let orders = said(AbReason::OrdersDisagree { by_order: vec![("a→b".into(), 0.4), ("b→a".into(), -0.1)] });
        assert_eq!(orders, "the orders disagree (a→b +0.400 µs, b→a -0.100 µs): the effect follows the order");
        let contended = said(AbReason::Contended(crate::receipt::contention::tests::contended()));
        assert!(
            contended.starts_with("no verdict: another process held this run's CPUs: 30 of 40 rounds"),
            "{contended}"
        );
    }

    #[test]
    fn an_older_outcomes_sentence_is_said_as_it_was() {
        assert_eq!(reason(&Recorded::Sentence("below the rule".into())), "below the rule");
    }
}
