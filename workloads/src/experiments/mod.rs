//! Experiments on the reference writer, each a series of harness runs:
//! the keep-warm sweep ([`keep_warm`]) and the instrument's resolution
//! ([`resolve`]); and the specs of `hopscope ab`'s pre-registered A/B
//! experiments ([`ab_spec`]).

pub mod ab_spec;
pub mod keep_warm;
pub mod resolve;
