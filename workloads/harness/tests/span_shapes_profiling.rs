//! [`span_shapes`](../span_shapes.rs) through the profiling path: the same
//! program's spans through `HopSubscriber`, no Registry, against its direct
//! marks, in every placement. Figures: `cargo test --release -p
//! hopscope-harness --features tracing --test span_shapes_profiling --
//! --nocapture`.

#![cfg(feature = "tracing")]

mod common;
#[path = "shapes/compare.rs"]
mod compare;
#[path = "shapes/program.rs"]
mod program;

#[test]
fn profiled_span_slices_of_every_shape_land_on_the_direct_marks_net_of_their_machinery() {
    compare::every_placement("profiling", || program::layer().subscriber().into());
}
