//! Peers: published crates that run SQLite on a thread behind a channel,
//! measured as lanes next to inline, floor and the reference writer.
//!
//! Each peer opens its own database with the same pragmas and schema, runs
//! the same statement with the same parameters, and is decomposed from
//! outside: `peer − inline` is its hop, `peer − floor` its machinery beyond
//! the bare boundary. The lanes themselves are built with the `peers` cargo
//! feature; without it a plan naming a peer is refused before it runs.

#[cfg(feature = "peers")]
mod lane;
mod peer;

#[cfg(feature = "peers")]
pub(crate) use lane::open;
pub use peer::Peer;

/// Whether this build has the peer lanes (the `peers` cargo feature).
pub const BUILT: bool = cfg!(feature = "peers");

/// The refusal of a peer lane in a build without them, saying how to get
/// them.
pub(crate) fn not_built(lane: &str) -> crate::RunError {
    crate::RunError::Plan(format!(
        "lane `{lane}`: this build has no peer lanes (they are opt-in: build hopscope with `--features peers`)"
    ))
}
