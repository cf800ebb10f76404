//! What a run's facts say of its lanes: which lanes ran, and which grew
//! their blocks past the plan's size for their callers. The decomposition's
//! and the experiment's receipts both print them.

/// The lanes of `lanes` whose blocks grew past the plan's size for their
/// callers (`` (lanes of several callers: `x` 600 (6 callers)) ``), or
/// nothing: the run's `ops_per_block` is the plan's.
pub(crate) fn grown_blocks<'a>(
    facts: &std::collections::BTreeMap<String, String>,
    lanes: impl IntoIterator<Item = &'a str>,
) -> String {
    use hopscope_probe::{LaneFact, RunFact, RunFacts};
    let plan: Option<u64> = facts.parsed(&RunFact::OpsPerBlock);
    let grown: Vec<String> = lanes
        .into_iter()
        .filter_map(|name| {
            let ops: u64 = facts.parsed(&RunFact::Lane(name.to_owned(), LaneFact::OpsPerBlock))?;
            let callers: u32 = facts.parsed(&RunFact::Lane(name.to_owned(), LaneFact::Callers)).unwrap_or(1);
            (Some(ops) != plan).then(|| format!("`{name}` {ops} ({callers} callers)"))
        })
        .collect();
    if grown.is_empty() { String::new() } else { format!(" (lanes of several callers: {})", grown.join(", ")) }
}

/// Every lane a run's facts describe (`lane.<name>.<fact>`), by name.
pub(crate) fn lanes_of(facts: &std::collections::BTreeMap<String, String>) -> Vec<String> {
    let mut lanes: Vec<String> = facts
        .keys()
        .filter_map(|key| match key.parse::<hopscope_probe::RunFact>() {
            Ok(hopscope_probe::RunFact::Lane(name, hopscope_probe::LaneFact::OpsPerBlock)) => Some(name),
            _ => None,
        })
        .collect();
    lanes.dedup();
    lanes
}
