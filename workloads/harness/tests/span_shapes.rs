//! Span slices of every shape against direct marks of the same program,
//! through the Registry path (`HopLayer`), in every placement of its two
//! threads (`tests/shapes/program.rs`; `tests/span_shapes_profiling.rs`
//! runs the profiling path, in a process of its own since a process's
//! spans take one path). Print the figures with `cargo test --release -p
//! hopscope-harness --features tracing --test span_shapes -- --nocapture`;
//! `HOPSCOPE_SHAPES_RUNS=7` repeats each placement.

#![cfg(feature = "tracing")]

mod common;
#[path = "shapes/compare.rs"]
mod compare;
#[path = "shapes/program.rs"]
mod program;

#[test]
fn span_slices_of_every_shape_land_on_the_direct_marks_net_of_their_machinery() {
    compare::every_placement("registry", || program::layer().into());
}
