//! The flags of a what-if run (`--what-if` and its sizes), parsed with
//! every harness program's own: see [`crate::whatif`].

/// What `--what-if` asks for.
#[derive(Debug, Clone, Default, PartialEq, clap::Args)]
pub struct WhatIfArgs {
    /// Instead of a decomposition, ask what a faster slice would buy: the
    /// named lane's probed build (default: the subject, or the only lane
    /// with a probed build) has each slice virtually sped up and really
    /// slowed down, block by block (a causal profile: `receipt.md`,
    /// `causal.json`, `report.html`, `causal.png`).
    #[arg(long, value_name = "LANE", num_args = 0..=1, default_missing_value = "")]
    pub what_if: Option<String>,
    /// With --what-if: the slices to change (`from→to`, `from->to` or the
    /// closing hop, comma-separated; default every slice on the
    /// operation's path).
    #[arg(long, value_delimiter = ',', value_name = "SLICE")]
    pub what_if_slices: Vec<String>,
    /// With --what-if: virtual speedups, percent of each slice's median
    /// (default 10,25,50; --quick 25,50).
    #[arg(long, value_delimiter = ',', value_name = "PCT")]
    pub speedups: Vec<f64>,
    /// With --what-if: real slowdowns beside them, percent (default 25;
    /// --quick none; 0 for none).
    #[arg(long, value_delimiter = ',', value_name = "PCT")]
    pub slowdowns: Vec<f64>,
    /// With --what-if: rounds, each running every arm one block (default
    /// 400, --quick 100, each divided by the lane's callers down to 100,
    /// --quick 40; a number given here is run as given).
    #[arg(long)]
    pub rounds: Option<u32>,
}

impl WhatIfArgs {
    /// The first what-if size given, when `--what-if` itself was not: a
    /// size that would change nothing is refused rather than ignored.
    pub fn stray(&self) -> Option<&'static str> {
        if self.what_if.is_some() {
            return None;
        }
        [
            ("--what-if-slices", !self.what_if_slices.is_empty()),
            ("--speedups", !self.speedups.is_empty()),
            ("--slowdowns", !self.slowdowns.is_empty()),
            ("--rounds", self.rounds.is_some()),
        ]
        .into_iter()
        .find_map(|(flag, given)| given.then_some(flag))
    }
}
