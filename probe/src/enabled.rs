//! `hop!` when the `enabled` feature is on: a real mark.

/// Mark that operation `$op` ([`OpId`](crate::OpId)) passed hop `$hop`
/// ([`Hop`](crate::Hop)) now, on the current thread's buffer.
///
/// With the `enabled` feature this is a call to [`record`](crate::local::record);
/// without it, the arguments are type-checked but never evaluated and no
/// code is emitted.
#[macro_export]
macro_rules! hop {
    ($op:expr, $hop:expr $(,)?) => {
        $crate::local::record($op, $hop)
    };
}

/// Record that shared interval `$shared` ([`OpId`](crate::OpId), its hops
/// marked once under that id) serves operation `$member`: a link, one
/// store, no clock read ([`serves`](crate::local::serves)). Compiles to
/// nothing without the `enabled` feature, like [`hop!`].
#[macro_export]
macro_rules! serves {
    ($shared:expr, $member:expr $(,)?) => {
        $crate::local::serves($shared, $member)
    };
}

/// Whether `hop!` records in this build.
pub const ENABLED: bool = true;
