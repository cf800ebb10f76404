//! Injected delay: a busy-wait placed just before a hop's mark.

use hopscope_probe::{ClockInfo, Hop, clock};

use crate::knobs::InjectedDelay;

/// A resolved [`InjectedDelay`]: the hop and the wait in raw ticks. With no
/// delay configured, [`Delay::before`] is a single predictable branch.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Delay {
    target: Option<(Hop, u64)>,
}

impl Delay {
    pub(crate) fn new(delay: Option<InjectedDelay>, clock: &ClockInfo) -> Delay {
        // A zero-length delay is no delay: not even the check's clock reads,
        // so a 0 ns arm is identical to one without the knob.
        Delay {
            target: delay.filter(|d| d.ns > 0).map(|d| (d.before, (d.ns as f64 / clock.ns_per_tick).round() as u64)),
        }
    }

    /// Busy-wait if `hop` is the configured one.
    #[inline]
    pub(crate) fn before(&self, hop: Hop) {
        if let Some((target, ticks)) = self.target
            && target == hop
        {
            let start = clock::now();
            while clock::now().since(start) < ticks {
                std::hint::spin_loop();
            }
        }
    }
}
