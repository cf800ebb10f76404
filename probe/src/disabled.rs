//! `hop!` when the `enabled` feature is off: nothing at all.

/// Mark that operation `$op` ([`OpId`](crate::OpId)) passed hop `$hop`
/// ([`Hop`](crate::Hop)) now, on the current thread's buffer.
///
/// This build has the `enabled` feature off: the arguments are type-checked
/// (so code does not rot) but never evaluated, and no code is emitted.
#[macro_export]
macro_rules! hop {
    ($op:expr, $hop:expr $(,)?) => {
        if false {
            let _: (&$crate::OpId, &$crate::Hop) = (&$op, &$hop);
        }
    };
}

/// Record that shared interval `$shared` serves operation `$member`.
///
/// This build has the `enabled` feature off: the arguments are
/// type-checked but never evaluated, and no code is emitted.
#[macro_export]
macro_rules! serves {
    ($shared:expr, $member:expr $(,)?) => {
        if false {
            let _: (&$crate::OpId, &$crate::OpId) = (&$shared, &$member);
        }
    };
}

/// Whether `hop!` records in this build.
pub const ENABLED: bool = false;
