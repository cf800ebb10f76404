//! Shapes: what a block of operations writes. Every lane runs the same
//! statement with the same parameters on the same schema.
//!
//! Parameters are built before a block starts ([`Shape::inputs`]), so their
//! construction is outside every lane's measured region.

use std::fmt;
use std::str::FromStr;
use std::sync::Arc;

use crate::error::ParseError;
use crate::knobs::BlobHandover;
use crate::value::Value;

/// A write pattern.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// One caller, one insert at a time, each awaited before the next.
    SingleInsert,
    /// `callers` threads inserting at once, each awaiting its own writes.
    ConcurrentInsert {
        /// Caller threads.
        callers: usize,
    },
    /// One operation inserts `size` rows in one transaction.
    Batch {
        /// Rows per operation.
        size: usize,
    },
    /// One insert of a `bytes`-long blob, handed over as `handover` says.
    BlobInsert {
        /// Blob length.
        bytes: usize,
        /// How the blob reaches the writer thread.
        handover: BlobHandover,
    },
    /// An update that matches no row (prices the statement round trip).
    NoopUpdate,
    /// An update of one existing row by primary key.
    PointUpdate,
}

/// Rows seeded before an update shape runs; point updates cycle over them.
pub const SEED_ROWS: u64 = 1_000;

/// One operation's input.
#[derive(Debug, Clone)]
pub enum OpInput {
    /// One statement's parameters.
    One(Vec<Value>),
    /// The parameters of every statement of a batch.
    Many(Vec<Vec<Value>>),
}

const INSERT_ITEM: &str = "INSERT INTO items (k, v) VALUES (?1, ?2)";
const INSERT_BLOB: &str = "INSERT INTO blobs (k, data) VALUES (?1, ?2)";
const NOOP_UPDATE: &str = "UPDATE items SET v = v WHERE id = ?1";
const POINT_UPDATE: &str = "UPDATE items SET v = ?2 WHERE id = ?1";

impl Shape {
    /// The statement every lane runs.
    pub fn sql(&self) -> &'static str {
        match self {
            Shape::SingleInsert | Shape::ConcurrentInsert { .. } | Shape::Batch { .. } => INSERT_ITEM,
            Shape::BlobInsert { .. } => INSERT_BLOB,
            Shape::NoopUpdate => NOOP_UPDATE,
            Shape::PointUpdate => POINT_UPDATE,
        }
    }

    /// The table the shape writes.
    pub fn table(&self) -> &'static str {
        match self {
            Shape::BlobInsert { .. } => "blobs",
            _ => "items",
        }
    }

    /// Caller threads the shape uses.
    pub fn callers(&self) -> usize {
        match self {
            Shape::ConcurrentInsert { callers } => (*callers).max(1),
            _ => 1,
        }
    }

    /// Whether operations insert rows (so the table is emptied between blocks
    /// and its row count checked against the writes).
    pub fn inserts(&self) -> bool {
        !matches!(self, Shape::NoopUpdate | Shape::PointUpdate)
    }

    /// Rows one operation changes.
    pub fn rows_per_op(&self) -> u64 {
        match self {
            Shape::Batch { size } => *size as u64,
            Shape::NoopUpdate => 0,
            _ => 1,
        }
    }

    /// Rows to insert before the first block (update shapes need rows to hit).
    pub fn seed_rows(&self) -> u64 {
        if self.inserts() { 0 } else { SEED_ROWS }
    }

    /// Whether the floor writer (one fixed single statement) can run it.
    pub fn single_statement(&self) -> bool {
        !matches!(self, Shape::Batch { .. })
    }

    /// Inputs of `ops` operations for each of the shape's callers, numbered
    /// from `first`. `blob` is the shared source buffer of blob shapes.
    pub fn inputs(&self, first: u64, ops: u64, blob: &Arc<[u8]>) -> Vec<Vec<OpInput>> {
        let callers = self.callers() as u64;
        (0..callers)
            .map(|c| {
                let share = ops / callers + u64::from(c < ops % callers);
                (0..share).map(|i| self.input(first + c + i * callers, blob)).collect()
            })
            .collect()
    }

    /// The input of operation `n`.
    pub(crate) fn input(&self, n: u64, blob: &Arc<[u8]>) -> OpInput {
        let key = n as i64;
        match self {
            Shape::SingleInsert | Shape::ConcurrentInsert { .. } => {
                OpInput::One(vec![Value::Integer(key), Value::Text(format!("item-{n}"))])
            }
            Shape::Batch { size } => OpInput::Many(
                (0..*size as u64).map(|j| vec![Value::Integer(key), Value::Text(format!("item-{n}-{j}"))]).collect(),
            ),
            Shape::BlobInsert { handover, .. } => {
                let data = match handover {
                    // Copy and shared start from the caller's shared buffer;
                    // the lane copies (copy) or clones the count (shared).
                    BlobHandover::Copy | BlobHandover::Shared => Value::SharedBlob(Arc::clone(blob)),
                    BlobHandover::Move => Value::Blob(blob.to_vec()),
                };
                OpInput::One(vec![Value::Integer(key), data])
            }
            Shape::NoopUpdate => OpInput::One(vec![Value::Integer(-1)]),
            Shape::PointUpdate => {
                OpInput::One(vec![Value::Integer((n % SEED_ROWS) as i64 + 1), Value::Text(format!("updated-{n}"))])
            }
        }
    }

    /// The blob source buffer for this shape (empty for non-blob shapes).
    pub fn blob_source(&self) -> Arc<[u8]> {
        match self {
            Shape::BlobInsert { bytes, .. } => (0..*bytes).map(|i| (i % 251) as u8).collect::<Vec<u8>>().into(),
            _ => Arc::from(Vec::new()),
        }
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Shape::SingleInsert => f.write_str("single-insert"),
            Shape::ConcurrentInsert { callers } => write!(f, "concurrent-insert:{callers}"),
            Shape::Batch { size } => write!(f, "batch:{size}"),
            Shape::BlobInsert { bytes, handover } => {
                write!(f, "blob:{}:{handover}", format_size(*bytes))
            }
            Shape::NoopUpdate => f.write_str("noop-update"),
            Shape::PointUpdate => f.write_str("point-update"),
        }
    }
}

/// Largest blob a shape may write: far above the published experiments'
/// 1 MiB, small enough that every lane's inputs fit in memory.
pub const MAX_BLOB_BYTES: usize = 64 << 20;

/// Largest batch: rows per operation.
pub const MAX_BATCH_ROWS: usize = 100_000;

const SHAPES: &str =
    "single-insert, concurrent-insert:N, batch:K, blob:SIZE[:copy|move|shared], noop-update, point-update";

impl FromStr for Shape {
    type Err = ParseError;

    /// `single-insert`, `concurrent-insert:N`, `batch:K`,
    /// `blob:SIZE[:copy|move|shared]` (SIZE like `64k` or `1m`),
    /// `noop-update`, `point-update`.
    fn from_str(s: &str) -> Result<Shape, ParseError> {
        let bad = |why: String| ParseError::new("shape", s, why);
        let mut parts = s.split(':');
        let name = parts.next().unwrap_or_default();
        let arg = parts.next();
        let count = |what: &str, max: usize| -> Result<usize, ParseError> {
            let text = arg.ok_or_else(|| bad(format!("`{name}` needs a {what}, e.g. `{name}:8`")))?;
            match text.parse::<usize>() {
                Ok(n) if (1..=max).contains(&n) => Ok(n),
                _ => Err(bad(format!("{what} `{text}` must be 1 to {max}"))),
            }
        };
        let shape = match name {
            "single-insert" => Shape::SingleInsert,
            "concurrent-insert" => {
                Shape::ConcurrentInsert { callers: count("caller count", hopscope_harness::MAX_CALLERS)? }
            }
            "batch" => Shape::Batch { size: count("batch size", MAX_BATCH_ROWS)? },
            "blob" => {
                let size = arg.ok_or_else(|| bad("`blob` needs a size, e.g. `blob:64k`".to_owned()))?;
                let handover = parts.next().map_or(Ok(BlobHandover::Copy), str::parse)?;
                Shape::BlobInsert { bytes: parse_size(size).map_err(bad)?, handover }
            }
            "noop-update" => Shape::NoopUpdate,
            "point-update" => Shape::PointUpdate,
            _ => return Err(bad(format!("one of {SHAPES}"))),
        };
        let takes_arg = matches!(name, "concurrent-insert" | "batch" | "blob");
        if (!takes_arg && arg.is_some()) || parts.next().is_some() {
            return Err(bad(format!("too many `:` parts (shapes: {SHAPES})")));
        }
        Ok(shape)
    }
}

fn parse_size(text: &str) -> Result<usize, String> {
    let lower = text.to_ascii_lowercase();
    let (digits, unit) = match lower.strip_suffix('k') {
        Some(d) => (d, 1024),
        None => match lower.strip_suffix('m') {
            Some(d) => (d, 1024 * 1024),
            None => (lower.as_str(), 1),
        },
    };
    match digits.parse::<usize>().ok().and_then(|n| n.checked_mul(unit)) {
        Some(bytes) if (1..=MAX_BLOB_BYTES).contains(&bytes) => Ok(bytes),
        _ => Err(format!("blob size `{text}` must be 1 byte to 64m (e.g. 64k, 1m, 4096)")),
    }
}

fn format_size(bytes: usize) -> String {
    if bytes.is_multiple_of(1024 * 1024) {
        format!("{}m", bytes / (1024 * 1024))
    } else if bytes.is_multiple_of(1024) {
        format!("{}k", bytes / 1024)
    } else {
        bytes.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_round_trip_through_their_names() {
        for s in [
            "single-insert",
            "concurrent-insert:8",
            "batch:10",
            "blob:64k:copy",
            "blob:1m:move",
            "noop-update",
            "point-update",
        ] {
            assert_eq!(s.parse::<Shape>().expect("parses").to_string(), s);
        }
        assert_eq!("blob:256k".parse::<Shape>().expect("parses").to_string(), "blob:256k:copy");
        for bad in [
            "batch:0",
            "single-insert:5",
            "blob:18014398509481984m",
            "blob:65m",
            "concurrent-insert:70000",
            "blob:1k:copy:x",
        ] {
            assert!(bad.parse::<Shape>().is_err(), "{bad} accepted");
        }
        assert!("teleport".parse::<Shape>().unwrap_err().to_string().contains("single-insert"));
    }

    #[test]
    fn inputs_split_ops_across_callers_without_gaps() {
        let shape = Shape::ConcurrentInsert { callers: 3 };
        let inputs = shape.inputs(100, 10, &shape.blob_source());
        assert_eq!(inputs.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 3, 3]);
        let mut keys: Vec<i64> = inputs
            .iter()
            .flatten()
            .map(|input| match input {
                OpInput::One(p) => match p[0] {
                    Value::Integer(k) => k,
                    _ => panic!("key"),
                },
                OpInput::Many(_) => panic!("one"),
            })
            .collect();
        keys.sort_unstable();
        assert_eq!(keys, (100..110).collect::<Vec<_>>());
    }
}
