//! Builds libopus 1.6.1 from the sources in `opus/`, once, for everything
//! in srtpgate that uses it: the Opus plugin (the codec, its deep packet
//! loss concealment and LACE/NoLACE) and the G.722 concealment (the same
//! PLC model through `shim.c`).
//!
//! The file lists are libopus's own (`opus/*_sources.mk`, which its CMake and
//! Meson builds read too), so an update of the sources brings its lists with
//! it. The configuration is what libopus's CMake build makes of
//! `OPUS_OSCE=ON` on x86-64 with run-time CPU detection (the build the Opus
//! plugin had through opusic-sys before, flag for flag, so its output is the
//! same to the bit): float, deep PLC and OSCE (LACE, NoLACE) on, DRED and
//! the OSCE bandwidth extension off (nothing here asks for them; the BWE
//! weights, 9.6 MB of source, are not vendored), hardening on, -O3 in every
//! profile (a debug build of the codec would make the tests crawl).
use std::collections::HashMap;
use std::path::Path;

fn main() {
    let lists = Lists::read(Path::new("opus"));
    let x86 = std::env::var("CARGO_CFG_TARGET_ARCH").is_ok_and(|a| a == "x86_64");

    let build = || {
        let mut b = cc::Build::new();
        for dir in ["opus/include", "opus", "opus/dnn", "opus/celt", "opus/silk", "opus/silk/float"] {
            b.include(dir);
        }
        for d in [
            "OPUS_BUILD",
            "ENABLE_DEEP_PLC",
            "ENABLE_OSCE",
            "ENABLE_HARDENING",
            "HAVE_LRINT",
            "HAVE_LRINTF",
            "HAVE_ALLOCA_H",
            "VAR_ARRAYS",
            "DISABLE_DEBUG_FLOAT",
        ] {
            b.define(d, None);
        }
        b.define("PACKAGE_VERSION", "\"1.6.1\"")
            .define("_FORTIFY_SOURCE", "2")
            .flag("-std=gnu99")
            .flag("-fstack-protector-strong")
            .opt_level(3)
            .debug(false)
            .warnings(false)
            .cargo_warnings(false);
        if x86 {
            for d in [
                "CPU_INFO_BY_ASM",
                "OPUS_HAVE_RTCD",
                "OPUS_X86_MAY_HAVE_SSE",
                "OPUS_X86_MAY_HAVE_SSE2",
                "OPUS_X86_MAY_HAVE_SSE4_1",
                "OPUS_X86_MAY_HAVE_AVX2",
                "OPUS_X86_PRESUME_SSE",
                "OPUS_X86_PRESUME_SSE2",
            ] {
                b.define(d, None);
            }
            b.flag("-msse").flag("-msse2");
        } else {
            // Plain C elsewhere (the ARM variants are not vendored).
            b.define("DISABLE_NEON", None);
        }
        b
    };

    let mut main = build();
    let mut plain =
        lists.get(&["OPUS_SOURCES", "OPUS_SOURCES_FLOAT", "CELT_SOURCES", "SILK_SOURCES", "SILK_SOURCES_FLOAT"]);
    plain.extend(lists.get(&["DEEP_PLC_SOURCES", "OSCE_SOURCES"]).into_iter().filter(|f| {
        // shim.c compiles lpcnet_plc.c within itself (to reach its static
        // helpers), so the library holds it once; the BWE's weights are not
        // vendored (the BWE is not built).
        f != "dnn/lpcnet_plc.c" && f != "dnn/bbwenet_data.c"
    }));
    if x86 {
        plain.extend(lists.get(&["CELT_SOURCES_X86_RTCD", "SILK_SOURCES_X86_RTCD", "DNN_SOURCES_X86_RTCD"]));
    }
    main.file("shim.c");
    for f in &plain {
        main.file(Path::new("opus").join(f));
    }
    if x86 {
        // The SIMD variants with their own flags, into the same library
        // (the code above chooses between them at run time).
        for (flags, names) in [
            (&["-msse"][..], &["CELT_SOURCES_SSE"][..]),
            (&["-msse2"], &["CELT_SOURCES_SSE2", "DNN_SOURCES_SSE2"]),
            (&["-msse4.1"], &["CELT_SOURCES_SSE4_1", "SILK_SOURCES_SSE4_1", "DNN_SOURCES_SSE4_1"]),
            (
                &["-mavx2", "-mfma", "-mavx"],
                &["CELT_SOURCES_AVX2", "SILK_SOURCES_AVX2", "SILK_SOURCES_FLOAT_AVX2", "DNN_SOURCES_AVX2"],
            ),
        ] {
            let mut b = build();
            for f in flags {
                b.flag(f);
            }
            for f in lists.get(names) {
                b.file(Path::new("opus").join(f));
            }
            main.objects(b.compile_intermediates());
        }
    }
    main.compile("opus");
    println!("cargo:rerun-if-changed=shim.c");
    println!("cargo:rerun-if-changed=opus");
}

/// The variables of libopus's `*_sources.mk` files: `NAME = a.c b.c \` with
/// continuation lines.
struct Lists(HashMap<String, Vec<String>>);

impl Lists {
    fn read(dir: &Path) -> Lists {
        let mut vars = HashMap::new();
        for mk in ["celt_sources.mk", "silk_sources.mk", "opus_sources.mk", "lpcnet_sources.mk"] {
            let path = dir.join(mk);
            let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let text = text.replace("\\\n", " ");
            for line in text.lines() {
                if let Some((name, files)) = line.split_once('=') {
                    let files = files.split_whitespace().map(str::to_owned).collect();
                    vars.insert(name.trim().to_owned(), files);
                }
            }
        }
        Lists(vars)
    }

    fn get(&self, names: &[&str]) -> Vec<String> {
        names
            .iter()
            .flat_map(|n| self.0.get(*n).unwrap_or_else(|| panic!("opus/*_sources.mk has no {n}")))
            .cloned()
            .collect()
    }
}
