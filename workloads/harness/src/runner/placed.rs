//! Guards that place the thread driving a run and give its place back,
//! however the scope ends.

use crate::placement::{Affinity, Pin, Placement};

/// The calling thread placed as a caller until this is dropped, when its
/// affinity is given back.
pub(super) struct Placed(Option<Affinity>);

impl Placed {
    pub(super) fn here(placement: Placement) -> Placed {
        let before = Affinity::current();
        placement.place_caller();
        Placed(before)
    }
}

impl Drop for Placed {
    fn drop(&mut self) {
        if let Some(affinity) = &self.0 {
            affinity.restore();
        }
    }
}

/// The calling thread placed as a lane's own thread until this is dropped
/// (a panicking opener included), when it goes back to the callers' place.
pub(super) struct PlacedAsWorker(Placement);

impl PlacedAsWorker {
    pub(super) fn here(worker: Placement, driver: Placement) -> PlacedAsWorker {
        worker.place_worker();
        PlacedAsWorker(driver)
    }
}

impl Drop for PlacedAsWorker {
    fn drop(&mut self) {
        self.0.place_caller();
    }
}
