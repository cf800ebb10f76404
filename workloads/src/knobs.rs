//! The reference writer's knobs. Each one is a family of past write-path
//! experiments; each is chosen at run time so two settings can alternate
//! inside one process.

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use hopscope_harness::Pin;
use hopscope_probe::Hop;

use crate::error::ParseError;

/// How a reply gets back to its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplyMode {
    /// Each request carries its own one-shot reply channel.
    #[default]
    Oneshot,
    /// One reply channel for the writer's lifetime; callers complete in FIFO
    /// order (the caller holding the channel hands replies to the others).
    Persistent,
}

/// Which channel implementation carries requests and replies.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ChannelKind {
    /// `std::sync::mpsc`.
    Std,
    /// `crossbeam-channel`: its blocking receive spins, yields, then parks.
    #[default]
    Crossbeam,
    /// A queue whose receiver checks once and parks, as the reply mailbox
    /// does ([`crate::queue`]).
    Parking,
}

/// What a thread does while it waits for a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Wait {
    /// Block right away. A reply mailbox parks its caller at once; a
    /// thread waiting on a crossbeam or std channel blocks in the channel,
    /// which spins and yields briefly before it parks.
    #[default]
    Park,
    /// Poll in a busy loop for up to the duration, then park.
    Spin(Duration),
    /// Poll and `yield_now` for up to the duration, then park.
    Yield(Duration),
    /// Poll and sleep in short timer ticks ([`crate::wait::TICK`], with a
    /// fine timer slack) for up to the duration, then park: the thread
    /// never spins, yet its core never goes idle long enough for a VM's
    /// vCPU to halt, so a wake is cheap.
    Tick(Duration),
    /// Spin for up to the duration while this thread's recent spins mostly
    /// got their message within it, else park at once (one wait in 16
    /// spins anyway, to notice when messages come quickly again); never
    /// spins on a shared core ([`Wait::on`]). With a [`CpuBudget`], the
    /// window shrinks to what the budget allows this thread to spin (its
    /// budget share of its own work between waits).
    Adaptive(Duration, Option<CpuBudget>),
}

/// How much CPU a waiting thread may spend per unit of its own work: 1.5×
/// lets it spin up to half as long as it worked since its last wait. A
/// thread that works 12 µs between waits (a writer running a statement)
/// may then spin 6 µs; one that works 1 µs (a caller turning a reply
/// around) may spin 0.5 µs. Held in hundredths, so a [`Wait`] stays `Eq`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct CpuBudget(u16);

impl CpuBudget {
    /// Largest budget: 100× the thread's own work.
    pub const MAX: f64 = 100.0;

    /// The budget as a multiple of the thread's own work (≥ 1).
    pub fn ratio(self) -> f64 {
        f64::from(self.0) / 100.0
    }

    /// The spin this budget allows after `work` of the thread's own work.
    pub fn allows(self, work: Duration) -> Duration {
        work.mul_f64(self.ratio() - 1.0)
    }
}

impl fmt::Display for CpuBudget {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = format!("{:.2}", self.ratio());
        write!(f, "{}x", text.trim_end_matches('0').trim_end_matches('.'))
    }
}

impl FromStr for CpuBudget {
    type Err = ParseError;
    /// `1.5x` or `1.5`: from 1 (never spin) to [`CpuBudget::MAX`], in
    /// hundredths.
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let number = s.strip_suffix('x').unwrap_or(s);
        match number.parse::<f64>() {
            Ok(r) if (1.0..=Self::MAX).contains(&r) => Ok(CpuBudget((r * 100.0).round() as u16)),
            _ => Err(ParseError::new(
                "CPU budget",
                s,
                format!("1 to {} times the thread's own work, e.g. 1.5x", Self::MAX),
            )),
        }
    }
}

/// How BLOB parameters reach the writer thread.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BlobHandover {
    /// The caller lends the bytes; the request copies them.
    #[default]
    Copy,
    /// The caller gives up an owned buffer; the request moves it.
    Move,
    /// The caller shares a reference-counted buffer; the request clones the count.
    Shared,
}

/// Where a reply value lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResultSlot {
    /// A fresh reply slot (channel or completion cell) per call.
    Allocate,
    /// A per-thread slot reused by every call of that thread (the default:
    /// a fresh one-shot channel per call measured ~1 µs per write here).
    #[default]
    Reuse,
}

/// How many queued requests the writer runs in one transaction: group
/// commit. Off, each request is its own autocommit statement; at N the
/// writer takes the first request, drains up to N − 1 more already queued,
/// runs them between one `BEGIN IMMEDIATE` and one `COMMIT`, and replies to
/// each (at 1, each request in a transaction of its own: a sweep's first
/// step). A statement that fails answers its own caller with the error and
/// the others still commit; a failed COMMIT answers every one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct GroupCommit(u16);

impl GroupCommit {
    /// No group commit: each request its own autocommit statement.
    pub const OFF: GroupCommit = GroupCommit(0);
    /// Largest group.
    pub const MAX: u16 = 4096;

    /// The most requests one transaction runs (1 when off).
    pub fn size(self) -> usize {
        usize::from(self.0.max(1))
    }

    /// Whether requests run in transactions the writer opens.
    pub fn is_on(self) -> bool {
        self.0 >= 1
    }

    /// Groups of up to `size` requests (0 is off), if within [`Self::MAX`].
    pub fn of(size: u16) -> Option<GroupCommit> {
        (size <= Self::MAX).then_some(GroupCommit(size))
    }
}

impl fmt::Display for GroupCommit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_on() { write!(f, "{}", self.0) } else { f.write_str("off") }
    }
}

impl FromStr for GroupCommit {
    type Err = ParseError;
    /// `off` (or 0) or the most requests per transaction, 1 to
    /// [`GroupCommit::MAX`].
    fn from_str(s: &str) -> Result<Self, ParseError> {
        if s == "off" {
            return Ok(GroupCommit::OFF);
        }
        s.parse::<u16>().ok().and_then(GroupCommit::of).ok_or_else(|| {
            ParseError::new("group commit", s, format!("off, or 1 to {} requests per transaction", Self::MAX))
        })
    }
}

/// Where the caller and writer threads run (the harness's placement).
pub use hopscope_harness::Placement;

/// A busy-wait injected just before a hop's mark, so it lands in the slice
/// that ends at that hop. Used to check the instrument attributes a known
/// delay to the right slice.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InjectedDelay {
    /// The hop whose slice gets the delay.
    pub before: Hop,
    /// Busy-wait length.
    pub ns: u64,
    /// Which blocks wait.
    pub schedule: DelaySchedule,
}

/// Which blocks an injected delay runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DelaySchedule {
    /// Every block (what `--delay` asks for).
    #[default]
    Always,
    /// A crossover between two writer instances: only the measured passes
    /// whose pair index `pass / 2` is odd (`odd: true`) or even. Two arms
    /// with opposite parities carry the delay in turn, so whatever makes one
    /// instance faster than its twin (its heap, its files) cancels out of
    /// an effect pooled over both pairs.
    PassPairs {
        /// On in pass pairs 1, 3, … rather than 0, 2, ….
        odd: bool,
    },
}

impl DelaySchedule {
    /// Whether a delay under this schedule runs in measured pass `pass`
    /// (warm-up blocks run as pass 0 does).
    pub fn on_in_pass(self, pass: u32) -> bool {
        match self {
            DelaySchedule::Always => true,
            DelaySchedule::PassPairs { odd } => hopscope_analyze::resolution::carried_by_a(pass) == odd,
        }
    }
}

/// Longest injected delay: 10 ms per write.
pub const MAX_DELAY_NS: u64 = 10_000_000;

impl FromStr for InjectedDelay {
    type Err = ParseError;
    /// `HOP:NS`: a busy-wait of NS nanoseconds before HOP's mark (any
    /// standard hop after `enter`), e.g. `executed:500`.
    fn from_str(text: &str) -> Result<InjectedDelay, ParseError> {
        let (hop, ns) =
            text.split_once(':').ok_or_else(|| ParseError::new("delay", text, "HOP:NS, e.g. executed:500"))?;
        // Every hop the reference writer marks after the operation began
        // and before its caller moved on: each one waits before its mark
        // on every shape (`enter` has no slice before it, `returned` is
        // marked outside the writer).
        let before = crate::writer::writer_hops()
            .find(hop)
            .filter(|h| *h != Hop::ENTER && *h != Hop::RETURNED)
            .ok_or_else(|| {
                ParseError::new(
                    "delay hop",
                    hop,
                    "locked, built, sent, woke, executed, harvested, replied, idle, received or done; with group \
                     commit also begin, began, executing, commit or committed",
                )
            })?;
        match ns.parse::<u64>() {
            Ok(ns) if ns <= MAX_DELAY_NS => Ok(InjectedDelay { before, ns, schedule: DelaySchedule::Always }),
            _ => Err(ParseError::new("delay", ns, format!("nanoseconds, 0 to {MAX_DELAY_NS}"))),
        }
    }
}

/// Every knob of the reference writer; `Default` is the shipping setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Knobs {
    /// Reply path.
    pub reply: ReplyMode,
    /// Channel implementation.
    pub channel: ChannelKind,
    /// How the writer waits for requests.
    pub writer_wait: Wait,
    /// How callers wait for replies.
    pub caller_wait: Wait,
    /// Drain every queued request in one wake (each its own autocommit), or
    /// serve one request per wake.
    pub coalesce: bool,
    /// Report the tables each statement changed (update hook).
    pub harvest: bool,
    /// Run queued requests in shared transactions.
    pub group_commit: GroupCommit,
    /// Where reply values live.
    pub result_slot: ResultSlot,
    /// Busy-wait inside one slice, for calibration.
    pub delay: Option<InjectedDelay>,
    /// Thread placement.
    pub placement: Placement,
}

impl Default for Knobs {
    /// The shipping configuration: oneshot replies over crossbeam, reused
    /// per thread, parking waits, coalescing and harvest on.
    fn default() -> Knobs {
        Knobs {
            reply: ReplyMode::default(),
            channel: ChannelKind::default(),
            writer_wait: Wait::default(),
            caller_wait: Wait::default(),
            coalesce: true,
            harvest: true,
            group_commit: GroupCommit::OFF,
            result_slot: ResultSlot::default(),
            delay: None,
            placement: Placement::default(),
        }
    }
}

impl fmt::Display for Knobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "reply={} channel={} writer-wait={} caller-wait={} coalesce={} harvest={} result-slot={} placement={}",
            self.reply,
            self.channel,
            self.writer_wait,
            self.caller_wait,
            self.coalesce,
            self.harvest,
            self.result_slot,
            self.placement
        )?;
        if self.group_commit.is_on() {
            write!(f, " group-commit={}", self.group_commit)?;
        }
        if let Some(d) = self.delay {
            write!(f, " delay={}ns@hop{}", d.ns, d.before.0)?;
        }
        Ok(())
    }
}

macro_rules! keyword_enum {
    ($ty:ty, $what:literal, $($variant:path => $word:literal),+ $(,)?) => {
        impl fmt::Display for $ty {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(match self { $($variant => $word),+ })
            }
        }
        impl FromStr for $ty {
            type Err = ParseError;
            fn from_str(s: &str) -> Result<Self, ParseError> {
                match s {
                    $($word => Ok($variant),)+
                    other => Err(ParseError::new($what, other, format!("one of {}", [$($word),+].join(", ")))),
                }
            }
        }
    };
}

keyword_enum!(ReplyMode, "reply mode", ReplyMode::Oneshot => "oneshot", ReplyMode::Persistent => "persistent");
keyword_enum!(
    ChannelKind,
    "channel kind",
    ChannelKind::Std => "std",
    ChannelKind::Crossbeam => "crossbeam",
    ChannelKind::Parking => "parking"
);
keyword_enum!(BlobHandover, "blob hand-over", BlobHandover::Copy => "copy", BlobHandover::Move => "move", BlobHandover::Shared => "shared");
keyword_enum!(ResultSlot, "result slot", ResultSlot::Allocate => "allocate", ResultSlot::Reuse => "reuse");

impl Wait {
    /// The wait to use when the two threads may share one core. Spinning
    /// then starves the very thread being waited for (a write took ~8 ms on
    /// a 16-vCPU host with both pinned to one core), so a spin becomes a
    /// yield of the same window; park and yield are unchanged.
    pub fn on(self, placement: Placement) -> Wait {
        let one_core = placement.shares_a_core();
        match self {
            Wait::Spin(window) if one_core => Wait::Yield(window),
            Wait::Adaptive(..) if one_core => Wait::Park,
            other => other,
        }
    }
}

impl fmt::Display for Wait {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Wait::Park => f.write_str("park"),
            Wait::Spin(d) => write!(f, "spin:{}us", d.as_micros()),
            Wait::Yield(d) => write!(f, "yield:{}us", d.as_micros()),
            Wait::Tick(d) => write!(f, "tick:{}us", d.as_micros()),
            Wait::Adaptive(d, None) => write!(f, "adaptive:{}us", d.as_micros()),
            Wait::Adaptive(d, Some(budget)) => write!(f, "adaptive:{}us:{budget}", d.as_micros()),
        }
    }
}

/// Longest keep-warm window: one second of spinning per wait.
pub const MAX_WAIT_WINDOW_US: u64 = 1_000_000;

impl FromStr for Wait {
    type Err = ParseError;
    /// `park`, `spin:50us`, `yield:20us`, `tick:200us`, `adaptive:30us` or
    /// `adaptive:30us:1.5x` (a bare number is microseconds).
    fn from_str(s: &str) -> Result<Self, ParseError> {
        let window = |w: &str| -> Result<Duration, ParseError> {
            let digits = w.strip_suffix("us").unwrap_or(w);
            match digits.parse::<u64>() {
                Ok(us) if us <= MAX_WAIT_WINDOW_US => Ok(Duration::from_micros(us)),
                _ => Err(ParseError::new("wait window", w, format!("0 to {MAX_WAIT_WINDOW_US} µs, e.g. 50us"))),
            }
        };
        match s.split_once(':') {
            None if s == "park" => Ok(Wait::Park),
            Some(("spin", w)) => Ok(Wait::Spin(window(w)?)),
            Some(("yield", w)) => Ok(Wait::Yield(window(w)?)),
            Some(("tick", w)) => Ok(Wait::Tick(window(w)?)),
            Some(("adaptive", rest)) => match rest.split_once(':') {
                None => Ok(Wait::Adaptive(window(rest)?, None)),
                Some((w, budget)) => Ok(Wait::Adaptive(window(w)?, Some(budget.parse()?))),
            },
            _ => Err(ParseError::new(
                "wait",
                s,
                "park, spin:<us>, yield:<us>, tick:<us>, adaptive:<us> or adaptive:<us>:<budget>x",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keywords_round_trip() {
        for w in
            ["park", "spin:50us", "yield:20us", "tick:200us", "adaptive:30us", "adaptive:30us:1.5x", "adaptive:5us:2x"]
        {
            assert_eq!(w.parse::<Wait>().expect("parses").to_string(), w);
        }
        assert_eq!("spin:7".parse::<Wait>(), Ok(Wait::Spin(Duration::from_micros(7))));
        assert_eq!("1.25".parse::<CpuBudget>().map(CpuBudget::ratio), Ok(1.25));
        for bad in ["0.5x", "101x", "x", "nan", "adaptive:30us:fast"] {
            let parsed = bad.parse::<CpuBudget>().map(|_| ()).or_else(|_| bad.parse::<Wait>().map(|_| ()));
            assert!(parsed.is_err(), "{bad} accepted");
        }
        assert_eq!("persistent".parse::<ReplyMode>(), Ok(ReplyMode::Persistent));
        assert!("sometimes".parse::<ReplyMode>().unwrap_err().to_string().contains("oneshot, persistent"));
        assert_eq!("same-core".parse::<Placement>(), Ok(Placement::SameCore));
    }
}
