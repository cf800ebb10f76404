//! A/B experiments through the harness: two lanes as arms A and B, an inert
//! second copy of A as the control, passes in flipped order (`a→b`, then
//! `b→a`), judged under the rule the spec fixed before the run. `hopscope
//! ab` and a program's `--ab SPEC` both run here.

use hopscope_analyze::experiment::Experiment;
use hopscope_probe::{Role, Variant};

use crate::lane::Lane;
use crate::spec::ExperimentSpec;

/// The lanes of an A/B run of `a` against `b` under `spec`: `a` as arm A,
/// `b` as arm B, and (if the spec keeps it) `a` again as `<a>-control`;
/// each in the build the spec asks for (probed or clean).
pub fn arms(spec: &ExperimentSpec, a: Lane, b: Lane) -> Vec<Lane> {
    let variant = if spec.probed { Variant::Probed } else { Variant::Clean };
    let a = a.only(variant);
    let mut lanes = vec![a.clone().with_role(Role::ArmA), b.only(variant).with_role(Role::ArmB)];
    if spec.control {
        let name = format!("{}-control", a.name());
        lanes.push(a.renamed(&name).with_role(Role::Control));
    }
    lanes
}

impl Lane {
    /// The lane with one build only, `variant`'s if it has that build (its
    /// first otherwise), running under the lane's own name: an A/B arm is
    /// one build, and whether it marks, the trace shows.
    pub fn only(mut self, variant: Variant) -> Lane {
        let keep = self.builds.iter().position(|b| b.variant == Some(variant)).unwrap_or(0);
        if keep < self.builds.len() {
            let mut build = self.builds.swap_remove(keep);
            build.variant = None;
            self.builds = vec![build];
        }
        self
    }
}

/// What a person reads in the terminal after an A/B run (written by the
/// reports crate, as every sentence hopscope prints is).
pub fn summary(e: &Experiment) -> String {
    hopscope_reports::terminal::experiment(e)
}
