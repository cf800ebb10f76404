//! The facts a run records about itself, typed ([`RunFact`]).
//!
//! A trace header's `run` map (and every result's `meta`, its copy) holds
//! them as string pairs: that is the file format, and older traces must
//! still read. The harness writes the keys through [`RunFact`]'s
//! `Display`, the analyzer and the reports read them through
//! [`RunFacts::fact`], so a key is spelled here and nowhere else; a key
//! this build does not name stays [`RunFact::Other`].

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

pub use crate::live_fact::LiveFact;

/// One fact of a run, as the key it is stored under.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum RunFact {
    /// The command line that ran it (`command`).
    Command,
    /// The commit of the working directory, `-dirty` if it had changes
    /// (`commit`).
    Commit,
    /// `debug` or `release` (`build`).
    Build,
    /// hopscope's version (`hopscope_version`).
    HopscopeVersion,
    /// The user program's name, for harness runs (`harness`).
    Harness,
    /// What every lane wrote (`shape`).
    Shape,
    /// The database's settings (`db`).
    Db,
    /// Where callers and lanes ran (`placement`).
    Placement,
    /// How blocks were ordered within a round (`order`).
    Order,
    /// Idle before each block, µs (`settle_us`).
    SettleUs,
    /// Operations per block (`ops_per_block`).
    OpsPerBlock,
    /// Blocks per lane per pass (`samples`).
    Samples,
    /// Passes over every lane (`passes`).
    Passes,
    /// Blocks run before measuring (`warmup_blocks`).
    WarmupBlocks,
    /// How long a block may take before the run stops, s
    /// (`block_deadline_s`).
    BlockDeadlineS,
    /// The SQLite library's version (`sqlite_version`).
    SqliteVersion,
    /// Idle between a caller's operations, ns (`caller_gap_ns`).
    CallerGapNs,
    /// Whether perf-event counters were read, `on`/`off` (`perf_counters`).
    PerfCounters,
    /// Blocks the run meant to measure, to tell a cut-short run
    /// (`planned_blocks`).
    PlannedBlocks,
    /// Rounds run (`rounds`).
    Rounds,
    /// Changes a merge run applies (`changes`).
    Changes,
    /// A merge run's rows per change (`rows`).
    Rows,
    /// A merge run's columns (`columns`).
    Columns,
    /// A merge run's sites (`sites`).
    Sites,
    /// A merge run samples one operation in this many (`sample_every`).
    SampleEvery,
    /// Parts a merge run imports at once (`parts_per_import`).
    PartsPerImport,
    /// How the marks of an in-process capture were taken (`capture`).
    Capture,
    /// The span path a `--span-path` flag chose (`span_path_flag`).
    SpanPathFlag,
    /// The experiment spec's own text (`spec.text`).
    SpecText,
    /// The experiment's name (`spec.name`).
    SpecName,
    /// Where the spec was read from (`spec.path`).
    SpecPath,
    /// The experiment's hypothesis (`spec.hypothesis`).
    SpecHypothesis,
    /// The SHA-256 of the spec's text (`spec.sha256`).
    SpecSha256,
    /// What a lockstep run compared, e.g. `builds` (`lockstep`).
    Lockstep,
    /// The lane every build of a lockstep run ran (`lockstep.lane`).
    LockstepLane,
    /// How a lockstep run's clocks were converted (`lockstep.clock`).
    LockstepClock,
    /// Passes of a lockstep run (`lockstep.passes`).
    LockstepPasses,
    /// How a lockstep run's layouts were made (`lockstep.layout_method`).
    LockstepLayoutMethod,
    /// How a lockstep run's passes ran: fresh processes per pass
    /// (`lockstep.processes`).
    LockstepProcesses,
    /// Where a lockstep run's processes ran their code from: a fresh copy
    /// of the build's program file per pass and arm (`lockstep.files`).
    LockstepFiles,
    /// Memory layouts per build of a lockstep run (`lockstep.layouts`).
    LockstepLayouts,
    /// How a resolution run crossed its arms (`resolve.crossover`).
    ResolveCrossover,
    /// The protocol a follower process speaks (`follow.protocol`).
    FollowProtocol,
    /// The follower's harness version (`follow.harness`).
    FollowHarness,
    /// The lanes a harness program declared, for a lockstep coordinator
    /// (`harness.declared_lanes`).
    DeclaredLanes,
    /// Where a what-if run's short decomposition is (`decomposition`).
    Decomposition,
    /// One fact of arm `arm` of a lockstep run (`lockstep.<arm>.<fact>`).
    LockstepArm(String, ArmFact),
    /// Layout `n` (1-based) of arm `arm`'s program
    /// (`lockstep.<arm>.layout.<n>`).
    LockstepLayout(String, usize),
    /// What lane `name` runs (`lane.<name>`).
    LaneDescription(String),
    /// One fact of lane `name` (`lane.<name>.<fact>`).
    Lane(String, LaneFact),
    /// One fact of a live capture (`live.<fact>`).
    Live(LiveFact),
    /// A key this build does not name.
    Other(String),
}

/// A fact recorded per lane.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum LaneFact {
    /// Its role in the lane arithmetic (`role`).
    Role,
    /// Where its threads ran (`placement`).
    Placement,
    /// `true`, `false`, or `as built` (`probed`).
    Probed,
    /// How many caller threads drove it at once (`callers`).
    Callers,
    /// Operations in each of its blocks (`ops_per_block`): the run's, or
    /// more for a lane of several callers, each given its share.
    OpsPerBlock,
    /// The lane it repeats under another placement (`twin_of`): a run
    /// asked for several (`--placement same-core,unpinned`) runs each
    /// program lane once per placement, side by side.
    TwinOf,
}

/// A fact recorded per arm of a lockstep run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ArmFact {
    /// The program that ran it (`program`).
    Program,
    /// The commit it was built from (`commit`).
    Commit,
    /// The build's profile or command (`build`).
    Build,
    /// Its hopscope's version (`hopscope_version`).
    HopscopeVersion,
    /// Its clock's calibration (`ns_per_tick`).
    NsPerTick,
}

impl ArmFact {
    /// Every arm fact.
    pub const ALL: [ArmFact; 5] =
        [ArmFact::Program, ArmFact::Commit, ArmFact::Build, ArmFact::HopscopeVersion, ArmFact::NsPerTick];

    fn name(self) -> &'static str {
        match self {
            ArmFact::Program => "program",
            ArmFact::Commit => "commit",
            ArmFact::Build => "build",
            ArmFact::HopscopeVersion => "hopscope_version",
            ArmFact::NsPerTick => "ns_per_tick",
        }
    }
}

impl LaneFact {
    /// Every lane fact.
    pub const ALL: [LaneFact; 6] = [
        LaneFact::Role,
        LaneFact::Placement,
        LaneFact::Probed,
        LaneFact::Callers,
        LaneFact::OpsPerBlock,
        LaneFact::TwinOf,
    ];

    fn name(self) -> &'static str {
        match self {
            LaneFact::Role => "role",
            LaneFact::Placement => "placement",
            LaneFact::Probed => "probed",
            LaneFact::Callers => "callers",
            LaneFact::OpsPerBlock => "ops_per_block",
            LaneFact::TwinOf => "twin_of",
        }
    }
}

/// The run-wide facts with fixed keys.
const FIXED: [(RunFact, &str); 46] = [
    (RunFact::Command, "command"),
    (RunFact::Commit, "commit"),
    (RunFact::Build, "build"),
    (RunFact::HopscopeVersion, "hopscope_version"),
    (RunFact::Harness, "harness"),
    (RunFact::Shape, "shape"),
    (RunFact::Db, "db"),
    (RunFact::Placement, "placement"),
    (RunFact::Order, "order"),
    (RunFact::SettleUs, "settle_us"),
    (RunFact::OpsPerBlock, "ops_per_block"),
    (RunFact::Samples, "samples"),
    (RunFact::Passes, "passes"),
    (RunFact::WarmupBlocks, "warmup_blocks"),
    (RunFact::BlockDeadlineS, "block_deadline_s"),
    (RunFact::SqliteVersion, "sqlite_version"),
    (RunFact::CallerGapNs, "caller_gap_ns"),
    (RunFact::PerfCounters, "perf_counters"),
    (RunFact::PlannedBlocks, "planned_blocks"),
    (RunFact::Rounds, "rounds"),
    (RunFact::Changes, "changes"),
    (RunFact::Rows, "rows"),
    (RunFact::Columns, "columns"),
    (RunFact::Sites, "sites"),
    (RunFact::SampleEvery, "sample_every"),
    (RunFact::PartsPerImport, "parts_per_import"),
    (RunFact::Capture, "capture"),
    (RunFact::SpanPathFlag, "span_path_flag"),
    (RunFact::SpecText, "spec.text"),
    (RunFact::SpecName, "spec.name"),
    (RunFact::SpecPath, "spec.path"),
    (RunFact::SpecHypothesis, "spec.hypothesis"),
    (RunFact::SpecSha256, "spec.sha256"),
    (RunFact::Lockstep, "lockstep"),
    (RunFact::LockstepLane, "lockstep.lane"),
    (RunFact::LockstepClock, "lockstep.clock"),
    (RunFact::LockstepPasses, "lockstep.passes"),
    (RunFact::LockstepLayoutMethod, "lockstep.layout_method"),
    (RunFact::LockstepProcesses, "lockstep.processes"),
    (RunFact::LockstepFiles, "lockstep.files"),
    (RunFact::FollowProtocol, "follow.protocol"),
    (RunFact::FollowHarness, "follow.harness"),
    (RunFact::DeclaredLanes, "harness.declared_lanes"),
    (RunFact::Decomposition, "decomposition"),
    (RunFact::LockstepLayouts, "lockstep.layouts"),
    (RunFact::ResolveCrossover, "resolve.crossover"),
];

impl fmt::Display for RunFact {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunFact::LaneDescription(name) => write!(f, "lane.{name}"),
            RunFact::Lane(name, fact) => write!(f, "lane.{name}.{}", fact.name()),
            RunFact::LockstepArm(arm, fact) => write!(f, "lockstep.{arm}.{}", fact.name()),
            RunFact::LockstepLayout(arm, n) => write!(f, "lockstep.{arm}.layout.{n}"),
            RunFact::Live(fact) => write!(f, "live.{}", fact.name()),
            RunFact::Other(key) => f.write_str(key),
            fixed => {
                let key = FIXED.iter().find(|(fact, _)| fact == fixed).map_or("", |(_, key)| key);
                f.write_str(key)
            }
        }
    }
}

impl FromStr for RunFact {
    type Err = std::convert::Infallible;

    /// Any key parses: what this build does not name is [`RunFact::Other`].
    fn from_str(key: &str) -> Result<RunFact, Self::Err> {
        if let Some((fact, _)) = FIXED.iter().find(|(_, k)| *k == key) {
            return Ok(fact.clone());
        }
        if let Some(what) = key.strip_prefix("live.") {
            let fact = LiveFact::ALL.into_iter().find(|f| f.name() == what);
            return Ok(fact.map_or_else(|| RunFact::Other(key.to_owned()), RunFact::Live));
        }
        if let Some(arm) = key.strip_prefix("lockstep.") {
            return Ok(lockstep_arm(arm).unwrap_or_else(|| RunFact::Other(key.to_owned())));
        }
        let Some(lane) = key.strip_prefix("lane.") else { return Ok(RunFact::Other(key.to_owned())) };
        // A lane's name holds no dot (lane names are checked), so a dot
        // after it starts the fact.
        Ok(match lane.split_once('.') {
            None => RunFact::LaneDescription(lane.to_owned()),
            Some((name, what)) => match LaneFact::ALL.into_iter().find(|f| f.name() == what) {
                Some(fact) => RunFact::Lane(name.to_owned(), fact),
                None => RunFact::Other(key.to_owned()),
            },
        })
    }
}

/// `<arm>.<fact>` or `<arm>.layout.<n>` of a `lockstep.` key.
fn lockstep_arm(rest: &str) -> Option<RunFact> {
    let (arm, what) = rest.split_once('.')?;
    if let Some(n) = what.strip_prefix("layout.") {
        return Some(RunFact::LockstepLayout(arm.to_owned(), n.parse().ok()?));
    }
    let fact = ArmFact::ALL.into_iter().find(|f| f.name() == what)?;
    Some(RunFact::LockstepArm(arm.to_owned(), fact))
}

/// Typed access to a run's facts where they are kept as string pairs.
pub trait RunFacts {
    /// The value recorded for `fact`, if any.
    fn fact(&self, fact: &RunFact) -> Option<&str>;

    /// `fact`'s value parsed, if recorded and well-formed.
    fn parsed<T: FromStr>(&self, fact: &RunFact) -> Option<T> {
        self.fact(fact)?.parse().ok()
    }

    /// Record `value` for `fact`, replacing any before.
    fn record(&mut self, fact: RunFact, value: impl Into<String>);
}

impl RunFacts for BTreeMap<String, String> {
    fn fact(&self, fact: &RunFact) -> Option<&str> {
        self.get(&fact.to_string()).map(String::as_str)
    }

    fn record(&mut self, fact: RunFact, value: impl Into<String>) {
        self.insert(fact.to_string(), value.into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_fact_reads_back_as_itself() {
        let mut facts: Vec<RunFact> = FIXED.iter().map(|(f, _)| f.clone()).collect();
        facts.push(RunFact::LaneDescription("writer-probed".into()));
        facts.extend(LaneFact::ALL.map(|f| RunFact::Lane("floor".into(), f)));
        facts.extend(ArmFact::ALL.map(|f| RunFact::LockstepArm("control".into(), f)));
        facts.push(RunFact::LockstepLayout("b".into(), 2));
        facts.extend(LiveFact::ALL.map(RunFact::Live));
        facts.push(RunFact::Other("lockstep.a.colour".into()));
        for fact in facts {
            let key = fact.to_string();
            assert!(!key.is_empty(), "{fact:?} has a key");
            assert_eq!(key.parse::<RunFact>(), Ok(fact.clone()), "{key}");
        }
    }

    #[test]
    fn keys_are_spelled_as_traces_carry_them() {
        assert_eq!(RunFact::PlannedBlocks.to_string(), "planned_blocks");
        assert_eq!(RunFact::Lane("writer".into(), LaneFact::Placement).to_string(), "lane.writer.placement");
        assert_eq!(RunFact::LaneDescription("inline".into()).to_string(), "lane.inline");
        assert_eq!("lane.writer.colour".parse::<RunFact>(), Ok(RunFact::Other("lane.writer.colour".into())));
    }

    #[test]
    fn facts_are_recorded_and_read_through_the_map() {
        let mut run = BTreeMap::new();
        run.record(RunFact::Rounds, "12");
        run.record(RunFact::Lane("w".into(), LaneFact::Probed), "true");
        assert_eq!(run.get("rounds").map(String::as_str), Some("12"));
        assert_eq!(run.parsed::<u32>(&RunFact::Rounds), Some(12));
        assert_eq!(run.fact(&RunFact::Lane("w".into(), LaneFact::Probed)), Some("true"));
        assert_eq!(run.parsed::<u32>(&RunFact::Shape), None);
    }
}
