//! The kernels' machine code on disk, so that a restart does not compile
//! them again.
//!
//! NVRTC takes seconds to compile the kernels for a device (most of a fresh
//! start), and the driver's own cache of compiled PTX lives in the home
//! directory, which a hardened service (`ProtectHome=yes`) cannot write.
//! So the engine asks NVRTC for the device's machine code (a cubin, which
//! the driver loads without compiling) and keeps it in a directory of its
//! own, one file per build: its name is a digest of everything the code
//! depends on (the source, the options, the device, the driver and NVRTC
//! versions), so a change of any of them is a miss, never a stale hit.
//! A file is written to a temporary name and renamed, so a reader sees a
//! whole file or none; one the driver refuses is compiled again and
//! replaced.
//!
//! The driver takes a cubin by pointer, without its length, and runs it
//! beside the session keys: a file is used only when it ends with the
//! SHA-256 of what comes before (so a damaged one is never handed to the
//! driver), and when it and its directory belong to this user and nobody
//! else may write them (so nobody else can plant code there).

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

/// Largest cubin read back (the kernels' is tens of KiB): a larger file is
/// not this cache's and is ignored.
const MAX_BYTES: u64 = 64 << 20;

/// What a build of the kernels depends on.
#[derive(Clone, Debug)]
pub struct BuildKey<'a> {
    /// The CUDA source.
    pub source: &'a str,
    /// NVRTC's options, in order.
    pub options: &'a [String],
    /// The device's name and compute capability.
    pub device: &'a str,
    pub cc: (i32, i32),
    /// `cuDriverGetVersion`.
    pub driver: i32,
    /// `nvrtcVersion`.
    pub nvrtc: (i32, i32),
}

impl BuildKey<'_> {
    /// The file name of this build's cubin: a SHA-256 of every input, each
    /// framed by its length so that no two keys run together.
    pub fn file_name(&self) -> String {
        let mut d = aws_lc_rs::digest::Context::new(&aws_lc_rs::digest::SHA256);
        let mut field = |b: &[u8]| {
            d.update(&(b.len() as u64).to_le_bytes());
            d.update(b);
        };
        field(b"srtpgate kernels 1");
        field(self.source.as_bytes());
        for o in self.options {
            field(o.as_bytes());
        }
        field(self.device.as_bytes());
        field(&self.cc.0.to_le_bytes());
        field(&self.cc.1.to_le_bytes());
        field(&self.driver.to_le_bytes());
        field(&self.nvrtc.0.to_le_bytes());
        field(&self.nvrtc.1.to_le_bytes());
        format!("kernels-{}.cubin", hex::encode(&d.finish().as_ref()[..16]))
    }
}

/// A directory of compiled kernels.
#[derive(Clone, Debug)]
pub struct KernelCache {
    dir: PathBuf,
}

impl KernelCache {
    pub fn new(dir: impl Into<PathBuf>) -> KernelCache {
        KernelCache { dir: dir.into() }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The cubin of `key`, if this directory holds one whose digest checks,
    /// in a file and directory only this user can write (not a link, not
    /// over [`MAX_BYTES`]). Anything else is a miss: the caller compiles.
    pub fn load(&self, key: &BuildKey) -> Option<Vec<u8>> {
        use std::os::unix::fs::OpenOptionsExt;
        if !private(&std::fs::metadata(&self.dir).ok()?) {
            return None;
        }
        let path = self.dir.join(key.file_name());
        // No link followed; a FIFO in the file's place does not block.
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(&path)
            .ok()?;
        let meta = file.metadata().ok()?;
        if !meta.is_file() || !private(&meta) || meta.len() > MAX_BYTES {
            return None;
        }
        let mut bytes = Vec::with_capacity(meta.len() as usize);
        file.take(MAX_BYTES).read_to_end(&mut bytes).ok()?;
        let split = bytes.len().checked_sub(DIGEST)?;
        let (cubin, digest) = bytes.split_at(split);
        let good = aws_lc_rs::constant_time::verify_slices_are_equal(sha256(cubin).as_ref(), digest).is_ok();
        if !good || !cubin.starts_with(b"\x7fELF") {
            return None;
        }
        bytes.truncate(split);
        Some(bytes)
    }

    /// Keeps `cubin` as `key`'s (followed by its digest), replacing any file
    /// of that name whole. The directory is made `0700` where it is missing,
    /// and refused where someone else could write it.
    pub fn store(&self, key: &BuildKey, cubin: &[u8]) -> io::Result<()> {
        use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
        std::fs::DirBuilder::new().recursive(true).mode(0o700).create(&self.dir)?;
        if !private(&std::fs::metadata(&self.dir)?) {
            return Err(io::Error::other(format!("{}: another user owns it, or may write it", self.dir.display())));
        }
        let name = key.file_name();
        // Unique to this write: two engines of one process may store at once.
        static WRITES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = WRITES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let tmp = self.dir.join(format!(".{name}.{}.{n}", std::process::id()));
        let mut f = std::fs::OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        let written = f
            .write_all(cubin)
            .and_then(|()| f.write_all(sha256(cubin).as_ref()))
            .and_then(|()| f.sync_all())
            .and_then(|()| std::fs::rename(&tmp, self.dir.join(&name)));
        if written.is_err() {
            // Ours (created above), so ours to remove.
            let _ = std::fs::remove_file(&tmp);
        }
        written
    }
}

/// Bytes of the digest after a cubin.
const DIGEST: usize = 32;

fn sha256(b: &[u8]) -> aws_lc_rs::digest::Digest {
    aws_lc_rs::digest::digest(&aws_lc_rs::digest::SHA256, b)
}

/// Owned by this process's user, and writable by nobody else.
fn private(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid has no preconditions and cannot fail.
    meta.uid() == unsafe { libc::geteuid() } && meta.mode() & 0o022 == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key<'a>(source: &'a str, options: &'a [String]) -> BuildKey<'a> {
        BuildKey { source, options, device: "NVIDIA H200", cc: (9, 0), driver: 13000, nvrtc: (13, 0) }
    }

    #[test]
    fn every_input_changes_the_name() {
        let opts = vec!["--gpu-architecture=sm_90".to_string()];
        let base = key("kernel", &opts);
        let name = base.file_name();
        assert!(name.starts_with("kernels-") && name.ends_with(".cubin"), "{name}");
        let other_opts = vec!["--gpu-architecture=sm_100".to_string()];
        let variants = [
            key("kernel2", &opts),
            key("kernel", &other_opts),
            BuildKey { device: "NVIDIA H100", ..base.clone() },
            BuildKey { cc: (10, 0), ..base.clone() },
            BuildKey { driver: 13010, ..base.clone() },
            BuildKey { nvrtc: (13, 1), ..base.clone() },
        ];
        for v in &variants {
            assert_ne!(v.file_name(), name, "{v:?}");
        }
        // Inputs do not run together: "ab" + "c" is not "a" + "bc".
        let (o1, o2) = (vec!["ab".to_string(), "c".to_string()], vec!["a".to_string(), "bc".to_string()]);
        assert_ne!(key("k", &o1).file_name(), key("k", &o2).file_name());
        assert_eq!(key("kernel", &opts).file_name(), name, "the same inputs, the same name");
    }

    #[test]
    fn a_stored_cubin_comes_back_and_nothing_else_does() {
        let dir = std::env::temp_dir().join(format!("srtp-cuda-cache-test-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let cache = KernelCache::new(dir.join("nested"));
        let opts = vec!["-default-device".to_string()];
        let k = key("kernel", &opts);
        assert_eq!(cache.load(&k), None, "an empty cache misses");
        let cubin = b"\x7fELF cubin bytes".to_vec();
        cache.store(&k, &cubin).unwrap();
        assert_eq!(cache.load(&k), Some(cubin.clone()));
        assert_eq!(cache.load(&key("other", &opts)), None, "another build misses");
        // Replaced whole; no temporary file stays behind.
        cache.store(&k, b"\x7fELF newer").unwrap();
        assert_eq!(cache.load(&k).as_deref(), Some(&b"\x7fELF newer"[..]));
        let names: Vec<_> = std::fs::read_dir(cache.dir()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names.len(), 1, "{names:?}");
        // Damaged (cut short, or a byte changed): the digest does not check.
        let file = cache.dir().join(k.file_name());
        let whole = std::fs::read(&file).unwrap();
        std::fs::write(&file, &whole[..whole.len() - 1]).unwrap();
        assert_eq!(cache.load(&k), None, "cut short");
        let mut changed = whole.clone();
        changed[5] ^= 1;
        std::fs::write(&file, &changed).unwrap();
        assert_eq!(cache.load(&k), None, "a byte changed");
        // Not machine code, though its digest checks: a miss.
        cache.store(&k, b"not a cubin").unwrap();
        assert_eq!(cache.load(&k), None);
        // Writable by others: neither read nor written.
        use std::os::unix::fs::PermissionsExt;
        std::fs::write(&file, &whole).unwrap();
        assert_eq!(cache.load(&k).as_deref(), Some(&b"\x7fELF newer"[..]));
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o666)).unwrap();
        assert_eq!(cache.load(&k), None, "a file others may write");
        std::fs::set_permissions(&file, std::fs::Permissions::from_mode(0o600)).unwrap();
        std::fs::set_permissions(cache.dir(), std::fs::Permissions::from_mode(0o777)).unwrap();
        assert_eq!(cache.load(&k), None, "a directory others may write");
        assert!(cache.store(&k, &cubin).is_err());
        std::fs::set_permissions(cache.dir(), std::fs::Permissions::from_mode(0o700)).unwrap();
        // A FIFO in the file's place: a miss, without blocking.
        std::fs::remove_file(&file).unwrap();
        let c = std::ffi::CString::new(file.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a valid path string.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert_eq!(cache.load(&k), None, "a FIFO");
        std::fs::remove_file(&file).unwrap();
        // A link in the file's place is not followed.
        let target = dir.join("elsewhere");
        std::fs::write(&target, &whole).unwrap(); // a file that would load
        std::os::unix::fs::symlink(&target, cache.dir().join(k.file_name())).unwrap();
        assert_eq!(cache.load(&k), None);
        // A directory that cannot be made is an error, not a panic.
        let blocked = KernelCache::new(target.join("sub"));
        assert!(blocked.store(&k, &cubin).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
