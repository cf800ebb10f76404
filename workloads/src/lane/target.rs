//! What runs a block's inputs: the one face every lane's code shows the
//! workload around it (the reference lanes, their hooked builds and the
//! peers), so the opening, the hooks and the peers share it without each
//! other.

use hopscope_harness::{BlockInfo, HandIn, Ops};

use crate::error::WriteError;
use crate::shape::OpInput;

/// What runs a block's inputs: the code of one reference lane.
pub(crate) trait Target: Send + Sync + 'static {
    /// Run `inputs` on the calling thread as caller `caller` (`ops` pace
    /// them with the run's gap); returns the rows changed.
    fn run(&self, caller: usize, inputs: Vec<OpInput>, ops: Ops) -> Result<u64, WriteError>;

    /// Before a block, outside its measured region (an injected delay's
    /// schedule flips here).
    fn before_block(&self, block: &BlockInfo) {
        let _ = block;
    }

    /// Have the lane's own thread hand its marks in.
    fn hand_in(&self, hand_in: &HandIn) -> Result<(), WriteError> {
        let _ = hand_in;
        Ok(())
    }
}
