//! The plugin as the relay loads it: the shared library built by this
//! package, opened with the host's loader, checked, and used to transcode.

use srtpgate_codec::{CodecError, Plugin, Registry};
use std::path::PathBuf;

/// The cdylib cargo built beside this test (target/<profile>/).
fn library() -> PathBuf {
    srtpgate_codec::built_plugin("libsrtpgate_plugin_l16.so").expect("the plugin is built beside its test")
}

#[test]
fn loads_lists_and_transcodes() {
    let lib = library();
    let p = Plugin::load(&lib).expect("load");
    assert_eq!((p.name(), p.version()), ("l16", "2.0.0"));
    assert_eq!(p.codecs().len(), 2);
    assert_eq!((p.codecs()[1].name.as_str(), p.codecs()[1].clock_rate), ("L16", 16000));

    // A directory of plugins: the good one loads beside a broken one.
    let dir = std::env::temp_dir().join(format!("srtpgate-plugins-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("dir");
    std::fs::copy(&lib, dir.join("l16.so")).expect("copy");
    std::fs::write(dir.join("broken.so"), b"\x7fELF but not really").expect("write");
    let mut r = Registry::new();
    let failed = r.load_dir(&dir).expect("dir");
    assert_eq!(failed.len(), 1, "{failed:?}");
    assert!(matches!(&failed[0], CodecError::Load { path, .. } if path.ends_with("broken.so")));
    assert_eq!(r.plugins().len(), 2);

    // PCMU → PCM (in-tree) → L16 (plugin) → PCM → PCMU: bytes survive.
    let (pu, iu) = r.find("PCMU", 8000, 1).expect("PCMU");
    let (pl, il) = r.find("l16", 8000, 1).expect("L16");
    let mut u = pu.instance(iu, None, None).expect("PCMU");
    let mut l = pl.instance(il, None, None).expect("L16");
    let pcmu: Vec<u8> = (0..160u32).map(|k| (k * 37 % 256) as u8).collect();
    let mut pcm = [0i16; 160];
    let mut wire = [0u8; 320];
    let mut back = [0i16; 160];
    let mut again = [0u8; 160];
    assert_eq!(u.decode(&pcmu, &mut pcm).expect("decode"), 160);
    assert_eq!(l.encode(&pcm, &mut wire).expect("encode"), 320);
    assert_eq!(l.decode(&wire, &mut back).expect("decode"), 160);
    assert_eq!(back, pcm);
    assert_eq!(u.encode(&back, &mut again).expect("encode"), 160);
    for (a, b) in again.iter().zip(&pcmu) {
        // 0x7f and 0xff are both µ-law zero.
        assert!(a == b || (*a == 0xff && *b == 0x7f), "{a:#x} != {b:#x}");
    }
    // An odd number of bytes is not L16: an error for this call only.
    assert!(l.decode(&wire[..3], &mut back).is_err());
    assert_eq!(l.decode(&wire, &mut back).expect("still usable"), 160);
    let _ = std::fs::remove_dir_all(&dir);
}
