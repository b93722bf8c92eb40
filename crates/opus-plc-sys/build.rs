//! Builds libopus's neural packet loss concealment from the sources in
//! `opus/` (a subset of libopus 1.6.1: the `dnn/` PLC model, the FARGAN
//! vocoder and the CELT helpers they use), with runtime CPU detection
//! (SSE4.1, AVX2) on x86-64 as libopus itself builds it.
fn main() {
    let arch = std::env::var("CARGO_CFG_TARGET_ARCH").unwrap_or_default();
    let x86 = arch == "x86_64";
    let base = [
        "dnn/burg.c",
        "dnn/freq.c",
        "dnn/fargan.c",
        "dnn/fargan_data.c",
        "dnn/lpcnet_enc.c",
        "dnn/lpcnet_tables.c",
        "dnn/nnet.c",
        "dnn/nnet_default.c",
        "dnn/plc_data.c",
        "dnn/parse_lpcnet_weights.c",
        "dnn/pitchdnn.c",
        "dnn/pitchdnn_data.c",
        "celt/kiss_fft.c",
        "celt/celt_lpc.c",
        "celt/pitch.c",
        "celt/mathops.c",
    ];
    let x86_base = [
        "dnn/x86/x86_dnn_map.c",
        "dnn/x86/nnet_sse2.c",
        "celt/x86/x86cpu.c",
        "celt/x86/x86_celt_map.c",
        "celt/x86/pitch_sse.c",
        "celt/x86/pitch_sse2.c",
    ];
    let sse41 = ["dnn/x86/nnet_sse4_1.c", "celt/x86/celt_lpc_sse4_1.c", "celt/x86/pitch_sse4_1.c"];
    let avx2 = ["dnn/x86/nnet_avx2.c", "celt/x86/pitch_avx.c"];

    let build = || {
        let mut b = cc::Build::new();
        b.include("opus/include")
            .include("opus")
            .include("opus/dnn")
            .include("opus/celt")
            .include("opus/silk")
            .define("OPUS_BUILD", None)
            .define("ENABLE_DEEP_PLC", None)
            .define("HAVE_LRINT", None)
            .define("HAVE_LRINTF", None)
            .define("VAR_ARRAYS", None)
            .define("DISABLE_DEBUG_FLOAT", None)
            .opt_level(2)
            .warnings(false)
            .cargo_warnings(false);
        if !x86 {
            // Plain C elsewhere (the NEON variants are not vendored).
            b.define("DISABLE_NEON", None);
        }
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
        }
        b
    };
    let mut main = build();
    // shim.c compiles dnn/lpcnet_plc.c within itself (its static helpers).
    main.file("shim.c");
    for f in base.iter().chain(if x86 { &x86_base[..] } else { &[] }) {
        main.file(format!("opus/{f}"));
    }
    if x86 {
        // The SIMD files with their own flags, into the same library (the
        // others choose between them at run time).
        for (flags, files) in [(&["-msse4.1"][..], &sse41[..]), (&["-mavx2", "-mfma"][..], &avx2[..])] {
            let mut b = build();
            for f in flags {
                b.flag(f);
            }
            for f in files {
                b.file(format!("opus/{f}"));
            }
            main.objects(b.compile_intermediates());
        }
    }
    main.compile("srtpgate_opus_plc");
    println!("cargo:rerun-if-changed=shim.c");
    println!("cargo:rerun-if-changed=opus");
}
