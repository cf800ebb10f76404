//! The paragraphs under a slice table that says what the span machinery
//! is and what it cost: how a reader tells `tracing`'s own share from the
//! code's.

use std::fmt::Write as _;

/// What the span machinery is, under a slice table that states its share.
pub(super) fn render(m: &hopscope_probe::SpanMachinery, by_flag: bool, out: &mut String) -> std::fmt::Result {
    let chosen = if by_flag { " (chosen on the command line, `--span-path`, whatever the code declared)" } else { "" };
    let (what, path) = match m.path {
        hopscope_probe::SpanPath::Registry => (
            "the layer's callbacks and, between spans, the Registry closing one span and creating the next",
            "the Registry + HopLayer path (every span in the Registry's slab)",
        ),
        hopscope_probe::SpanPath::Subscriber => (
            "the subscriber's callbacks and, between spans, it closing one span and creating the next",
            "the HopSubscriber path (the profiling subscriber: no Registry, only watched spans created)",
        ),
    };
    writeln!(
        out,
        "\n*Span machinery* is what a slice between two `tracing` span edges on one thread holds besides your code: \
         {what}. The spans took {path}{chosen}. It was \
         measured in this process on empty operations ({} before the run and, in a harness run, 400 after every \
         probed block, whose medians are used): one span's whole life (create, enter, \
         exit, close) took {:.1} ns through {} ({:.1} ns under a bare Registry); inside a slice, \
         enter → own exit {:.1} ns, exit → next span's enter {:.1} ns, enter → child's enter {:.1} ns, child's exit \
         → exit {:.1} ns, against {:.1} ns between two `hop!` marks. *Net of it* subtracts that median; \
         cross-thread slices state none (each side's share runs concurrently with the other's).",
        m.samples,
        m.span_life_ns,
        m.path,
        m.registry_life_ns,
        m.inside_ns,
        m.between_ns,
        m.into_ns,
        m.out_of_ns,
        m.bare_mark_ns
    )?;
    if let Some(e) = &m.edges {
        writeln!(
            out,
            "\nThe layer recorded, during the run and on the thread that ran them, the span events between each two \
             consecutive marks; a slice of another shape holds its two edges' callbacks (enter → enter {:.1} ns, \
             exit → enter {:.1}, exit → exit {:.1}) plus each event's cost (a creation {:.1} ns, a close {:.1}, an \
             enter or exit that marks nothing {:.1} and {:.1}), measured after every probed block on one warm \
             thread. Where the program's threads sleep between operations on cores of their own, the first span \
             close after a wake costs more than that, and the slice holding it reads high by up to the cost of a \
             close.",
            e.enter_enter_ns,
            e.exit_enter_ns,
            e.exit_exit_ns,
            e.create_ns,
            e.close_ns,
            e.enter_enter_ns,
            e.exit_exit_ns
        )?;
    }
    Ok(())
}
