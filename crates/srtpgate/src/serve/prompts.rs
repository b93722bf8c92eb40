//! The prompts `play media` plays: files of the operator's media directory
//! (`--media-dir`), or a file's bytes sent in the request, decoded into
//! PCM at the listener's codec rate, and kept in a small cache so that
//! music on hold played to many calls is read and resampled once.
//!
//! A request names a file by a name relative to the directory or by an
//! absolute path inside it. The name is resolved (links followed) and the
//! result must lie inside the directory, also resolved: a link that leads
//! out of it is refused like `../`. The file is then opened by that
//! resolved path without following a link in its last component. (The
//! directory is the operator's: a writer of it who swaps a directory for
//! a link between the check and the open could still lead out of it.)

use srtpgate_calls::PromptSource;
use srtpgate_codec::prompt::{wav_rate, Prompt, PromptLimits};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// Largest prompt file read, bytes.
pub const MAX_PROMPT_FILE: u64 = 64 << 20;
/// Longest prompt, seconds.
pub const MAX_PROMPT_SECONDS: u32 = 3600;
/// Decoded audio the cache keeps, bytes.
const CACHE_BYTES: usize = 64 << 20;

/// The media directory and the cache of prompts decoded from it.
pub struct Prompts {
    /// The directory, resolved; `None`: no files, blobs only.
    dir: Option<PathBuf>,
    cache: Vec<Cached>,
    used: u64,
}

struct Cached {
    path: PathBuf,
    len: u64,
    modified: Option<SystemTime>,
    rate: u32,
    prompt: Arc<Prompt>,
    last_use: u64,
}

impl Prompts {
    /// Prompts from `dir` (resolved now; it must exist).
    pub fn new(dir: Option<&Path>) -> Result<Prompts, String> {
        let dir = dir.map(|d| d.canonicalize().map_err(|e| format!("media-dir {}: {e}", d.display()))).transpose()?;
        Ok(Prompts { dir, cache: Vec::new(), used: 0 })
    }

    fn limits() -> PromptLimits {
        PromptLimits { max_seconds: MAX_PROMPT_SECONDS, max_bytes: MAX_PROMPT_FILE as usize }
    }

    /// The audio of `source` at the rate `rate_for` gives for its own.
    pub fn get(&mut self, source: &PromptSource, rate_for: &dyn Fn(u32) -> u32) -> Result<Arc<Prompt>, String> {
        match source {
            PromptSource::Blob(b) => {
                let rate = rate_for(wav_rate(b).map_err(|e| e.to_string())?);
                Prompt::from_wav(b, rate, &Self::limits()).map(Arc::new).map_err(|e| e.to_string())
            }
            PromptSource::File(name) => self.file(name, rate_for),
        }
    }

    fn file(&mut self, name: &str, rate_for: &dyn Fn(u32) -> u32) -> Result<Arc<Prompt>, String> {
        let dir = self.dir.as_ref().ok_or("no media directory is configured (--media-dir)")?;
        let path = resolve(dir, name)?;
        let shown = clip(name);
        let file = crate::relay::sys::open_nofollow(&path).map_err(|e| format!("{shown}: {e}"))?;
        let meta = file.metadata().map_err(|e| format!("{shown}: {e}"))?;
        if !meta.is_file() {
            return Err(format!("{shown}: not a regular file"));
        }
        if meta.len() > MAX_PROMPT_FILE {
            return Err(format!("{shown}: {} bytes, over the limit of {MAX_PROMPT_FILE}", meta.len()));
        }
        let modified = meta.modified().ok();
        self.used += 1;
        let used = self.used;
        let same = |c: &Cached| c.path == path && c.len == meta.len() && c.modified == modified;
        // The file's own rate: from a copy kept at any rate, else its header.
        let mut bytes = Vec::new();
        let source_rate = match self.cache.iter().find(|c| same(c)) {
            Some(c) => c.prompt.source_rate(),
            None => {
                bytes.reserve_exact(meta.len() as usize);
                (&file).take(MAX_PROMPT_FILE).read_to_end(&mut bytes).map_err(|e| format!("{shown}: {e}"))?;
                wav_rate(&bytes).map_err(|e| format!("{shown}: {e}"))?
            }
        };
        let rate = rate_for(source_rate);
        if let Some(c) = self.cache.iter_mut().find(|c| same(c) && c.rate == rate) {
            c.last_use = used;
            return Ok(c.prompt.clone());
        }
        if bytes.is_empty() {
            bytes.reserve_exact(meta.len() as usize);
            (&file).take(MAX_PROMPT_FILE).read_to_end(&mut bytes).map_err(|e| format!("{shown}: {e}"))?;
        }
        let prompt = Arc::new(Prompt::from_wav(&bytes, rate, &Self::limits()).map_err(|e| format!("{shown}: {e}"))?);
        self.cache.retain(|c| c.path != path || c.rate != rate);
        self.cache.push(Cached { path, len: meta.len(), modified, rate, prompt: prompt.clone(), last_use: used });
        // The least recently used go first, until the audio fits.
        while self.cache.len() > 1
            && self.cache.iter().map(|c| c.prompt.samples().len() * 2).sum::<usize>() > CACHE_BYTES
        {
            if let Some(i) = self.cache.iter().enumerate().min_by_key(|(_, c)| c.last_use).map(|(i, _)| i) {
                self.cache.swap_remove(i);
            }
        }
        Ok(prompt)
    }
}

/// The file `name` names in `dir` (resolved), refused when it lies
/// outside.
fn resolve(dir: &Path, name: &str) -> Result<PathBuf, String> {
    let shown = clip(name);
    if name.is_empty() || name.contains('\0') {
        return Err(format!("'{shown}': not a file name"));
    }
    let p = Path::new(name);
    let joined = if p.is_absolute() { p.to_path_buf() } else { dir.join(p) };
    let real = joined.canonicalize().map_err(|e| format!("{shown}: {e}"))?;
    if !real.starts_with(dir) || real == dir {
        return Err(format!("{shown}: outside the media directory"));
    }
    Ok(real)
}

fn clip(s: &str) -> String {
    s.chars().take(64).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_resolve_inside_the_directory_only() {
        let base = std::env::temp_dir().join(format!("srtpgate-prompts-{}", std::process::id()));
        let dir = base.join("media");
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("sub/a.wav"), b"x").unwrap();
        std::fs::write(base.join("secret.wav"), b"x").unwrap();
        std::os::unix::fs::symlink(base.join("secret.wav"), dir.join("out.wav")).unwrap();
        std::os::unix::fs::symlink(dir.join("sub/a.wav"), dir.join("in.wav")).unwrap();
        let d = dir.canonicalize().unwrap();
        assert_eq!(resolve(&d, "sub/a.wav").unwrap(), d.join("sub/a.wav"));
        assert_eq!(resolve(&d, d.join("sub/a.wav").to_str().unwrap()).unwrap(), d.join("sub/a.wav"));
        assert_eq!(resolve(&d, "in.wav").unwrap(), d.join("sub/a.wav"), "a link inside stays inside");
        for bad in ["../secret.wav", "out.wav", base.join("secret.wav").to_str().unwrap(), "/etc/passwd", "", "."] {
            assert!(resolve(&d, bad).is_err(), "{bad} resolved");
        }
        assert!(resolve(&d, "missing.wav").unwrap_err().contains("missing.wav"));
        std::fs::remove_dir_all(&base).unwrap();
    }
}
