//! `notes-by-sqlite`: the async notes service decomposed through SQLite's
//! own trace hook alone (its spans unused, tokio-rusqlite unmodified): the
//! way to slice a writer whose code you cannot or would rather not
//! instrument. Harness flags as for any harness program (`--quick`,
//! `--out DIR`, `--help`).

fn main() -> std::process::ExitCode {
    async_notes::decompose::sqlite_lanes(hopscope_harness::Harness::from_args("notes-by-sqlite")).main()
}
