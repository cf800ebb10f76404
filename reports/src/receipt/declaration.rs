//! A program's declarations, and the ones that fix them, said as the code
//! a user writes: `HopLayer::writer("execute")`, `Side::Writer`.

use hopscope_analyze::attribution::{Declared, SqliteFix};
use hopscope_analyze::recorded::Recorded;
use hopscope_probe::Side;

/// What the program declared, as a phrase the warning goes on from.
pub(super) fn declared(d: &Declared) -> String {
    match d {
        Declared::Span { span, method, .. } => format!("span `{span}` is declared {}(\"{span}\")", method.name()),
        Declared::Mapped { span, hop, side } => {
            format!("span `{span}` is mapped onto hop `{hop}`, a {} hop,", side_word(*side))
        }
        Declared::Hop { hop, side } => format!("hop `{hop}` is declared on the {} side", side_word(*side)),
    }
}

/// The declaration that puts what `d` declared on the other side.
pub(super) fn side_fix(d: &Declared) -> String {
    match d {
        Declared::Span { span, side: Side::Caller, .. } => {
            format!("declare it HopLayer::writer(\"{span}\") or, if it wraps the database call, database(\"{span}\")")
        }
        Declared::Span { span, side: Side::Writer, .. } => {
            format!("declare it HopLayer::caller(\"{span}\") or, if the caller waits inside it, wait(\"{span}\")")
        }
        Declared::Mapped { side, .. } => format!("map it onto a hop of the {} side", side_word(other(*side))),
        Declared::Hop { side, .. } => format!("declare it Side::{:?} in the hop table", other(*side)),
    }
}

/// The declaration that makes a slice SQLite's (an older result's text as
/// it was).
pub(super) fn sqlite_fix(fix: &Recorded<SqliteFix>) -> String {
    match fix {
        Recorded::Typed(SqliteFix::Database { span, method }) => {
            format!("HopLayer::database(\"{span}\") in place of {}(\"{span}\")", method.name())
        }
        Recorded::Typed(SqliteFix::OwnedBy { span }) => format!(".owned_by(\"{span}\", Owner::Sqlite) on the layer"),
        Recorded::Typed(SqliteFix::SetOwner { hop: Some(hop) }) => {
            format!("HopTable::set_owner on hop `{hop}` with Owner::Sqlite")
        }
        Recorded::Typed(SqliteFix::SetOwner { hop: None }) => {
            "HopTable::set_owner(hop, Owner::Sqlite) on the hop that ends it".to_owned()
        }
        Recorded::Sentence(text) => text.clone(),
    }
}

fn side_word(side: Side) -> &'static str {
    match side {
        Side::Caller => "caller's",
        Side::Writer => "writer's",
    }
}

fn other(side: Side) -> Side {
    match side {
        Side::Caller => Side::Writer,
        Side::Writer => Side::Caller,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hopscope_analyze::attribution::SpanMethod;

    #[test]
    fn each_declaration_is_said_with_the_code_that_fixes_it() {
        let caller = Declared::Span { span: "sql".into(), method: SpanMethod::Caller, side: Side::Caller };
        assert_eq!(declared(&caller), "span `sql` is declared caller(\"sql\")");
        let fix = side_fix(&caller);
        assert!(fix.contains("HopLayer::writer(\"sql\")") && fix.contains("database(\"sql\")"), "{fix}");
        let hop = Declared::Hop { hop: "built".into(), side: Side::Writer };
        assert_eq!(side_fix(&hop), "declare it Side::Caller in the hop table");
        let mapped = Declared::Mapped { span: "send".into(), hop: "sent".into(), side: Side::Caller };
        assert_eq!(side_fix(&mapped), "map it onto a hop of the writer's side");
        let database = SqliteFix::Database { span: "execute".into(), method: SpanMethod::Writer };
        assert_eq!(
            sqlite_fix(&Recorded::Typed(database)),
            "HopLayer::database(\"execute\") in place of writer(\"execute\")"
        );
        assert_eq!(sqlite_fix(&Recorded::Sentence("as written".into())), "as written");
    }
}
