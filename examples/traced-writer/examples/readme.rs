use hopscope_harness::{Harness, Lane};
use hopscope_probe::HopLayer;
use traced_writer::{Writer, insert_on, note, open_db};

#[rustfmt::skip]
fn main() -> std::process::ExitCode {
    Harness::from_args("my-writer")
        .lane(Lane::baseline("inline", |s| open_db(&s.path("inline.db")), |db, op| insert_on(db, op.index() as i64, &note(op.index())).map(drop)))
        .lane(Lane::subject("my-writer", |s| Writer::open(&s.path("w.db")), |w, op| w.insert(op.index() as i64, note(op.index())).map(drop))
            .probed_by_spans(HopLayer::new().caller("write").database("execute")))
        .main()
}
