//! WAL checkpoints as the process runs them: how many, and how long each
//! took, whoever opened the connection.
//!
//! A file database in WAL mode copies its log back into the database now
//! and then (by default after a commit leaves 1,000 pages in the log): a
//! checkpoint of a few hundred µs inside one write in a few thousand. It
//! is what makes such a program's blocks run at two paces, and a run that
//! cannot see it can only say that every lane slowed at once.
//!
//! SQLite's own hook for it (`sqlite3_wal_hook`) is the auto-checkpoint's
//! own mechanism: setting one turns automatic checkpoints off, and a
//! program's `PRAGMA wal_autocheckpoint` takes it back. So the checkpoint
//! is seen where every checkpoint, automatic or asked for, must pass: it
//! takes the database's exclusive checkpoint lock (`xShmLock` on slot 1)
//! for its whole length. [`record`] registers, as the process's default,
//! a VFS that forwards every call to the one that was the default and
//! times the span between taking that lock and letting it go. Every
//! connection opened afterwards through the default VFS is seen: the
//! harness's writer, a user's, a published crate's worker. What it costs
//! a write is one more indirect call per file operation (a few per
//! commit); a checkpoint adds two clock reads.
//!
//! **Limits.** A connection opened before [`record`], or with a VFS named
//! explicitly, is not seen; nor is a database in `locking_mode=EXCLUSIVE`,
//! whose WAL takes no shared-memory locks. `sqlite3_snapshot_recover`,
//! which takes the same lock, would count as a checkpoint.

use std::ffi::{c_char, c_int, c_void};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

use rusqlite::ffi;

use crate::clock;

/// The name the forwarding VFS is registered under.
pub const VFS_NAME: &str = "hopscope-checkpoints";

/// The shared-memory lock slot a checkpoint holds exclusively (SQLite's
/// `WAL_CKPT_LOCK`).
const CHECKPOINT_SLOT: c_int = 1;

/// Checkpoints finished in the process since [`record`].
static COUNT: AtomicU64 = AtomicU64::new(0);
/// Their summed length, ns.
static TOTAL_NS: AtomicU64 = AtomicU64::new(0);
/// The longest one, ns.
static LONGEST_NS: AtomicU64 = AtomicU64::new(0);

/// Whether [`record`] registered the VFS, or why it could not.
static REGISTERED: OnceLock<Result<(), CheckpointError>> = OnceLock::new();

/// Why checkpoints cannot be recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// SQLite has no default VFS to forward to.
    #[error("SQLite has no default VFS to wrap")]
    NoDefaultVfs,
    /// SQLite refused to register the forwarding VFS.
    #[error("SQLite refused the checkpoint-recording VFS (code {0})")]
    Register(c_int),
}

/// Checkpoints the process finished since [`record`], read at one moment:
/// a block's are the difference of its two readings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CheckpointTotals {
    /// How many.
    pub count: u64,
    /// Their summed length, ns.
    pub total_ns: u64,
    /// The longest one so far, ns.
    pub longest_ns: u64,
}

/// Record every checkpoint of every connection opened from now on through
/// the default VFS. Idempotent; the first call's answer stands.
pub fn record() -> Result<(), CheckpointError> {
    REGISTERED.get_or_init(register).clone()
}

/// The totals so far, or `None` when [`record`] has not succeeded (no
/// checkpoint would have been seen: none is not zero).
pub fn totals() -> Option<CheckpointTotals> {
    matches!(REGISTERED.get(), Some(Ok(()))).then(|| CheckpointTotals {
        count: COUNT.load(Ordering::Relaxed),
        total_ns: TOTAL_NS.load(Ordering::Relaxed),
        longest_ns: LONGEST_NS.load(Ordering::Relaxed),
    })
}

/// One checkpoint of `ns` finished.
fn finished(ns: u64) {
    TOTAL_NS.fetch_add(ns, Ordering::Relaxed);
    LONGEST_NS.fetch_max(ns, Ordering::Relaxed);
    // Counted last: a reader that sees the count sees its length.
    COUNT.fetch_add(1, Ordering::Release);
}

/// A file opened through the forwarding VFS: SQLite's handle first (its
/// methods ours), then the wrapped VFS's own handle in the same block.
#[repr(C)]
struct ShimFile {
    base: ffi::sqlite3_file,
    /// The wrapped VFS's handle, right after this struct.
    real: *mut ffi::sqlite3_file,
    /// Raw clock reading when this file's checkpoint lock was taken; 0
    /// when it is not held.
    checkpoint_started: u64,
}

/// Bytes from a [`ShimFile`]'s start to the wrapped handle (8-aligned).
const REAL_OFFSET: usize = std::mem::size_of::<ShimFile>().next_multiple_of(8);

fn register() -> Result<(), CheckpointError> {
    // SAFETY: sqlite3_vfs_find(NULL) returns the default VFS or NULL; it
    // initialises SQLite first when needed.
    let real = unsafe { ffi::sqlite3_vfs_find(std::ptr::null()) };
    if real.is_null() {
        return Err(CheckpointError::NoDefaultVfs);
    }
    // SAFETY: `real` is a registered VFS, which SQLite keeps for the life
    // of the process; its fields are read once here.
    let template = unsafe { &*real };
    let name: &'static std::ffi::CStr = c"hopscope-checkpoints";
    let size = REAL_OFFSET + usize::try_from(template.szOsFile).unwrap_or(0);
    let vfs = Box::leak(Box::new(ffi::sqlite3_vfs {
        iVersion: template.iVersion,
        szOsFile: c_int::try_from(size).unwrap_or(c_int::MAX),
        mxPathname: template.mxPathname,
        pNext: std::ptr::null_mut(),
        zName: name.as_ptr(),
        pAppData: real.cast(),
        xOpen: Some(vfs_open),
        xDelete: template.xDelete.map(|_| vfs_delete as _),
        xAccess: template.xAccess.map(|_| vfs_access as _),
        xFullPathname: template.xFullPathname.map(|_| vfs_full_pathname as _),
        xDlOpen: template.xDlOpen.map(|_| vfs_dl_open as _),
        xDlError: template.xDlError.map(|_| vfs_dl_error as _),
        xDlSym: template.xDlSym.map(|_| vfs_dl_sym as _),
        xDlClose: template.xDlClose.map(|_| vfs_dl_close as _),
        xRandomness: template.xRandomness.map(|_| vfs_randomness as _),
        xSleep: template.xSleep.map(|_| vfs_sleep as _),
        xCurrentTime: template.xCurrentTime.map(|_| vfs_current_time as _),
        xGetLastError: template.xGetLastError.map(|_| vfs_get_last_error as _),
        xCurrentTimeInt64: template.xCurrentTimeInt64.map(|_| vfs_current_time_int64 as _),
        // The system-call overrides are the wrapped VFS's test hooks:
        // handed through unchanged, they act on it.
        xSetSystemCall: None,
        xGetSystemCall: None,
        xNextSystemCall: None,
    }));
    clock::clock();
    // SAFETY: `vfs` is leaked, so it outlives every connection; SQLite
    // links it into its list and makes it the default.
    let rc = unsafe { ffi::sqlite3_vfs_register(vfs, 1) };
    if rc == ffi::SQLITE_OK { Ok(()) } else { Err(CheckpointError::Register(rc)) }
}

/// The VFS this one forwards to.
///
/// # Safety
/// `vfs` is the forwarding VFS [`register`] made.
unsafe fn real_vfs(vfs: *mut ffi::sqlite3_vfs) -> *mut ffi::sqlite3_vfs {
    // SAFETY: per the contract, its app data is the wrapped VFS.
    unsafe { (*vfs).pAppData.cast() }
}

/// The wrapped handle of `file`.
///
/// # Safety
/// `file` is a [`ShimFile`] this VFS opened.
unsafe fn real_file(file: *mut ffi::sqlite3_file) -> *mut ffi::sqlite3_file {
    // SAFETY: per the contract.
    unsafe { (*file.cast::<ShimFile>()).real }
}

/// The wrapped handle's methods.
///
/// # Safety
/// `file` is a [`ShimFile`] this VFS opened successfully.
unsafe fn methods<'a>(file: *mut ffi::sqlite3_file) -> &'a ffi::sqlite3_io_methods {
    // SAFETY: an open handle's methods are set and live as long as it.
    unsafe { &*(*real_file(file)).pMethods }
}

unsafe extern "C" fn vfs_open(
    vfs: *mut ffi::sqlite3_vfs,
    name: ffi::sqlite3_filename,
    file: *mut ffi::sqlite3_file,
    flags: c_int,
    out_flags: *mut c_int,
) -> c_int {
    // SAFETY: SQLite hands a block of `szOsFile` bytes for `file`: the
    // shim's fields, then the wrapped VFS's handle at `REAL_OFFSET`.
    unsafe {
        let real = real_vfs(vfs);
        let inner = file.cast::<u8>().add(REAL_OFFSET).cast::<ffi::sqlite3_file>();
        let shim = file.cast::<ShimFile>();
        (*shim).real = inner;
        (*shim).checkpoint_started = 0;
        (*inner).pMethods = std::ptr::null();
        let Some(open) = (*real).xOpen else { return ffi::SQLITE_CANTOPEN };
        let rc = open(real, name, inner, flags, out_flags);
        // A handle whose open set no methods is never closed by SQLite.
        (*file).pMethods =
            if (*inner).pMethods.is_null() { std::ptr::null() } else { shim_methods((*(*inner).pMethods).iVersion) };
        rc
    }
}

/// The shim's method table of version `version` (the wrapped handle's,
/// capped at 3), so SQLite calls no method the wrapped one lacks.
fn shim_methods(version: c_int) -> *const ffi::sqlite3_io_methods {
    static TABLES: OnceLock<[ffi::sqlite3_io_methods; 3]> = OnceLock::new();
    let tables = TABLES.get_or_init(|| {
        [1, 2, 3].map(|v| ffi::sqlite3_io_methods {
            iVersion: v,
            xClose: Some(io_close),
            xRead: Some(io_read),
            xWrite: Some(io_write),
            xTruncate: Some(io_truncate),
            xSync: Some(io_sync),
            xFileSize: Some(io_file_size),
            xLock: Some(io_lock),
            xUnlock: Some(io_unlock),
            xCheckReservedLock: Some(io_check_reserved_lock),
            xFileControl: Some(io_file_control),
            xSectorSize: Some(io_sector_size),
            xDeviceCharacteristics: Some(io_device_characteristics),
            xShmMap: (v >= 2).then_some(io_shm_map as _),
            xShmLock: (v >= 2).then_some(io_shm_lock as _),
            xShmBarrier: (v >= 2).then_some(io_shm_barrier as _),
            xShmUnmap: (v >= 2).then_some(io_shm_unmap as _),
            xFetch: (v >= 3).then_some(io_fetch as _),
            xUnfetch: (v >= 3).then_some(io_unfetch as _),
        })
    });
    let index = usize::try_from(version.clamp(1, 3) - 1).unwrap_or(0);
    &tables[index]
}

/// Forward a method of the wrapped VFS (SQLite never calls one the
/// wrapped VFS lacks: the shim sets only those it has).
macro_rules! forward_vfs {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*) -> $ret:ty, $missing:expr) => {
        unsafe extern "C" fn $name(vfs: *mut ffi::sqlite3_vfs, $($arg: $ty),*) -> $ret {
            // SAFETY: `vfs` is the forwarding VFS; the wrapped one lives
            // for the process and is called as SQLite would call it.
            unsafe {
                let real = real_vfs(vfs);
                match (*real).$field {
                    Some(f) => f(real, $($arg),*),
                    None => $missing,
                }
            }
        }
    };
}

forward_vfs!(vfs_delete, xDelete, (name: *const c_char, sync_dir: c_int) -> c_int, ffi::SQLITE_IOERR_DELETE);
forward_vfs!(vfs_access, xAccess, (name: *const c_char, flags: c_int, out: *mut c_int) -> c_int, ffi::SQLITE_IOERR_ACCESS);
forward_vfs!(vfs_full_pathname, xFullPathname, (name: *const c_char, n: c_int, out: *mut c_char) -> c_int, ffi::SQLITE_CANTOPEN);
forward_vfs!(vfs_dl_open, xDlOpen, (name: *const c_char) -> *mut c_void, std::ptr::null_mut());
forward_vfs!(vfs_dl_error, xDlError, (n: c_int, out: *mut c_char) -> (), ());
forward_vfs!(vfs_dl_close, xDlClose, (handle: *mut c_void) -> (), ());
forward_vfs!(vfs_randomness, xRandomness, (n: c_int, out: *mut c_char) -> c_int, 0);
forward_vfs!(vfs_sleep, xSleep, (micros: c_int) -> c_int, 0);
forward_vfs!(vfs_current_time, xCurrentTime, (out: *mut f64) -> c_int, ffi::SQLITE_ERROR);
forward_vfs!(vfs_get_last_error, xGetLastError, (n: c_int, out: *mut c_char) -> c_int, 0);
forward_vfs!(vfs_current_time_int64, xCurrentTimeInt64, (out: *mut ffi::sqlite3_int64) -> c_int, ffi::SQLITE_ERROR);

/// The symbol a dynamic library gives, as SQLite's VFS declares it.
type DlSymbol = Option<unsafe extern "C" fn(*mut ffi::sqlite3_vfs, *mut c_void, *const c_char)>;

unsafe extern "C" fn vfs_dl_sym(vfs: *mut ffi::sqlite3_vfs, handle: *mut c_void, symbol: *const c_char) -> DlSymbol {
    // SAFETY: as `forward_vfs!`'s functions.
    unsafe {
        let real = real_vfs(vfs);
        (*real).xDlSym.and_then(|f| f(real, handle, symbol))
    }
}

/// Forward a method of the wrapped handle.
macro_rules! forward_io {
    ($name:ident, $field:ident, ($($arg:ident: $ty:ty),*) -> $ret:ty, $missing:expr) => {
        unsafe extern "C" fn $name(file: *mut ffi::sqlite3_file, $($arg: $ty),*) -> $ret {
            // SAFETY: SQLite calls a method only on a handle this VFS
            // opened successfully; the wrapped handle is called as SQLite
            // would call it.
            unsafe {
                match methods(file).$field {
                    Some(f) => f(real_file(file), $($arg),*),
                    None => $missing,
                }
            }
        }
    };
}

forward_io!(io_close, xClose, () -> c_int, ffi::SQLITE_OK);
forward_io!(io_read, xRead, (buf: *mut c_void, n: c_int, offset: ffi::sqlite3_int64) -> c_int, ffi::SQLITE_IOERR_READ);
forward_io!(io_write, xWrite, (buf: *const c_void, n: c_int, offset: ffi::sqlite3_int64) -> c_int, ffi::SQLITE_IOERR_WRITE);
forward_io!(io_truncate, xTruncate, (size: ffi::sqlite3_int64) -> c_int, ffi::SQLITE_IOERR_TRUNCATE);
forward_io!(io_sync, xSync, (flags: c_int) -> c_int, ffi::SQLITE_IOERR_FSYNC);
forward_io!(io_file_size, xFileSize, (out: *mut ffi::sqlite3_int64) -> c_int, ffi::SQLITE_IOERR_FSTAT);
forward_io!(io_lock, xLock, (level: c_int) -> c_int, ffi::SQLITE_IOERR_LOCK);
forward_io!(io_unlock, xUnlock, (level: c_int) -> c_int, ffi::SQLITE_IOERR_UNLOCK);
forward_io!(io_check_reserved_lock, xCheckReservedLock, (out: *mut c_int) -> c_int, ffi::SQLITE_IOERR_CHECKRESERVEDLOCK);
forward_io!(io_file_control, xFileControl, (op: c_int, arg: *mut c_void) -> c_int, ffi::SQLITE_NOTFOUND);
forward_io!(io_sector_size, xSectorSize, () -> c_int, 4096);
forward_io!(io_device_characteristics, xDeviceCharacteristics, () -> c_int, 0);
forward_io!(io_shm_map, xShmMap, (region: c_int, size: c_int, extend: c_int, out: *mut *mut c_void) -> c_int, ffi::SQLITE_IOERR_SHMMAP);
forward_io!(io_shm_barrier, xShmBarrier, () -> (), ());
forward_io!(io_shm_unmap, xShmUnmap, (delete: c_int) -> c_int, ffi::SQLITE_OK);
forward_io!(io_fetch, xFetch, (offset: ffi::sqlite3_int64, n: c_int, out: *mut *mut c_void) -> c_int, ffi::SQLITE_IOERR_READ);
forward_io!(io_unfetch, xUnfetch, (offset: ffi::sqlite3_int64, page: *mut c_void) -> c_int, ffi::SQLITE_OK);

/// Forwards the lock and times the checkpoint lock's tenure: taken
/// exclusively, it is a checkpoint starting; let go, one finished.
unsafe extern "C" fn io_shm_lock(file: *mut ffi::sqlite3_file, offset: c_int, n: c_int, flags: c_int) -> c_int {
    // SAFETY: as `forward_io!`'s functions; the shim's own fields are
    // touched only by the thread holding the connection, as SQLite's are.
    unsafe {
        let Some(lock) = methods(file).xShmLock else { return ffi::SQLITE_IOERR_SHMLOCK };
        let checkpoint_slot = offset == CHECKPOINT_SLOT && n == 1;
        let exclusive = flags & ffi::SQLITE_SHM_EXCLUSIVE != 0;
        let shim = file.cast::<ShimFile>();
        if checkpoint_slot && exclusive && flags & ffi::SQLITE_SHM_UNLOCK != 0 {
            let started = std::mem::take(&mut (*shim).checkpoint_started);
            let rc = lock(real_file(file), offset, n, flags);
            if started != 0 {
                finished(clock::clock().delta_as_nanos(started, clock::now().0));
            }
            return rc;
        }
        let rc = lock(real_file(file), offset, n, flags);
        if checkpoint_slot && exclusive && flags & ffi::SQLITE_SHM_LOCK != 0 && rc == ffi::SQLITE_OK {
            (*shim).checkpoint_started = clock::now().0.max(1);
        }
        rc
    }
}
