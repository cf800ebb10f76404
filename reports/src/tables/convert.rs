//! A decomposition's figures as table rows: one field, one column, no
//! statistic computed here (every number is a field of `result.json`).

use hopscope_analyze::Role;
use hopscope_analyze::join::SliceSide;
use hopscope_analyze::lanes::Difference;
use hopscope_analyze::slices::{Owner, SliceFigures};
use hopscope_probe::{ClockSource, RunFact, RunFacts, ThreadRole};

use super::rows::{BlockRow, FigureRow, LaneRow, RunRow, SliceRow};
use super::types::{RunSource, TableError, run_id};

/// The rows of every table but `marks`, over all runs.
#[derive(Debug, Default)]
pub(super) struct Rows {
    pub(super) runs: Vec<RunRow>,
    pub(super) lanes: Vec<LaneRow>,
    pub(super) figures: Vec<FigureRow>,
    pub(super) blocks: Vec<BlockRow>,
    pub(super) slices: Vec<SliceRow>,
}

/// `value` as an INT64 column value.
pub(super) fn int(what: &'static str, value: impl TryInto<i64> + Copy + Into<u128>) -> Result<i64, TableError> {
    value.try_into().map_err(|_| TableError::Range { what, value: value.into() })
}

impl Rows {
    pub(super) fn of(runs: &[RunSource<'_>]) -> Result<Rows, TableError> {
        let mut rows = Rows::default();
        for run in runs {
            rows.add(run)?;
        }
        Ok(rows)
    }

    fn add(&mut self, run: &RunSource<'_>) -> Result<(), TableError> {
        let d = run.decomposition;
        let id = run_id(d);
        self.runs.push(run_row(run, &id)?);
        let derived = d.derived.as_ref();
        for (name, lane) in d.lanes_in_order() {
            let role = derived.and_then(|x| x.lanes.iter().find(|(_, l)| *l == name)).map(|(role, _)| role.clone());
            let us = lane.us_per_op.as_ref();
            let ctx =
                d.ctx_switches_per_op.get(name).and_then(|roles| roles.get(&ThreadRole::Process.to_string())).copied();
            self.lanes.push(LaneRow {
                run_id: id.clone(),
                lane: name.to_owned(),
                role,
                probed: lane.probed,
                ops: int("operations", lane.ops)?,
                blocks: int("blocks", lane.blocks as u64)?,
                median_us: us.map(|s| s.median),
                ci_lo_us: us.map(|s| s.ci95[0]),
                ci_hi_us: us.map(|s| s.ci95[1]),
                mad_us: us.map(|s| s.mad),
                p10_us: us.map(|s| s.p10),
                p90_us: us.map(|s| s.p90),
                p99_us: us.map(|s| s.p99),
                min_us: us.map(|s| s.min),
                max_us: us.map(|s| s.max),
                outliers: us.map(|s| int("outliers", s.outliers as u64)).transpose()?,
                ctx_switches_per_op: ctx,
            });
            for block in &lane.blocks_us {
                self.blocks.push(BlockRow {
                    run_id: id.clone(),
                    lane: name.to_owned(),
                    pass: i64::from(block.pass),
                    sample: i64::from(block.sample),
                    us_per_op: block.us_per_op,
                });
            }
        }
        if let Some(x) = derived {
            for (figure, diff) in x.figures() {
                self.figures.push(figure_row(&id, figure.name(), diff)?);
            }
        }
        if let Some(effect) = &d.observer_effect {
            self.figures.push(FigureRow {
                run_id: id.clone(),
                figure: "observer_effect".to_owned(),
                median_us: effect.delta_us,
                ci_lo_us: effect.delta_ci95[0],
                ci_hi_us: effect.delta_ci95[1],
                rounds: None,
            });
        }
        let sliced =
            [(d.insitu_lane.as_deref(), false, &d.slices), (d.floor_slices_lane.as_deref(), true, &d.floor_slices)];
        for (lane, floor, slices) in sliced {
            let lane = lane.unwrap_or("unknown");
            for (position, slice) in slices.iter().enumerate() {
                self.slices.push(slice_row(&id, (lane, floor), position, slice)?);
            }
        }
        Ok(())
    }
}

fn run_row(run: &RunSource<'_>, id: &str) -> Result<RunRow, TableError> {
    let d = run.decomposition;
    let lane = |role| d.derived.as_ref().and_then(|x| x.lane(role)).map(str::to_owned);
    Ok(RunRow {
        run_id: id.to_owned(),
        schema: d.schema.clone(),
        created_unix_ms: int("created_unix_ms", d.run.created_unix_ms)?,
        hostname: d.host.hostname.clone(),
        cpu_model: d.host.cpu_model.clone(),
        cores: int("cores", d.host.cores as u64)?,
        kernel: d.host.kernel.clone(),
        target: d.host.target.clone(),
        commit: d.run.meta.fact(&RunFact::Commit).map(str::to_owned),
        command: d.run.meta.fact(&RunFact::Command).map(str::to_owned),
        clock_source: match d.clock.source {
            ClockSource::Tsc => "tsc",
            ClockSource::Monotonic => "monotonic",
        }
        .to_owned(),
        ns_per_tick: d.clock.ns_per_tick,
        invariant_tsc: d.clock.invariant_tsc,
        subject_lane: lane(Role::Subject),
        floor_lane: lane(Role::Floor),
        baseline_lane: lane(Role::Baseline),
        marks_dropped: int("marks dropped", d.drops.marks_dropped)?,
        partial: d.partial.as_ref().map(crate::receipt::partial_sentence),
        warnings: int("warnings", d.warnings.len() as u64)?,
        source: run.dir.display().to_string(),
    })
}

fn figure_row(id: &str, figure: &str, diff: &Difference) -> Result<FigureRow, TableError> {
    Ok(FigureRow {
        run_id: id.to_owned(),
        figure: figure.to_owned(),
        median_us: diff.median,
        ci_lo_us: diff.ci95[0],
        ci_hi_us: diff.ci95[1],
        rounds: Some(int("rounds", diff.rounds as u64)?),
    })
}

fn slice_row(id: &str, lane: (&str, bool), position: usize, s: &SliceFigures) -> Result<SliceRow, TableError> {
    Ok(SliceRow {
        run_id: id.to_owned(),
        lane: lane.0.to_owned(),
        floor: lane.1,
        position: int("slice position", position as u64)?,
        slice: s.name.clone(),
        side: side_name(s.side).to_owned(),
        owner: owner_name(s.owner).to_owned(),
        median_us: s.median_us,
        ci_lo_us: s.ci95[0],
        ci_hi_us: s.ci95[1],
        mad_us: s.mad_us,
        p10_us: s.p10_us,
        p90_us: s.p90_us,
        p99_us: s.p99_us,
        outliers: int("outliers", s.outliers)?,
        share: s.share,
        machinery_us: s.machinery_us,
    })
}

/// As `result.json` spells it.
fn side_name(side: SliceSide) -> &'static str {
    match side {
        SliceSide::Caller => "caller",
        SliceSide::Writer => "writer",
        SliceSide::Cross => "cross",
    }
}

/// As `result.json` spells it.
fn owner_name(owner: Owner) -> &'static str {
    owner.name()
}
