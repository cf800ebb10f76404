//! What a run refuses before anything runs: a plan or a lane declaration
//! it cannot carry out, and the limits it holds a declaration to.

use crate::error::RunError;
use crate::lane::Lane;
use crate::plan::Plan;

/// Most trace lanes in one run (each declared lane runs as one or two).
pub const MAX_TRACE_LANES: usize = 256;

/// Most distinct thread roles in one run, over all lanes.
pub const MAX_THREAD_ROLES: usize = 64;

/// Refuse a plan or declaration the run cannot carry out, before anything
/// runs.
pub(super) fn check(plan: &Plan, lanes: &[Lane]) -> Result<(), RunError> {
    plan.check().map_err(RunError::Plan)?;
    if lanes.is_empty() {
        return Err(RunError::Plan("no lanes to run".to_owned()));
    }
    let mut names: Vec<String> = Vec::new();
    let mut roles: Vec<&str> = Vec::new();
    #[cfg(feature = "tracing")]
    crate::spans::check_hops(plan, lanes).map_err(RunError::Plan)?;
    // Placements the process's CPUs cannot give are refused before
    // anything runs, rather than measured somewhere else.
    let placements = std::iter::once(plan.placement).chain(lanes.iter().filter_map(|l| l.placement));
    if let Some(why) = placements.filter_map(crate::placement::unachievable).next() {
        return Err(RunError::Plan(why));
    }
    for lane in lanes {
        lane.check().map_err(RunError::Plan)?;
        for (name, _) in lane.trace_lanes() {
            if names.contains(&name) {
                return Err(RunError::Plan(format!("lane name `{name}` is used twice")));
            }
            names.push(name);
        }
        for role in &lane.threads {
            if !roles.contains(&role.as_str()) {
                roles.push(role);
            }
        }
    }
    if names.len() > MAX_TRACE_LANES {
        return Err(RunError::Plan(format!("{} lanes (at most {MAX_TRACE_LANES})", names.len())));
    }
    if roles.len() > MAX_THREAD_ROLES {
        return Err(RunError::Plan(format!("{} thread roles (at most {MAX_THREAD_ROLES})", roles.len())));
    }
    Ok(())
}
