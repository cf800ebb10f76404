//! Statements and their parameters, as a caller hands them to a lane.
//!
//! [`Value`] is owned and `'static`, so it can travel to the writer thread.
//! [`ValueRef`] borrows, for callers whose data the writer must copy into the
//! request (the "copy" blob hand-over). Both bind to SQLite without further
//! copies.

use std::sync::Arc;

use rusqlite::types::{ToSqlOutput, ValueRef as SqlValueRef};

/// SQL text. String literals travel as a pointer; other text is shared, so a
/// request never copies the SQL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Sql {
    /// A string literal.
    Static(&'static str),
    /// Text built at run time, shared by reference count.
    Shared(Arc<str>),
}

impl Sql {
    /// The SQL text.
    pub fn as_str(&self) -> &str {
        match self {
            Sql::Static(s) => s,
            Sql::Shared(s) => s,
        }
    }
}

impl From<&'static str> for Sql {
    fn from(s: &'static str) -> Sql {
        Sql::Static(s)
    }
}

impl From<String> for Sql {
    fn from(s: String) -> Sql {
        Sql::Shared(s.into())
    }
}

impl From<Arc<str>> for Sql {
    fn from(s: Arc<str>) -> Sql {
        Sql::Shared(s)
    }
}

/// An owned statement parameter.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Integer(i64),
    /// A double.
    Real(f64),
    /// UTF-8 text.
    Text(String),
    /// A blob owned by the request (handed over by move, or copied in).
    Blob(Vec<u8>),
    /// A blob shared with the caller: the request holds a reference count.
    SharedBlob(Arc<[u8]>),
}

/// A borrowed statement parameter; the writer copies it into its request.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ValueRef<'a> {
    /// SQL NULL.
    Null,
    /// A 64-bit integer.
    Integer(i64),
    /// A double.
    Real(f64),
    /// UTF-8 text.
    Text(&'a str),
    /// A blob.
    Blob(&'a [u8]),
}

impl ValueRef<'_> {
    /// Copy into an owned [`Value`].
    pub fn to_owned_value(self) -> Value {
        match self {
            ValueRef::Null => Value::Null,
            ValueRef::Integer(i) => Value::Integer(i),
            ValueRef::Real(r) => Value::Real(r),
            ValueRef::Text(t) => Value::Text(t.to_owned()),
            ValueRef::Blob(b) => Value::Blob(b.to_vec()),
        }
    }
}

impl Value {
    /// Borrow as a [`ValueRef`] (a shared blob lends its bytes).
    pub fn as_value_ref(&self) -> ValueRef<'_> {
        match self {
            Value::Null => ValueRef::Null,
            Value::Integer(i) => ValueRef::Integer(*i),
            Value::Real(r) => ValueRef::Real(*r),
            Value::Text(t) => ValueRef::Text(t),
            Value::Blob(b) => ValueRef::Blob(b),
            Value::SharedBlob(b) => ValueRef::Blob(b),
        }
    }
}

impl rusqlite::ToSql for Value {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => SqlValueRef::Null,
            Value::Integer(i) => SqlValueRef::Integer(*i),
            Value::Real(r) => SqlValueRef::Real(*r),
            Value::Text(t) => SqlValueRef::Text(t.as_bytes()),
            Value::Blob(b) => SqlValueRef::Blob(b),
            Value::SharedBlob(b) => SqlValueRef::Blob(b),
        }))
    }
}

impl rusqlite::ToSql for ValueRef<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match *self {
            ValueRef::Null => SqlValueRef::Null,
            ValueRef::Integer(i) => SqlValueRef::Integer(i),
            ValueRef::Real(r) => SqlValueRef::Real(r),
            ValueRef::Text(t) => SqlValueRef::Text(t.as_bytes()),
            ValueRef::Blob(b) => SqlValueRef::Blob(b),
        }))
    }
}

impl From<i64> for Value {
    fn from(i: i64) -> Value {
        Value::Integer(i)
    }
}

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Text(s.to_owned())
    }
}

impl From<Vec<u8>> for Value {
    fn from(b: Vec<u8>) -> Value {
        Value::Blob(b)
    }
}
