//! A slice's name: the hop that opens it and the hop that closes it,
//! written `from→to` everywhere a person reads it (receipts, charts,
//! what-if arms, `resolve`). Built and parsed only here, so no other code
//! splits or joins names on the arrow.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The arrow between a slice's two hops.
pub const ARROW: char = '→';

/// The ASCII spelling a user may type instead of [`ARROW`] (`sent->woke`).
pub const ASCII_ARROW: &str = "->";

/// A slice's two hops by name: `from→to`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SliceName {
    /// The hop that opens the slice.
    pub from: String,
    /// The hop that closes it.
    pub to: String,
}

impl SliceName {
    /// The slice from hop `from` to hop `to`.
    pub fn new(from: impl Into<String>, to: impl Into<String>) -> SliceName {
        SliceName { from: from.into(), to: to.into() }
    }

    /// Whether `name` is a slice name that ends at hop `to`.
    pub fn ends_at(name: &str, to: &str) -> bool {
        name.parse::<SliceName>().is_ok_and(|s| s.to == to)
    }

    /// The hop a slice named `name` ends at (`None` for a name that is
    /// not `from→to`).
    pub fn end_of(name: &str) -> Option<String> {
        name.parse::<SliceName>().ok().map(|s| s.to)
    }
}

impl fmt::Display for SliceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{ARROW}{}", self.from, self.to)
    }
}

/// A string that is not `from→to` (or `from->to`) with two hop names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("`{0}` is not a slice name: write it `from→to` (or `from->to`), two hop names")]
pub struct NotASliceName(pub String);

impl FromStr for SliceName {
    type Err = NotASliceName;

    /// `from→to` or `from->to`; each side trimmed and non-empty, and no
    /// second arrow of the kind that split them.
    fn from_str(s: &str) -> Result<SliceName, NotASliceName> {
        let bad = || NotASliceName(s.to_owned());
        // The arrow when there is one (a hop may be named `a->b`), else
        // the ASCII spelling.
        let arrow = if s.contains(ARROW) { ARROW.encode_utf8(&mut [0; 4]).to_owned() } else { ASCII_ARROW.to_owned() };
        let (from, to) = s.split_once(arrow.as_str()).ok_or_else(bad)?;
        let (from, to) = (from.trim(), to.trim());
        if from.is_empty() || to.is_empty() || to.contains(arrow.as_str()) {
            return Err(bad());
        }
        Ok(SliceName::new(from, to))
    }
}

impl Serialize for SliceName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for SliceName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<SliceName, D::Error> {
        let text = String::deserialize(deserializer)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_reads_back_as_it_was_written() {
        let name = SliceName::new("sent", "woke");
        assert_eq!(name.to_string(), "sent→woke");
        assert_eq!("sent→woke".parse::<SliceName>(), Ok(name.clone()));
        assert_eq!(" sent -> woke ".parse::<SliceName>(), Ok(name.clone()));
        let json = serde_json::to_string(&name).unwrap();
        assert_eq!(json, "\"sent→woke\"");
        assert_eq!(serde_json::from_str::<SliceName>(&json).unwrap(), name);
    }

    #[test]
    fn what_is_not_two_hops_is_refused() {
        for bad in ["sent", "→woke", "sent→", "a→b→c", "a->b->c", "", "→"] {
            assert!(bad.parse::<SliceName>().is_err(), "{bad:?}");
        }
        assert!(serde_json::from_str::<SliceName>("\"nope\"").is_err());
        assert!(SliceName::ends_at("built→sent", "sent"));
        assert!(!SliceName::ends_at("built→sent", "built"));
        assert_eq!(SliceName::end_of("enter→built").as_deref(), Some("built"));
        assert_eq!(SliceName::end_of("not a slice"), None);
        // A hop may carry the ASCII arrow in its name when the real one splits.
        assert_eq!("a->b→c".parse::<SliceName>(), Ok(SliceName::new("a->b", "c")));
    }
}
