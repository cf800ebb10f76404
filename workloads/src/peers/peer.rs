//! Which peer a lane runs: each published crate by name, with the version
//! linked and how a call travels. In every build (a plan names peers with or
//! without the `peers` feature), and a leaf the lanes name without the
//! peers' code.

use std::fmt;
use std::str::FromStr;

/// A peer crate (and, for async-sqlite, which of its two APIs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    /// `tokio-rusqlite`: a thread per connection fed by a crossbeam
    /// channel of boxed closures, each answered on a tokio oneshot.
    TokioRusqlite,
    /// `async-sqlite`'s async API: a crossbeam channel of closures, each
    /// answered on a futures oneshot.
    AsyncSqlite,
    /// `async-sqlite`'s blocking API: the same thread, answered on a
    /// crossbeam `bounded(1)` the caller blocks on.
    AsyncSqliteBlocking,
    /// `sqlx`'s SQLite driver: a worker thread per connection fed by a
    /// flume channel of commands, its statements prepared and cached.
    Sqlx,
    /// `deadpool-sqlite`: a pool of rusqlite connections behind a mutex,
    /// each call moved to tokio's blocking thread pool (`spawn_blocking`).
    Deadpool,
}

impl Peer {
    /// Every peer, in the order lanes are listed.
    pub const ALL: [Peer; 5] =
        [Peer::TokioRusqlite, Peer::AsyncSqlite, Peer::AsyncSqliteBlocking, Peer::Sqlx, Peer::Deadpool];

    /// The lane's name: the crate's, plus the API where a crate has two.
    pub fn name(self) -> &'static str {
        match self {
            Peer::TokioRusqlite => "tokio-rusqlite",
            Peer::AsyncSqlite => "async-sqlite",
            Peer::AsyncSqliteBlocking => "async-sqlite-blocking",
            Peer::Sqlx => "sqlx-sqlite",
            Peer::Deadpool => "deadpool-sqlite",
        }
    }

    /// The crate and the exact version linked (pinned in Cargo.toml).
    pub fn version(self) -> &'static str {
        match self {
            Peer::TokioRusqlite => "tokio-rusqlite 0.7.0",
            Peer::AsyncSqlite | Peer::AsyncSqliteBlocking => "async-sqlite 0.5.3",
            Peer::Sqlx => "sqlx 0.9.0 (sqlx-sqlite 0.9.0)",
            Peer::Deadpool => "deadpool-sqlite 0.12.1",
        }
    }

    /// How a call travels and how the caller waits, in one line.
    pub fn waits(self) -> &'static str {
        match self {
            Peer::TokioRusqlite => {
                "boxed closure on a crossbeam channel to the connection's thread; tokio oneshot reply awaited on a current-thread runtime"
            }
            Peer::AsyncSqlite => {
                "boxed closure on a crossbeam channel to the connection's thread; futures oneshot reply awaited on a current-thread runtime"
            }
            Peer::AsyncSqliteBlocking => {
                "boxed closure on a crossbeam channel to the connection's thread; caller blocks on a crossbeam bounded(1) reply"
            }
            Peer::Sqlx => {
                "command on a flume channel to the connection's worker thread (statement cache on); reply awaited on a current-thread runtime; callers share the connection through an async mutex"
            }
            Peer::Deadpool => {
                "pool checkout (max 1 connection), then spawn_blocking onto tokio's blocking pool, connection behind a mutex; awaited on a current-thread runtime"
            }
        }
    }
}

impl fmt::Display for Peer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Peer {
    type Err = crate::error::ParseError;

    fn from_str(s: &str) -> Result<Peer, crate::error::ParseError> {
        Peer::ALL.into_iter().find(|p| p.name() == s).ok_or_else(|| {
            let names: Vec<&str> = Peer::ALL.iter().map(|p| p.name()).collect();
            crate::error::ParseError::new("peer", s, names.join(", "))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_peer_parses_from_its_lane_name() {
        for peer in Peer::ALL {
            assert_eq!(peer.name().parse::<Peer>(), Ok(peer));
        }
        assert!("sqlite".parse::<Peer>().unwrap_err().to_string().contains("tokio-rusqlite"));
    }
}
