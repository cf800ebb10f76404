use tracing_subscriber::prelude::*;

#[rustfmt::skip]
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (layer, capture) = hopscope_probe::HopLayer::new().caller("write").database("execute").capture("target/notes.hop")?;
    tracing_subscriber::registry().with(layer).init();
    let writer = traced_writer::Writer::open("target/notes.db".as_ref())?;
    for k in 0..10_000 { writer.insert(k, traced_writer::note(k as u64))?; }
    println!("trace: {}", capture.finish()?.path.display());
    Ok(())
}
