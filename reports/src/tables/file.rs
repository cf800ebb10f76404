//! One Parquet file at a time: a table's schema and metadata, its row
//! groups, and its close.

use std::fs::File;
use std::io::BufWriter;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use parquet::basic::Compression;
use parquet::file::metadata::KeyValue;
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::record::RecordWriter;

use super::types::{SCHEMA, Table, TableError};

/// A whole table in one row group.
pub(super) fn write_table<R>(out: &Path, name: &'static str, rows: &[R]) -> Result<Table, TableError>
where
    for<'a> &'a [R]: RecordWriter<R>,
{
    let mut file = TableFile::create(&out.join(format!("{name}.parquet")), name)?;
    file.write(rows)?;
    file.finish()
}

/// One Parquet file being written, a row group per [`TableFile::write`].
pub(super) struct TableFile<R> {
    writer: SerializedFileWriter<BufWriter<File>>,
    name: &'static str,
    path: PathBuf,
    rows: u64,
    _row: std::marker::PhantomData<R>,
}

impl<R> TableFile<R>
where
    for<'a> &'a [R]: RecordWriter<R>,
{
    pub(super) fn create(path: &Path, name: &'static str) -> Result<TableFile<R>, TableError> {
        let failed = |source| TableError::Parquet { path: path.to_owned(), source };
        let empty: &[R] = &[];
        let schema = empty.schema().map_err(failed)?;
        let properties = WriterProperties::builder()
            .set_compression(Compression::SNAPPY)
            .set_created_by(format!("hopscope {}", env!("CARGO_PKG_VERSION")))
            .set_key_value_metadata(Some(vec![
                KeyValue::new("hopscope.schema".to_owned(), SCHEMA.to_owned()),
                KeyValue::new("hopscope.table".to_owned(), name.to_owned()),
            ]))
            .build();
        let file = File::create(path).map_err(|source| TableError::Io { path: path.to_owned(), source })?;
        let writer = SerializedFileWriter::new(BufWriter::new(file), schema, Arc::new(properties)).map_err(failed)?;
        Ok(TableFile { writer, name, path: path.to_owned(), rows: 0, _row: std::marker::PhantomData })
    }

    /// Append `rows` as one row group (none when empty).
    pub(super) fn write(&mut self, rows: &[R]) -> Result<(), TableError> {
        if rows.is_empty() {
            return Ok(());
        }
        let path = self.path.clone();
        let failed = |source| TableError::Parquet { path: path.clone(), source };
        let mut group = self.writer.next_row_group().map_err(failed)?;
        rows.write_to_row_group(&mut group).map_err(failed)?;
        group.close().map_err(failed)?;
        self.rows += rows.len() as u64;
        Ok(())
    }

    pub(super) fn finish(self) -> Result<Table, TableError> {
        let path = self.path;
        self.writer.close().map_err(|source| TableError::Parquet { path: path.clone(), source })?;
        Ok(Table { name: self.name, path, rows: self.rows })
    }
}
