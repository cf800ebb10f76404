use hopscope_harness::{Harness, Lane};
use hopscope_probe::{Hop, HopLayer};
use traced_writer::{Writer, insert_on, note, open_db};
use tracing_subscriber::layer::SubscriberExt;

#[rustfmt::skip]
fn main() -> std::process::ExitCode {
    let layer = HopLayer::new().span("write", Hop::ENTER, Some(Hop::DONE)).span("execute", Hop::WOKE, Some(Hop::EXECUTED));
    let probed = tracing::Dispatch::new(tracing_subscriber::registry().with(layer));
    Harness::from_args("my-writer")
        .lane(Lane::baseline("inline", |s| open_db(&s.path("inline.db")), |db, op| insert_on(db, op.index() as i64, &note(op.index())).map(drop)))
        .lane(Lane::subject("my-writer", |s| Writer::open(&s.path("w.db")), |w, op| w.insert(op.index() as i64, note(op.index())).map(drop))
            .on_thread("writer", |w, job| w.on_writer_thread(job))
            .probed_by(probed))
        .main()
}
