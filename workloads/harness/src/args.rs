//! The flags every harness program accepts, the same as `hopscope
//! decompose`'s: `--quick`, `--out`, `--placement`, `--samples`, ...
//! [`RunArgs`] is a clap struct, so hopscope's own commands flatten it into
//! theirs and a user's program parses it from its command line.

use std::path::PathBuf;
use std::time::Duration;

use crate::placement::Placement;
use crate::plan::Plan;

/// Flags of a harness run; each size overrides the careful or `--quick`
/// default.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct RunArgs {
    /// Short run (about a second on a 2-vCPU VM) instead of the careful
    /// default (about ten seconds).
    #[arg(long)]
    pub quick: bool,
    /// Run directory (default: a new one under hopscope/ in the target
    /// directory Cargo built into, linked from hopscope/latest there).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Thread placement: same-core (the default: see the guide's "Reading
    /// the numbers", docs/guide/reading-the-numbers.md), unpinned,
    /// different-cores. Several (`same-core,unpinned`) run every program
    /// lane once under each, side by side, and the receipt says what the
    /// placement changed; the references (inline, floor) run under the
    /// first.
    #[arg(long, value_delimiter = ',')]
    pub placement: Vec<Placement>,
    /// Operations per block.
    #[arg(long)]
    pub ops: Option<u64>,
    /// Blocks per lane per pass.
    #[arg(long)]
    pub samples: Option<u32>,
    /// Passes.
    #[arg(long)]
    pub passes: Option<u32>,
    /// Unrecorded warm-up blocks per lane.
    #[arg(long)]
    pub warmup: Option<u32>,
    /// The caller's own work before each operation, µs (a busy-wait).
    #[arg(long, value_name = "US")]
    pub gap_us: Option<u64>,
    /// Seconds a block (or any call into a lane) may take before the run
    /// stops, keeping what was measured.
    #[arg(long, value_name = "SECONDS")]
    pub deadline: Option<f64>,
    /// The path span lanes' spans take, whatever the program declared:
    /// `registry` (a `Registry` with `HopLayer`) or `subscriber` (the
    /// profiling `HopSubscriber`, no Registry). Without span lanes it
    /// changes nothing.
    #[arg(long, value_enum, value_name = "PATH")]
    pub span_path: Option<SpanPathFlag>,
    /// Record perf-event counters on every marking thread. Off by default:
    /// on VMs each open counter adds µs to every context switch of its
    /// thread.
    #[arg(long)]
    pub counters: bool,
    /// Run only these lanes (comma-separated: a declared name runs each of
    /// its builds, `name-probed` only the probed one).
    #[arg(long, value_delimiter = ',')]
    pub lanes: Vec<String>,
    /// Run a pre-registered A/B experiment between two declared lanes
    /// (a TOML spec: name, hypothesis, `[a] lane = "..."`, `[b] lane = "..."`,
    /// `[run]`, `[rule]`; see docs/experiments.md).
    #[arg(long, value_name = "SPEC")]
    pub ab: Option<PathBuf>,
    /// Save this run as baseline NAME in the run index (replacing what the
    /// name pointed at), for a later `--baseline NAME` or `hopscope compare
    /// NAME …`.
    #[arg(long, value_name = "NAME")]
    pub save_baseline: Option<String>,
    /// Compare this run with baseline NAME (or any run `hopscope compare`
    /// accepts): `change.md` and `change.json` in the run directory, the
    /// verdict on stdout.
    #[arg(long, value_name = "NAME")]
    pub baseline: Option<String>,
    /// With --baseline (or --ab): exit 3 on a regression and 5 when drift
    /// refuses the verdict, or with `any` also 4 on an improvement.
    #[arg(long, value_enum)]
    pub fail_on: Option<crate::gate::FailOn>,
    /// Print one JSON object on stdout instead of the summary
    /// (`hopscope.decompose/1`: the run directory, its index id, the
    /// decomposition and, with --baseline, the change; `hopscope.ab-run/1`
    /// with --ab); progress and errors stay on stderr.
    #[arg(long)]
    pub json: bool,
    /// Run as a follower of `hopscope ab --builds`, which listens on this
    /// Unix socket and says which block to run next (see the guide's "Two
    /// builds in lockstep", docs/guide/judging-a-change.md); not for use by
    /// hand.
    #[arg(long, value_name = "SOCKET", conflicts_with_all = ["ab", "save_baseline", "baseline", "json"])]
    pub follow: Option<PathBuf>,
    /// Passed by `cargo bench` to bench targets; ignored.
    #[arg(long, hide = true)]
    pub bench: bool,
    /// `--what-if` and its sizes.
    #[command(flatten)]
    pub what_if: crate::whatif_flags::WhatIfArgs,
}

/// The values of `--span-path`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SpanPathFlag {
    /// A `Registry` with `HopLayer`: every span in the Registry's slab.
    Registry,
    /// The profiling `HopSubscriber`: only watched spans are created.
    Subscriber,
}

/// A flag whose value the run cannot use, named.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{flag}: {reason}")]
pub struct FlagError {
    /// The flag (`--ops`, ...), or `sizes` for the plan as a whole.
    pub flag: &'static str,
    /// What is wrong with it.
    pub reason: String,
}

/// Longest `--deadline`: a day.
const MAX_DEADLINE_S: f64 = 86_400.0;

/// Longest `--gap-us`: one second per operation.
const MAX_GAP_US: u64 = 1_000_000;

impl RunArgs {
    /// What the run is to be recorded as and judged against.
    pub fn gating(&self) -> crate::record::Gating<'_> {
        crate::record::Gating {
            save_baseline: self.save_baseline.as_deref(),
            baseline: self.baseline.as_deref(),
            fail_on: self.fail_on,
        }
    }

    /// The first flag given beside `--what-if` that a what-if run cannot
    /// honour: it is neither an A/B run nor a decomposition to save,
    /// compare or gate, so such a flag is refused rather than ignored.
    pub fn beside_what_if(&self) -> Option<&'static str> {
        self.what_if.what_if.as_ref()?;
        [
            ("--ab", self.ab.is_some()),
            ("--save-baseline", self.save_baseline.is_some()),
            ("--baseline", self.baseline.is_some()),
            ("--fail-on", self.fail_on.is_some()),
            ("--follow", self.follow.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }

    /// The placements after the first, each program lane's twin runs
    /// under (`--placement same-core,unpinned`): empty for one placement.
    pub fn twin_placements(&self) -> &[Placement] {
        self.placement.get(1..).unwrap_or_default()
    }

    /// Refuse a placement named twice, and several where a run judges
    /// lanes of one placement (an A/B run, a baseline, a follower, a
    /// what-if run).
    fn check_placements(&self) -> Result<(), FlagError> {
        let fail = |reason: String| Err(FlagError { flag: "--placement", reason });
        for (k, placement) in self.placement.iter().enumerate() {
            if self.placement[..k].contains(placement) {
                return fail(format!("{placement} is named twice"));
            }
        }
        if self.placement.len() < 2 {
            return Ok(());
        }
        let beside = [
            ("--ab", self.ab.is_some()),
            ("--save-baseline", self.save_baseline.is_some()),
            ("--baseline", self.baseline.is_some()),
            ("--follow", self.follow.is_some()),
            ("--what-if", self.what_if.what_if.is_some()),
        ];
        match beside.into_iter().find_map(|(flag, given)| given.then_some(flag)) {
            Some(flag) => fail(format!(
                "several placements run side by side in one decomposition; {flag} judges one: give one placement"
            )),
            None => Ok(()),
        }
    }

    /// The plan these flags ask for: `--quick` or careful, each size
    /// overridden by its flag. Refuses a value out of range, naming the flag.
    pub fn plan(&self) -> Result<Plan, FlagError> {
        self.apply(if self.quick { Plan::quick() } else { Plan::careful() })
    }

    /// `base` with every flag given applied over it.
    pub fn apply(&self, base: Plan) -> Result<Plan, FlagError> {
        let mut plan = base;
        plan.ops_per_block = self.ops.unwrap_or(plan.ops_per_block);
        if self.ops.is_some() {
            // The size asked for, whatever the callers: a block that gives
            // each fewer than the default is warned of, not resized.
            plan.ops_per_caller = None;
        }
        plan.samples = self.samples.unwrap_or(plan.samples);
        // A number asked for stands, however the blocks grow.
        plan.fixed_samples |= self.samples.is_some();
        plan.passes = self.passes.unwrap_or(plan.passes);
        plan.warmup_blocks = self.warmup.unwrap_or(plan.warmup_blocks);
        plan.placement = self.placement.first().copied().unwrap_or(plan.placement);
        self.check_placements()?;
        plan.perf_counters |= self.counters;
        if let Some(gap) = self.gap_us {
            if gap > MAX_GAP_US {
                return Err(FlagError { flag: "--gap-us", reason: format!("{gap} is more than {MAX_GAP_US}") });
            }
            plan.caller_gap_ns = gap * 1_000;
        }
        if let Some(seconds) = self.deadline {
            if !(seconds > 0.0 && seconds <= MAX_DEADLINE_S) {
                let reason = format!("{seconds}: a number of seconds above 0 and at most {MAX_DEADLINE_S}");
                return Err(FlagError { flag: "--deadline", reason });
            }
            plan.block_deadline = Duration::from_secs_f64(seconds);
        }
        if self.fail_on.is_some() && self.baseline.is_none() && self.ab.is_none() {
            return Err(FlagError {
                flag: "--fail-on",
                reason: "gates a verdict: give --baseline NAME or --ab SPEC".into(),
            });
        }
        if let Some(name) = &self.save_baseline {
            crate::index::check_name(name).map_err(|e| FlagError { flag: "--save-baseline", reason: e.to_string() })?;
        }
        if self.ab.is_some() && (self.baseline.is_some() || self.save_baseline.is_some()) {
            let reason = "an A/B run is judged by its own rule, not against a baseline".to_owned();
            return Err(FlagError { flag: "--baseline", reason });
        }
        for (flag, zero) in
            [("--ops", plan.ops_per_block == 0), ("--samples", plan.samples == 0), ("--passes", plan.passes == 0)]
        {
            if zero {
                return Err(FlagError { flag, reason: "must be at least 1".to_owned() });
            }
        }
        plan.check().map_err(|reason| FlagError { flag: "sizes", reason })?;
        Ok(plan)
    }
}

/// The process's command line parsed as `P`. `--help` and `--version`
/// print as clap prints them; any other error is one line on stderr,
/// `program: <what clap says>` with its tip and possible values folded into
/// it, and exit status 2 (clap's own usage-error status).
pub fn parse_flags<P: clap::Parser>(program: &str) -> P {
    parse_flags_from(program, std::env::args_os())
}

/// As [`parse_flags`], from `args` (the first is the program): for a
/// program that takes flags of its own out of its command line first.
pub(crate) fn parse_flags_from<P, I, T>(program: &str, args: I) -> P
where
    P: clap::Parser,
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    P::try_parse_from(args).unwrap_or_else(|err| {
        use clap::error::ErrorKind;
        if matches!(err.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) || !err.use_stderr() {
            err.exit();
        }
        eprintln!("{program}: {}", one_line(&err));
        std::process::exit(2)
    })
}

/// A clap error in one line: its message, tips and possible values joined,
/// without the usage block and the pointer to `--help`.
pub fn one_line(err: &clap::Error) -> String {
    let text = err.render().to_string();
    let words: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .collect();
    words.join(" ").replace("error: ", "")
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        run: RunArgs,
    }

    fn parse(args: &[&str]) -> RunArgs {
        Cli::try_parse_from(std::iter::once("prog").chain(args.iter().copied())).expect("flags parse").run
    }

    #[test]
    fn the_span_path_is_one_of_two_words() {
        assert_eq!(parse(&["--span-path", "subscriber"]).span_path, Some(SpanPathFlag::Subscriber));
        assert_eq!(parse(&["--span-path", "registry"]).span_path, Some(SpanPathFlag::Registry));
        assert_eq!(parse(&[]).span_path, None);
        let err = Cli::try_parse_from(["prog", "--span-path", "fast"]).expect_err("refused");
        assert!(err.to_string().contains("possible values: registry, subscriber"), "{err}");
    }

    #[test]
    fn flags_override_the_quick_or_careful_plan() {
        let plan = parse(&["--quick", "--samples", "7", "--placement", "unpinned"]).plan().expect("plan");
        assert_eq!((plan.ops_per_block, plan.samples, plan.passes), (100, 7, 2));
        assert_eq!(plan.placement, Placement::Unpinned);
        assert_eq!(parse(&[]).plan().expect("plan"), Plan::careful());
        assert_eq!(parse(&["--deadline", "0.5"]).plan().expect("plan").block_deadline, Duration::from_millis(500));
    }

    #[test]
    fn out_of_range_values_name_their_flag() {
        let err = |args: &[&str]| parse(args).plan().unwrap_err().to_string();
        assert_eq!(err(&["--ops", "0"]), "--ops: must be at least 1");
        assert!(err(&["--deadline=-1"]).starts_with("--deadline: -1"));
        assert!(err(&["--deadline", "NaN"]).starts_with("--deadline: NaN"));
        assert!(err(&["--gap-us", "99999999"]).starts_with("--gap-us: "));
        assert!(err(&["--ops", "99999999999"]).contains("ops per block"));
        assert!(parse(&["--bench"]).bench);
    }

    #[test]
    fn a_baseline_name_a_selector_would_shadow_is_refused_by_the_flags() {
        let err = |args: &[&str]| parse(args).plan().unwrap_err().to_string();
        assert!(err(&["--save-baseline", "latest"]).starts_with("--save-baseline: baseline name \"latest\""));
        assert!(err(&["--save-baseline", "2026-12-04"]).contains("a date"));
        assert!(err(&["--save-baseline", "a b"]).contains("letters, digits"));
        assert!(parse(&["--save-baseline", "main"]).plan().is_ok());
    }

    #[test]
    fn a_bad_flag_is_one_line_with_its_possible_values() {
        let err = Cli::try_parse_from(["prog", "--placement", "moon"]).expect_err("refused");
        let line = one_line(&err);
        assert!(!line.contains('\n') && !line.contains("For more information"), "{line}");
        assert!(line.contains("'moon'") && line.contains("one of: unpinned"), "{line}");
        let err = Cli::try_parse_from(["prog", "--fail-on", "sometimes"]).expect_err("refused");
        let line = one_line(&err);
        assert!(line.contains("'sometimes'") && line.contains("[possible values: "), "{line}");
        let err = Cli::try_parse_from(["prog", "--no-such-flag"]).expect_err("refused");
        assert!(one_line(&err).contains("unexpected argument '--no-such-flag'"), "{}", one_line(&err));
    }
}
