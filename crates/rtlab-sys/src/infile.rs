//! Reading the files people pass around (experiment files, result files):
//! bounded, so that a huge file, a device that never ends or a directory is
//! refused without being read.

use std::io::Read;
use std::os::unix::fs::FileTypeExt;
use std::path::Path;

/// Why a file was not read.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// It could not be opened or read.
    #[error("cannot read: {0}")]
    Io(#[from] std::io::Error),
    /// A device, a directory, a socket.
    #[error("not a regular file or a pipe")]
    NotAFile,
    /// More than the limit (bytes).
    #[error("larger than {0} bytes")]
    TooBig(u64),
}

/// The bytes of `path`, a regular file or a pipe (`<(cyclictest ...)`), if
/// it holds at most `limit`: a larger file is refused before it is read, a
/// pipe once `limit + 1` bytes came.
pub fn read_bounded(path: &Path, limit: u64) -> Result<Vec<u8>, InputError> {
    let file = std::fs::File::open(path)?;
    let meta = file.metadata()?;
    if !(meta.is_file() || meta.file_type().is_fifo()) {
        return Err(InputError::NotAFile);
    }
    if meta.len() > limit {
        return Err(InputError::TooBig(limit));
    }
    let mut bytes = Vec::new();
    file.take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooBig(limit));
    }
    Ok(bytes)
}
