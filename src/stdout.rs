//! Text for stdout, written so that a reader who went away ends the output
//! rather than the program.

/// Print `text` on stdout. A reader that went away (`hopscope history |
/// head`) ends the output, not the program with a panic: what it wanted
/// it has.
pub(crate) fn emit(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut stdout = std::io::stdout().lock();
    match stdout.write_all(text.as_bytes()).and_then(|()| stdout.flush()) {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(err).context("cannot write"))
        }
        _ => Ok(()),
    }
}
