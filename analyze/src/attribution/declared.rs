//! What a program declared about a span or hop, and the declaration that
//! would fix it, as data read back from its trace: the receipt spells both
//! as the code a user writes (`hopscope_reports::receipt::warning`).

use hopscope_probe::Side;
use serde::{Deserialize, Serialize};

/// The `HopLayer` method a span was declared with by name, read back from
/// its exit hop's side and owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SpanMethod {
    /// `caller`: the caller's own work.
    Caller,
    /// `wait`: the caller waiting inside it.
    Wait,
    /// `writer`: the writer's own work.
    Writer,
    /// `database`: the writer's database call (SQLite's time).
    Database,
    /// A span whose declaration the trace does not say.
    Span,
}

impl SpanMethod {
    /// The method's name as a user calls it.
    pub fn name(self) -> &'static str {
        match self {
            SpanMethod::Caller => "caller",
            SpanMethod::Wait => "wait",
            SpanMethod::Writer => "writer",
            SpanMethod::Database => "database",
            SpanMethod::Span => "span",
        }
    }
}

/// How a hop came to be in the trace, with the side it was declared on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum Declared {
    /// A span declared by name (`HopLayer::writer("execute")`).
    Span {
        /// The span.
        span: String,
        /// The method.
        method: SpanMethod,
        /// The side its hops are on.
        side: Side,
    },
    /// A span mapped onto a hop of the hop table.
    Mapped {
        /// The span.
        span: String,
        /// The hop it marks.
        hop: String,
        /// The hop's side.
        side: Side,
    },
    /// A hop of the program's own hop table.
    Hop {
        /// The hop.
        hop: String,
        /// Its side.
        side: Side,
    },
}

impl Declared {
    /// The side the declaration puts the hop on.
    pub fn side(&self) -> Side {
        match self {
            Declared::Span { side, .. } | Declared::Mapped { side, .. } | Declared::Hop { side, .. } => *side,
        }
    }
}

/// The declaration that makes a slice SQLite's.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum SqliteFix {
    /// Declare the span ending it with `HopLayer::database` in place of
    /// the method it was declared with.
    Database {
        /// The span.
        span: String,
        /// Its method now.
        method: SpanMethod,
    },
    /// `.owned_by(span, Owner::Sqlite)` on the layer.
    OwnedBy {
        /// The span whose exit ends the slice.
        span: String,
    },
    /// `HopTable::set_owner` with `Owner::Sqlite` on the hop that ends it
    /// (`None`: the slice was not found among the lane's).
    SetOwner {
        /// The hop.
        hop: Option<String>,
    },
}
