//! The tie-break between two replicas' values of one cell: the same order
//! on every replica, so every replica keeps the same value.

use rusqlite::types::Value as SqlValue;

/// The order of two cell values when their versions tie between sites: by
/// storage class (NULL < integer and real < text < blob), then by value.
/// Every replica compares the same way, so every replica picks the same one.
pub(crate) fn value_order(a: &SqlValue, b: &SqlValue) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    fn class(v: &SqlValue) -> u8 {
        match v {
            SqlValue::Null => 0,
            SqlValue::Integer(_) | SqlValue::Real(_) => 1,
            SqlValue::Text(_) => 2,
            SqlValue::Blob(_) => 3,
        }
    }
    let number = |v: &SqlValue| match v {
        SqlValue::Integer(i) => *i as f64,
        SqlValue::Real(r) => *r,
        _ => 0.0,
    };
    class(a).cmp(&class(b)).then_with(|| match (a, b) {
        (SqlValue::Text(x), SqlValue::Text(y)) => x.cmp(y),
        (SqlValue::Blob(x), SqlValue::Blob(y)) => x.cmp(y),
        (SqlValue::Null, SqlValue::Null) => Ordering::Equal,
        (x, y) => number(x).total_cmp(&number(y)),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tied_values_order_the_same_way_everywhere() {
        use std::cmp::Ordering;
        let (null, one, two_and_half, text, blob) = (
            SqlValue::Null,
            SqlValue::Integer(1),
            SqlValue::Real(2.5),
            SqlValue::Text("a".into()),
            SqlValue::Blob(vec![0]),
        );
        let ascending = [&null, &one, &two_and_half, &text, &blob];
        for (i, a) in ascending.iter().enumerate() {
            for (j, b) in ascending.iter().enumerate() {
                assert_eq!(value_order(a, b), i.cmp(&j), "{a:?} vs {b:?}");
            }
        }
        assert_eq!(value_order(&SqlValue::Integer(3), &SqlValue::Real(3.0)), Ordering::Equal);
    }
}
