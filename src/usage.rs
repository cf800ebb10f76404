//! A usage error as a value: a subcommand that finds flags clap's own
//! parsing cannot judge returns one, and `main` turns it into clap's usage
//! line and exit 2. The subcommands need not know the command line's whole
//! shape (`Cli`), which holds them.

/// Flags refused after clap's parsing (they need the other flags, or a
/// table of names): `main` exits 2 with clap's usage line for `subcommand`,
/// as it does for the errors clap finds itself.
#[derive(Debug)]
pub(crate) struct UsageError {
    /// The subcommand whose usage line is shown.
    pub(crate) subcommand: &'static str,
    /// Which of clap's kinds of usage error this is.
    pub(crate) kind: clap::error::ErrorKind,
    /// What is wrong, in clap's words' place.
    pub(crate) message: String,
}

impl UsageError {
    /// A usage error of `subcommand`, as an error a command returns.
    pub(crate) fn new(subcommand: &'static str, kind: clap::error::ErrorKind, message: impl Into<String>) -> Self {
        UsageError { subcommand, kind, message: message.into() }
    }
}

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for UsageError {}
