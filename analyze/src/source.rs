//! Where an analysis reads its blocks from: a trace held in memory, or a
//! trace file read once per pass so that no more than one block is held
//! at a time.

use std::path::{Path, PathBuf};

use hopscope_probe::{Block, Salvage, Trace, TraceError, TraceHeader, TraceReader};

use crate::decomposition::{AnalyzeError, Partial};

/// The blocks of one trace, visited in trace order once per pass. Every
/// pass must see the same blocks. A source is read on another thread than
/// the one analysing its blocks (the decode runs beside the analysis), so
/// it is `Send`.
pub trait BlockSource: Send {
    /// The trace's header.
    fn header(&self) -> &TraceHeader;

    /// Call `visit(index, block)` for every block, in order.
    fn replay(&mut self, visit: &mut dyn FnMut(usize, &Block)) -> Result<(), AnalyzeError>;

    /// [`BlockSource::replay`], handing each block over: what a pass run
    /// on several threads sends on. A file's blocks are its own already;
    /// a trace held in memory clones them.
    fn replay_owned(&mut self, visit: &mut dyn FnMut(usize, Block)) -> Result<(), AnalyzeError> {
        self.replay(&mut |index, block| visit(index, block.clone()))
    }

    /// What the blocks leave out of the run, known after the first replay:
    /// a file cut short or damaged after its header.
    fn partial(&self) -> Option<Partial> {
        None
    }
}

impl BlockSource for &Trace {
    fn header(&self) -> &TraceHeader {
        &self.header
    }

    fn replay(&mut self, visit: &mut dyn FnMut(usize, &Block)) -> Result<(), AnalyzeError> {
        for (index, block) in self.blocks.iter().enumerate() {
            visit(index, block);
        }
        Ok(())
    }
}

/// A trace file, streamed: each replay re-reads it block by block. A file
/// cut short or damaged after its header is salvaged as
/// [`Trace::salvage`] would: the first replay keeps every complete,
/// checksum-valid block, and later replays read exactly those.
#[derive(Debug)]
pub struct TraceFile {
    path: PathBuf,
    header: TraceHeader,
    /// Blocks the first replay kept, and what it could not read.
    kept: Option<(u64, Option<Salvage>)>,
}

impl TraceFile {
    /// Open `path` and read its preamble and header (refused as
    /// [`TraceReader::open`] refuses them).
    pub fn open(path: &Path) -> Result<TraceFile, TraceError> {
        let reader = TraceReader::open(path)?;
        Ok(TraceFile { path: path.to_owned(), header: reader.header().clone(), kept: None })
    }

    /// What the first replay could not read, if anything.
    pub fn salvage(&self) -> Option<&Salvage> {
        self.kept.as_ref().and_then(|(_, s)| s.as_ref())
    }

    /// The blocks the first replay kept (`None` before any replay).
    pub fn blocks(&self) -> Option<u64> {
        self.kept.as_ref().map(|(n, _)| *n)
    }

    fn changed(&self, why: String) -> AnalyzeError {
        AnalyzeError::Changed { path: self.path.clone(), why }
    }
}

impl BlockSource for TraceFile {
    fn header(&self) -> &TraceHeader {
        &self.header
    }

    fn replay(&mut self, visit: &mut dyn FnMut(usize, &Block)) -> Result<(), AnalyzeError> {
        self.replay_owned(&mut |index, block| visit(index, &block))
    }

    fn replay_owned(&mut self, visit: &mut dyn FnMut(usize, Block)) -> Result<(), AnalyzeError> {
        let mut reader = TraceReader::open(&self.path).map_err(|e| self.changed(e.to_string()))?;
        if reader.header() != &self.header {
            return Err(self.changed("its header differs".to_owned()));
        }
        match self.kept {
            None => {
                let mut index = 0usize;
                let salvage = loop {
                    match reader.next_salvaged() {
                        Ok(Some(block)) => {
                            visit(index, block);
                            index += 1;
                        }
                        Ok(None) => break None,
                        Err(salvage) => break Some(salvage),
                    }
                };
                self.kept = Some((index as u64, salvage));
            }
            Some((kept, _)) => {
                // Read as the first replay read: skipping what it skipped.
                for index in 0..kept {
                    match reader.next_salvaged() {
                        Ok(Some(block)) => visit(index as usize, block),
                        Ok(None) => return Err(self.changed(format!("it now ends after {index} blocks"))),
                        Err(salvage) if salvage.blocks_kept == index => {
                            return Err(self.changed(format!("it now ends after {index} blocks: {}", salvage.reason)));
                        }
                        Err(salvage) => return Err(self.changed(salvage.reason)),
                    }
                }
            }
        }
        Ok(())
    }

    fn partial(&self) -> Option<Partial> {
        self.salvage().map(Partial::from)
    }
}

/// Some windows of a capture: the blocks of another source whose pass (a
/// capture's window, from 0) is in `passes`, each under its own index, so
/// two windows of one capture are compared as two captures are.
#[derive(Debug)]
pub struct Windows<S> {
    source: S,
    passes: std::ops::RangeInclusive<u32>,
}

impl<S: BlockSource> Windows<S> {
    /// The blocks of `source` in windows `from` to `to`, numbered from 1
    /// as receipts number them.
    pub fn new(source: S, from: u32, to: u32) -> Windows<S> {
        Windows { source, passes: from.saturating_sub(1)..=to.saturating_sub(1) }
    }
}

impl<S: BlockSource> BlockSource for Windows<S> {
    fn header(&self) -> &TraceHeader {
        self.source.header()
    }

    fn replay(&mut self, visit: &mut dyn FnMut(usize, &Block)) -> Result<(), AnalyzeError> {
        self.replay_owned(&mut |index, block| visit(index, &block))
    }

    fn replay_owned(&mut self, visit: &mut dyn FnMut(usize, Block)) -> Result<(), AnalyzeError> {
        let (mut kept, mut windows) = (0u64, 0u32);
        let passes = self.passes.clone();
        self.source.replay_owned(&mut |index, block| {
            windows = windows.max(block.pass.saturating_add(1));
            if passes.contains(&block.pass) {
                kept += 1;
                visit(index, block);
            }
        })?;
        if kept == 0 {
            let (from, to) = (passes.start().saturating_add(1), passes.end().saturating_add(1));
            return Err(AnalyzeError::NoWindow { from, to, windows });
        }
        Ok(())
    }

    fn partial(&self) -> Option<Partial> {
        self.source.partial()
    }
}
