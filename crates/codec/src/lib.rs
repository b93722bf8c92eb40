//! Codecs for transcoding through PCM: the plugin ABI ([`abi`]), the loader
//! of plugins (shared libraries, any language) and the in-tree G.711
//! ([`g711`]), which is served through the same ABI so that the relay has one
//! code path for every codec.
//!
//! The relay never lets a plugin take it down through this interface: every
//! table is checked before use (version, size, pointers, limits), every
//! return code is checked, buffers are the caller's, and a failing codec
//! returns an error to its one call. (A plugin that corrupts memory or
//! aborts cannot be contained in-process; plugins are code the operator
//! chose to load.)

pub mod abi;
pub mod dtmf;
pub mod g711;
pub mod kit;
pub mod payload;
pub mod player;
pub mod plc;
pub mod prompt;
pub mod transcode;

use std::ffi::{c_void, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Why a plugin or a codec failed.
#[derive(Debug, thiserror::Error)]
pub enum CodecError {
    /// The library could not be loaded, or has no entry point.
    #[error("{path}: {why}")]
    Load {
        /// The plugin file.
        path: PathBuf,
        /// What went wrong.
        why: String,
    },
    /// The plugin's table breaks the ABI.
    #[error("{plugin}: {why}")]
    Abi {
        /// The plugin (file or name).
        plugin: String,
        /// What is wrong with its table.
        why: String,
    },
    /// A codec call returned an error code.
    #[error("codec {codec}: {call} failed ({code})")]
    Call {
        /// The codec.
        codec: String,
        /// `create`, `decode`, `encode` or `conceal`.
        call: &'static str,
        /// The plugin's code ([`abi::ERR_INVALID`], …).
        code: i32,
    },
}

/// One codec of a plugin, as read (and checked) from its table.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodecInfo {
    /// rtpmap encoding name.
    pub name: String,
    /// RTP clock rate, Hz.
    pub clock_rate: u32,
    /// rtpmap channel count.
    pub channels: u32,
    /// Channels of its PCM.
    pub pcm_channels: u32,
    /// Sample rate of its PCM, Hz.
    pub pcm_rate: u32,
    /// Other PCM rates it can be created with ([`abi::pcm_rate_bit`] bits).
    pub pcm_rates: u32,
    /// Samples per channel of one frame at `pcm_rate`.
    pub frame_samples: u32,
    /// Largest encoded frame, bytes.
    pub max_frame_bytes: u32,
    /// Static RTP payload type.
    pub static_pt: Option<u8>,
    /// Default fmtp.
    pub fmtp: Option<String>,
    /// [`abi::CODEC_FEC`], …
    pub flags: u32,
}

impl CodecInfo {
    /// Whether a state can have PCM at `rate`.
    pub fn takes_pcm_rate(&self, rate: u32) -> bool {
        rate == self.pcm_rate || (abi::pcm_rate_bit(rate) & self.pcm_rates) != 0
    }

    /// The PCM rates it can be created with, highest first.
    pub fn pcm_rate_list(&self) -> Vec<u32> {
        let mut v: Vec<u32> = abi::PCM_RATES.iter().copied().filter(|&r| self.takes_pcm_rate(r)).collect();
        if !v.contains(&self.pcm_rate) {
            v.push(self.pcm_rate);
        }
        v.sort_unstable_by(|a, b| b.cmp(a));
        v
    }

    /// Samples per channel of one frame when the PCM is at `rate`.
    pub fn frame_samples_at(&self, rate: u32) -> usize {
        ((self.frame_samples as u64 * rate as u64) / self.pcm_rate as u64).max(1) as usize
    }
}

/// The PCM rate two codecs are best transcoded at without resampling: the
/// highest rate both take, but no higher than the lower of their native
/// rates (more would only carry empty spectrum); None when they share none.
pub fn common_pcm_rate(a: &CodecInfo, b: &CodecInfo) -> Option<u32> {
    let cap = a.pcm_rate.min(b.pcm_rate);
    a.pcm_rate_list().into_iter().filter(|&r| r <= cap).find(|&r| b.takes_pcm_rate(r))
}

/// A plugin: its checked table and, when loaded from a file, the library
/// that keeps the table's code mapped.
pub struct Plugin {
    table: abi::PluginTable,
    name: String,
    version: String,
    path: Option<PathBuf>,
    codecs: Vec<CodecInfo>,
    /// Its DTMF detector (checked), if it has one.
    dtmf: Option<(abi::DtmfTable, String)>,
    // Declared last: unloaded after every field that points into it.
    _lib: Option<libloading::Library>,
}

// SAFETY: the table is immutable and its functions are called on states
// owned by one `Instance` (one thread at a time), as the ABI requires.
unsafe impl Send for Plugin {}
// SAFETY: as above; nothing in a Plugin is mutated after loading.
unsafe impl Sync for Plugin {}

const MAX_CODECS: u32 = 64;

/// Reads a NUL-terminated string of at most `max` bytes of UTF-8.
///
/// # Safety
/// `p` is null or points at a NUL-terminated string.
unsafe fn string(p: *const std::ffi::c_char, max: usize, what: &str) -> Result<String, String> {
    if p.is_null() {
        return Err(format!("{what} is null"));
    }
    // SAFETY: per the function's contract.
    let s = unsafe { CStr::from_ptr(p) };
    let s = s.to_str().map_err(|_| format!("{what} is not UTF-8"))?;
    if s.is_empty() || s.len() > max || s.chars().any(char::is_control) {
        return Err(format!("{what} {s:?} is empty, longer than {max} bytes or has control characters"));
    }
    Ok(s.to_string())
}

/// Checks a DTMF detector table.
///
/// # Safety
/// `t` is null or points at a table that stays valid while its plugin is
/// loaded.
unsafe fn check_dtmf(t: *const abi::DtmfTable) -> Result<(abi::DtmfTable, String), String> {
    if t.is_null() {
        return Err("the entry point returned no table".into());
    }
    // SAFETY: the first two words exist in every version.
    let (version, size) = unsafe { ((*t).abi_version, (*t).struct_size) };
    if version != abi::DTMF_ABI_VERSION || (size as usize) < std::mem::size_of::<abi::DtmfTable>() {
        return Err(format!(
            "version {version} of {size} bytes, this relay speaks {} ({} bytes)",
            abi::DTMF_ABI_VERSION,
            std::mem::size_of::<abi::DtmfTable>()
        ));
    }
    // SAFETY: version and size say the whole table is there.
    let t = unsafe { *t };
    // SAFETY: the table's string, per the contract.
    let name = unsafe { string(t.name, 64, "name") }?;
    if t.create.is_none() || t.detect.is_none() || t.destroy.is_none() {
        return Err("a function of the table is null".into());
    }
    Ok((t, name))
}

impl Plugin {
    /// The in-tree G.711 codecs.
    pub fn builtin() -> Arc<Plugin> {
        // SAFETY: the in-tree table is a static of this crate.
        let p = unsafe { Plugin::from_table(&g711::TABLE.0, None, None) };
        Arc::new(p.expect("the in-tree G.711 table is valid"))
    }

    /// Loads the plugin at `path` and checks its table.
    pub fn load(path: &Path) -> Result<Arc<Plugin>, CodecError> {
        let load_err = |why: String| CodecError::Load { path: path.to_path_buf(), why };
        // SAFETY: loading a library runs its initialisers: the operator put
        // this file in the plugin directory to be run.
        let lib = unsafe { libloading::Library::new(path) }.map_err(|e| load_err(e.to_string()))?;
        let table: *const abi::PluginTable = {
            // SAFETY: looking a symbol up runs nothing.
            if unsafe { lib.get::<*const ()>(abi::ENTRY_SYMBOL) }.is_err()
                && unsafe { lib.get::<*const ()>(abi::ENTRY_SYMBOL_V1) }.is_ok()
            {
                return Err(load_err(format!(
                    "a plugin of ABI version 1; this relay loads version {} (rebuild it against srtpgate_codec::abi)",
                    abi::ABI_VERSION
                )));
            }
            // SAFETY: the symbol's type is the ABI's entry point.
            let entry: libloading::Symbol<unsafe extern "C" fn() -> *const abi::PluginTable> =
                unsafe { lib.get(abi::ENTRY_SYMBOL) }.map_err(|e| load_err(format!("not a codec plugin: {e}")))?;
            // SAFETY: calling the plugin's entry point, which takes nothing.
            unsafe { entry() }
        };
        // SAFETY: looking a symbol up runs nothing; its type is the ABI's.
        let dtmf = match unsafe { lib.get::<unsafe extern "C" fn() -> *const abi::DtmfTable>(abi::DTMF_ENTRY_SYMBOL) } {
            // SAFETY: the plugin's entry point, which takes nothing.
            Ok(entry) => Some(unsafe { entry() }),
            Err(_) => None,
        };
        // SAFETY: the table pointers came from the plugin, whose library is
        // kept loaded by the Plugin.
        let mut p = unsafe { Plugin::from_table(table, Some(lib), Some(path.to_path_buf())) }?;
        if let Some(t) = dtmf {
            // SAFETY: as above.
            p.dtmf = Some(unsafe { check_dtmf(t) }.map_err(|why| CodecError::Abi {
                plugin: path.display().to_string(),
                why: format!("DTMF detector: {why}"),
            })?);
        }
        Ok(Arc::new(p))
    }

    /// Checks and copies a table.
    ///
    /// # Safety
    /// `table` is null or points at a table (and strings and descriptors)
    /// that stay valid while `lib` is loaded (or forever when `lib` is None).
    unsafe fn from_table(
        table: *const abi::PluginTable,
        lib: Option<libloading::Library>,
        path: Option<PathBuf>,
    ) -> Result<Plugin, CodecError> {
        let who = path.as_ref().map_or_else(|| "in-tree plugin".to_string(), |p| p.display().to_string());
        let abi_err = |why: String| CodecError::Abi { plugin: who.clone(), why };
        if table.is_null() {
            return Err(abi_err("the entry point returned no table".into()));
        }
        // Version and size first: nothing else is read from a table of another version.
        // SAFETY: the first two words exist in every version of the table.
        let (version, size) = unsafe { ((*table).abi_version, (*table).struct_size) };
        if version != abi::ABI_VERSION {
            return Err(abi_err(format!("ABI version {version}, this relay speaks {}", abi::ABI_VERSION)));
        }
        if (size as usize) < std::mem::size_of::<abi::PluginTable>() {
            return Err(abi_err(format!(
                "table of {size} bytes, version {version} has {}",
                std::mem::size_of::<abi::PluginTable>()
            )));
        }
        // SAFETY: version and size say the whole table is there.
        let t = unsafe { *table };
        // SAFETY: strings of the table, per the contract.
        let name = unsafe { string(t.plugin_name, 64, "plugin_name") }.map_err(abi_err)?;
        // SAFETY: as above.
        let version = unsafe { string(t.plugin_version, 64, "plugin_version") }.map_err(abi_err)?;
        if t.create.is_none() || t.decode.is_none() || t.encode.is_none() || t.conceal.is_none() || t.destroy.is_none()
        {
            return Err(abi_err("a function of the table is null".into()));
        }
        if t.n_codecs == 0 || t.n_codecs > MAX_CODECS || t.codecs.is_null() {
            return Err(abi_err(format!("{} codecs (1..={MAX_CODECS}, non-null list)", t.n_codecs)));
        }
        let mut codecs = Vec::with_capacity(t.n_codecs as usize);
        for i in 0..t.n_codecs as usize {
            // SAFETY: n_codecs descriptors, per the contract.
            let d = unsafe { *t.codecs.add(i) };
            let at = |why: String| abi_err(format!("codec {i}: {why}"));
            // SAFETY: strings of the descriptor.
            let cname = unsafe { string(d.name, 32, "name") }.map_err(at)?;
            let fmtp = if d.fmtp.is_null() {
                None
            } else {
                // SAFETY: as above.
                Some(unsafe { string(d.fmtp, 512, "fmtp") }.map_err(at)?)
            };
            if !(1000..=192_000).contains(&d.clock_rate)
                || !(1..=8).contains(&d.channels)
                || !(1..=8).contains(&d.pcm_channels)
                || !(1000..=192_000).contains(&d.pcm_rate)
                || d.pcm_rates >= 1 << abi::PCM_RATES.len()
                || !(1..=5760).contains(&d.frame_samples)
                || !(1..=65_536).contains(&d.max_frame_bytes)
                || !(-1..=127).contains(&d.static_pt)
            {
                return Err(at(format!(
                    "{cname}: clock {} Hz, {} channels, PCM {} Hz (rates {:#x}), {} samples a frame, {} bytes, \
                     static pt {} out of range",
                    d.clock_rate, d.channels, d.pcm_rate, d.pcm_rates, d.frame_samples, d.max_frame_bytes, d.static_pt
                )));
            }
            codecs.push(CodecInfo {
                name: cname,
                clock_rate: d.clock_rate,
                channels: d.channels,
                pcm_channels: d.pcm_channels,
                pcm_rate: d.pcm_rate,
                pcm_rates: d.pcm_rates,
                frame_samples: d.frame_samples,
                max_frame_bytes: d.max_frame_bytes,
                static_pt: u8::try_from(d.static_pt).ok(),
                fmtp,
                flags: d.flags,
            });
        }
        Ok(Plugin { table: t, name, version, path, codecs, dtmf: None, _lib: lib })
    }

    /// The plugin's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The plugin's version.
    pub fn version(&self) -> &str {
        &self.version
    }

    /// Where it was loaded from (None: in-tree).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    /// Its codecs.
    pub fn codecs(&self) -> &[CodecInfo] {
        &self.codecs
    }

    /// The name of its DTMF detector, if it has one.
    pub fn dtmf_detector(&self) -> Option<&str> {
        self.dtmf.as_ref().map(|(_, n)| n.as_str())
    }

    pub(crate) fn dtmf_table(&self) -> Option<&abi::DtmfTable> {
        self.dtmf.as_ref().map(|(t, _)| t)
    }

    /// A decoding and encoding state for codec `index` of this plugin, with
    /// the peer's `fmtp` and PCM at `pcm_rate` (None: the codec's own).
    pub fn instance(
        self: &Arc<Self>,
        index: usize,
        fmtp: Option<&str>,
        pcm_rate: Option<u32>,
    ) -> Result<Instance, CodecError> {
        self.instance_for(index, fmtp, pcm_rate, abi::USE_DECODE | abi::USE_ENCODE)
    }

    /// As [`instance`](Self::instance), for `uses` only
    /// ([`abi::USE_DECODE`], [`abi::USE_ENCODE`]).
    pub fn instance_for(
        self: &Arc<Self>,
        index: usize,
        fmtp: Option<&str>,
        pcm_rate: Option<u32>,
        uses: u32,
    ) -> Result<Instance, CodecError> {
        let info = self.codecs.get(index).ok_or_else(|| CodecError::Call {
            codec: format!("#{index}"),
            call: "create",
            code: abi::ERR_INVALID,
        })?;
        let call_err = |code| CodecError::Call { codec: info.name.clone(), call: "create", code };
        let rate = pcm_rate.unwrap_or(info.pcm_rate);
        if !info.takes_pcm_rate(rate) {
            return Err(call_err(abi::ERR_INVALID));
        }
        let fmtp = fmtp.map(CString::new).transpose().map_err(|_| call_err(abi::ERR_INVALID))?;
        let mut code = 0i32;
        let create = self.table.create.expect("checked at load");
        // SAFETY: an index the plugin declared, a NUL-terminated fmtp (or
        // null), a rate it declared and a writable error word, per the ABI.
        let state = unsafe {
            create(index as u32, fmtp.as_ref().map_or(std::ptr::null(), |c| c.as_ptr()), rate, uses, &mut code)
        };
        if state.is_null() {
            return Err(call_err(if code < 0 { code } else { abi::ERR_INTERNAL }));
        }
        Ok(Instance { plugin: self.clone(), state, index, pcm_rate: rate })
    }
}

/// One codec state: decodes and encodes the frames of one stream.
pub struct Instance {
    plugin: Arc<Plugin>,
    state: *mut c_void,
    index: usize,
    pcm_rate: u32,
}

// SAFETY: the state is used by the thread that owns the Instance only (the
// ABI allows one thread at a time), and the plugin outlives it (Arc).
unsafe impl Send for Instance {}

impl Instance {
    /// The codec.
    pub fn info(&self) -> &CodecInfo {
        &self.plugin.codecs[self.index]
    }

    /// The rate of its PCM, Hz.
    pub fn pcm_rate(&self) -> u32 {
        self.pcm_rate
    }

    /// Samples per channel of one frame at its PCM rate.
    pub fn frame_samples(&self) -> usize {
        self.info().frame_samples_at(self.pcm_rate)
    }

    /// Whether the codec can rebuild lost audio from the next packet (its
    /// descriptor says FEC and it has `recover`).
    pub fn can_recover(&self) -> bool {
        self.plugin.table.recover.is_some() && self.info().flags & (abi::CODEC_FEC | abi::CODEC_LOOKAHEAD) != 0
    }

    /// Whether what `recover` writes is rebuilt from redundancy (FEC), not
    /// concealment made knowing the next packet.
    pub fn recovers_redundancy(&self) -> bool {
        self.plugin.table.recover.is_some() && self.info().flags & abi::CODEC_FEC != 0
    }

    fn check(&self, call: &'static str, r: i32, cap: usize) -> Result<usize, CodecError> {
        match usize::try_from(r) {
            Ok(n) if n <= cap => Ok(n),
            // A count over the buffer: the plugin broke the ABI.
            Ok(_) => Err(CodecError::Call { codec: self.info().name.clone(), call, code: abi::ERR_INTERNAL }),
            Err(_) => Err(CodecError::Call { codec: self.info().name.clone(), call, code: r }),
        }
    }

    /// Decodes one frame into `pcm`; returns the samples written.
    pub fn decode(&mut self, frame: &[u8], pcm: &mut [i16]) -> Result<usize, CodecError> {
        let f = self.plugin.table.decode.expect("checked at load");
        // SAFETY: a live state; the slices are valid for their lengths.
        let r = unsafe { f(self.state, frame.as_ptr(), frame.len(), pcm.as_mut_ptr(), pcm.len()) };
        self.check("decode", r, pcm.len())
    }

    /// Encodes `pcm` into `out`; returns the bytes written.
    pub fn encode(&mut self, pcm: &[i16], out: &mut [u8]) -> Result<usize, CodecError> {
        let f = self.plugin.table.encode.expect("checked at load");
        // SAFETY: as in decode.
        let r = unsafe { f(self.state, pcm.as_ptr(), pcm.len(), out.as_mut_ptr(), out.len()) };
        self.check("encode", r, out.len())
    }

    /// Fills `pcm` with concealment for a lost frame; returns the samples written.
    pub fn conceal(&mut self, pcm: &mut [i16]) -> Result<usize, CodecError> {
        let f = self.plugin.table.conceal.expect("checked at load");
        // SAFETY: as in decode.
        let r = unsafe { f(self.state, pcm.as_mut_ptr(), pcm.len()) };
        self.check("conceal", r, pcm.len())
    }
}

impl Instance {
    /// Rebuilds `pcm.len()` samples of the audio lost just before `next`
    /// from its redundancy (concealment where it has none, or where the
    /// codec has no `recover`); returns the samples written.
    pub fn recover(&mut self, next: &[u8], pcm: &mut [i16]) -> Result<usize, CodecError> {
        let Some(f) = self.plugin.table.recover.filter(|_| self.can_recover()) else {
            return self.conceal(pcm);
        };
        // SAFETY: as in decode.
        let r = unsafe { f(self.state, next.as_ptr(), next.len(), pcm.as_mut_ptr(), pcm.len()) };
        self.check("recover", r, pcm.len())
    }

    /// Sets an encoder parameter ([`abi::CTL_PACKET_LOSS`], …); false when
    /// the codec does not have it.
    pub fn control(&mut self, what: u32, value: i32) -> Result<bool, CodecError> {
        let Some(f) = self.plugin.table.control else {
            return Ok(false);
        };
        // SAFETY: a live state, per the ABI.
        match unsafe { f(self.state, what, value) } {
            0 => Ok(true),
            abi::ERR_UNSUPPORTED => Ok(false),
            code => Err(CodecError::Call { codec: self.info().name.clone(), call: "control", code }),
        }
    }
}

impl Drop for Instance {
    fn drop(&mut self) {
        let f = self.plugin.table.destroy.expect("checked at load");
        // SAFETY: made by this plugin's create, destroyed once.
        unsafe { f(self.state) };
    }
}

/// The codecs the relay can transcode: the in-tree ones and the plugins
/// loaded from a directory.
pub struct Registry {
    plugins: Vec<Arc<Plugin>>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry::new()
    }
}

impl Registry {
    /// The in-tree codecs only.
    pub fn new() -> Registry {
        Registry { plugins: vec![Plugin::builtin()] }
    }

    /// Loads every `*.so` in `dir` (sorted by name). A plugin that fails is
    /// left out and reported; the others load. Errs only when the directory
    /// cannot be read.
    pub fn load_dir(&mut self, dir: &Path) -> Result<Vec<CodecError>, CodecError> {
        let read = std::fs::read_dir(dir).map_err(|e| CodecError::Load {
            path: dir.to_path_buf(),
            why: format!("cannot read the directory: {e}"),
        })?;
        let mut files: Vec<PathBuf> = read
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "so") && p.is_file())
            .collect();
        files.sort();
        let mut failed = Vec::new();
        for f in files {
            match Plugin::load(&f) {
                Ok(p) => self.plugins.push(p),
                Err(e) => failed.push(e),
            }
        }
        Ok(failed)
    }

    /// The plugins, in-tree first.
    pub fn plugins(&self) -> &[Arc<Plugin>] {
        &self.plugins
    }

    /// The first plugin with a DTMF detector.
    pub fn dtmf_detector(&self) -> Option<&Arc<Plugin>> {
        self.plugins.iter().find(|p| p.dtmf.is_some())
    }

    /// The first codec called `name` (case-insensitive, as in rtpmap) at
    /// `clock_rate` with `channels`: its plugin and index.
    pub fn find(&self, name: &str, clock_rate: u32, channels: u32) -> Option<(Arc<Plugin>, usize)> {
        self.plugins.iter().find_map(|p| {
            p.codecs
                .iter()
                .position(|c| c.name.eq_ignore_ascii_case(name) && c.clock_rate == clock_rate && c.channels == channels)
                .map(|i| (p.clone(), i))
        })
    }
}

/// The plugin library `file` (e.g. `libsrtpgate_plugin_l16.so`) that cargo
/// built beside the running executable (`target/<profile>/` or its `deps/`):
/// how tests and benchmarks find the workspace's plugins.
pub fn built_plugin(file: &str) -> Option<PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let dir = exe.parent()?;
    let mut candidates = vec![dir.join(file), dir.join("deps").join(file)];
    if let Some(up) = dir.parent() {
        candidates.push(up.join(file));
    }
    candidates.into_iter().find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtmf_detector_tables_are_checked() {
        unsafe extern "C" fn create(_: *mut i32) -> *mut c_void {
            std::ptr::null_mut()
        }
        let good = abi::DtmfTable {
            abi_version: abi::DTMF_ABI_VERSION,
            struct_size: std::mem::size_of::<abi::DtmfTable>() as u32,
            name: c"test".as_ptr(),
            create: Some(create),
            detect: None,
            destroy: None,
        };
        // SAFETY: tables on the stack, valid during the calls.
        let check = |t: abi::DtmfTable| unsafe { check_dtmf(&t) }.map(|(_, n)| n);
        assert!(check(good).unwrap_err().contains("null"));
        assert!(check(abi::DtmfTable { abi_version: 2, ..good }).unwrap_err().contains("version 2"));
        assert!(check(abi::DtmfTable { struct_size: 8, ..good }).unwrap_err().contains("8 bytes"));
        assert!(check(abi::DtmfTable { name: std::ptr::null(), ..good }).unwrap_err().contains("name"));
        // SAFETY: null is allowed.
        assert!(unsafe { check_dtmf(std::ptr::null()) }.is_err());
        // No detector in the in-tree plugin: a state cannot be made.
        let r = Registry::new();
        assert!(r.dtmf_detector().is_none());
        assert!(dtmf::Detector::new(&r.plugins()[0], 8000).is_err());
    }

    #[test]
    fn builtin_g711_through_the_abi() {
        let r = Registry::new();
        let (p, i) = r.find("pcmu", 8000, 1).expect("PCMU");
        assert_eq!(p.codecs()[i].static_pt, Some(0));
        let (pa, ia) = r.find("PCMA", 8000, 1).expect("PCMA");
        let mut u = p.instance(i, None, None).expect("µ-law state");
        let mut a = pa.instance(ia, None, None).expect("A-law state");
        assert!(pa.instance(ia, None, Some(16000)).is_err(), "G.711 has PCM at 8 kHz only");
        let pcm: Vec<i16> = (0..160).map(|k| ((k as f64 * 0.3).sin() * 8000.0) as i16).collect();
        let mut enc = [0u8; 160];
        assert_eq!(u.encode(&pcm, &mut enc).expect("encode"), 160);
        assert_eq!(enc[5], g711::ulaw_encode(pcm[5]));
        let mut back = [0i16; 160];
        assert_eq!(u.decode(&enc, &mut back).expect("decode"), 160);
        // PCMU → PCM → PCMA, the transcoding path.
        let mut alaw = [0u8; 160];
        assert_eq!(a.encode(&back, &mut alaw).expect("encode"), 160);
        assert_eq!(alaw[7], g711::alaw_encode(back[7]));
        // Too small an output is the caller's error, reported, not a crash.
        let mut small = [0u8; 10];
        assert!(matches!(u.encode(&pcm, &mut small), Err(CodecError::Call { code: abi::ERR_SPACE, .. })));
        // Concealment repeats the last frame and fades to silence.
        let mut lost = [0i16; 480];
        assert_eq!(u.conceal(&mut lost).expect("conceal"), 480);
        assert!(lost[..80].iter().any(|&x| x != 0), "concealment starts from the last frame");
        let mut more = [0i16; 80];
        u.conceal(&mut more).expect("conceal");
        assert!(more.iter().all(|&x| x == 0), "silence after 60 ms of loss");
    }

    #[test]
    fn tables_that_break_the_abi_are_refused() {
        let good = g711::TABLE.0;
        let check = |t: abi::PluginTable| {
            // SAFETY: tables built from the in-tree static, pointers intact or null.
            unsafe { Plugin::from_table(&t, None, Some("test.so".into())) }.err().map(|e| e.to_string())
        };
        assert_eq!(check(good), None);
        let e = check(abi::PluginTable { abi_version: 1, ..good }).expect("version");
        assert!(e.contains("ABI version 1"), "{e}");
        let e = check(abi::PluginTable { struct_size: 8, ..good }).expect("size");
        assert!(e.contains("table of 8 bytes"), "{e}");
        let e = check(abi::PluginTable { decode: None, ..good }).expect("null function");
        assert!(e.contains("null"), "{e}");
        let e = check(abi::PluginTable { n_codecs: 0, ..good }).expect("no codecs");
        assert!(e.contains("0 codecs"), "{e}");
        let e = check(abi::PluginTable { plugin_name: std::ptr::null(), ..good }).expect("no name");
        assert!(e.contains("plugin_name is null"), "{e}");
        let bad = [abi::CodecDesc {
            name: c"X".as_ptr(),
            clock_rate: 0,
            channels: 1,
            pcm_channels: 1,
            pcm_rate: 8000,
            pcm_rates: 0,
            frame_samples: 80,
            max_frame_bytes: 10,
            static_pt: -1,
            fmtp: std::ptr::null(),
            flags: 0,
        }];
        let e = check(abi::PluginTable { n_codecs: 1, codecs: bad.as_ptr(), ..good }).expect("clock 0");
        assert!(e.contains("clock 0 Hz"), "{e}");
        // SAFETY: a null table is handled.
        let e = unsafe { Plugin::from_table(std::ptr::null(), None, None) }.err().expect("null").to_string();
        assert!(e.contains("no table"), "{e}");
    }

    #[test]
    fn files_that_are_not_plugins_are_refused() {
        let dir = std::env::temp_dir().join(format!("srtpgate-codec-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        std::fs::write(dir.join("junk.so"), b"not an ELF file").expect("write");
        let mut r = Registry::new();
        let failed = r.load_dir(&dir).expect("readable dir");
        assert_eq!(failed.len(), 1);
        assert!(failed[0].to_string().contains("junk.so"), "{}", failed[0]);
        assert_eq!(r.plugins().len(), 1, "only the in-tree plugin");
        assert!(r.load_dir(&dir.join("missing")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
