//! `srtpgate codecs`: the codecs transcoding can use — the in-tree ones and
//! those of the plugins in `--codec-plugin-dir` — with each plugin's name,
//! version and file. A plugin that does not load is reported with the reason
//! and makes the command fail, after listing the others.

use srtpgate_codec::Registry;
use std::path::PathBuf;

/// Options of `srtpgate codecs`.
#[derive(clap::Args, Debug)]
pub struct CodecsArgs {
    /// Directory of codec plugins (`*.so` exporting `srtpgate_codec_plugin_v2`).
    #[arg(long = "codec-plugin-dir", env = "SRTPGATE_CODEC_PLUGIN_DIR")]
    pub plugin_dir: Option<PathBuf>,
}

/// Runs `srtpgate codecs`.
pub fn run(args: CodecsArgs) -> Result<(), String> {
    let mut reg = Registry::new();
    let failed = match &args.plugin_dir {
        Some(dir) => reg.load_dir(dir).map_err(|e| e.to_string())?,
        None => Vec::new(),
    };
    println!(
        "{:<12} {:>7} {:>3} {:<18} {:>8} {:>4}  {:<24} {:<8} file",
        "codec", "clock", "ch", "pcm kHz", "frame ms", "pt", "plugin", "version"
    );
    for p in reg.plugins() {
        for c in p.codecs() {
            let pt = c.static_pt.map_or_else(|| "dyn".to_string(), |v| v.to_string());
            let file = p.path().map_or_else(|| "(built in)".to_string(), |f| f.display().to_string());
            let rates: Vec<String> = c.pcm_rate_list().iter().map(|r| format!("{}", *r as f64 / 1000.0)).collect();
            let frame_ms = c.frame_samples as f64 * 1000.0 / c.pcm_rate as f64;
            println!(
                "{:<12} {:>7} {:>3} {:<18} {:>8} {:>4}  {:<24} {:<8} {}",
                c.name,
                c.clock_rate,
                c.channels,
                rates.join(","),
                frame_ms,
                pt,
                p.name(),
                p.version(),
                file
            );
        }
    }
    // In-band DTMF (codec-transcode-telephone-event) needs a detector.
    match reg.dtmf_detector() {
        Some(p) => println!(
            "DTMF detector: {} (plugin {} {}); RFC 4733 to tones: built in",
            p.dtmf_detector().unwrap_or("?"),
            p.name(),
            p.version()
        ),
        None => println!("DTMF detector: none loaded (in-band tones are not detected); RFC 4733 to tones: built in"),
    }
    if failed.is_empty() {
        return Ok(());
    }
    for e in &failed {
        eprintln!("srtpgate: codec plugin not loaded: {e}");
    }
    Err(format!("{} codec plugin(s) did not load", failed.len()))
}
