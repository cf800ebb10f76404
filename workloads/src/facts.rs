//! What a run of reference lanes records about itself: a leaf, so the
//! commands and the experiments that run lanes name the same facts.

use crate::db::DbConfig;
use crate::shape::Shape;

/// What a run of reference lanes records about its shape and database, for
/// [`hopscope_harness::Harness::meta`]: the shape, the pragmas and SQLite's
/// version.
pub fn run_facts(shape: Shape, db: DbConfig) -> [(hopscope_probe::RunFact, String); 3] {
    use hopscope_probe::RunFact;
    [
        (RunFact::Shape, shape.to_string()),
        (RunFact::Db, db.to_string()),
        (RunFact::SqliteVersion, rusqlite::version().to_owned()),
    ]
}
