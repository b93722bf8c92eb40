/*
 * srtp-tool: libsrtp2 reference line filter + micro benchmark for srtpgate.
 *
 *   srtp-tool protect|unprotect --suite SUITE --key KEY [--rtcp] [--replay-window N]
 *   srtp-tool bench [--json]
 *
 * See README.md in this directory for the exact contract.
 */
#define _GNU_SOURCE
#define OPENSSL_API_COMPAT 0x10101000L /* SHA1_Transform without deprecation warnings */

#include <ctype.h>
#include <errno.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <srtp2/srtp.h>

#include <openssl/evp.h>
#include <openssl/sha.h>

/* Room for the SRTP/SRTCP trailer: tag + MKI + 4-byte SRTCP index. */
#define TRAILER_ROOM (SRTP_MAX_TRAILER_LEN + 16)

/* ------------------------------------------------------------------------ */
/* suites                                                                    */

typedef void (*policy_fn)(srtp_crypto_policy_t *p);

static void set_null_sha1_32(srtp_crypto_policy_t *p)
{
    srtp_crypto_policy_set_null_cipher_hmac_sha1_80(p);
    p->auth_tag_len = 4;
}

static void set_aes128_sha1_80(srtp_crypto_policy_t *p)
{
    srtp_crypto_policy_set_rtp_default(p);
}

typedef struct {
    const char *name;
    policy_fn rtp;
    policy_fn rtcp; /* libsrtp convention: _32 suites use the _80 tag for SRTCP */
    int key_len;
    int salt_len;
} suite_t;

static const suite_t suites[] = {
    { "AES_CM_128_HMAC_SHA1_80", set_aes128_sha1_80, set_aes128_sha1_80, 16, 14 },
    { "AES_CM_128_HMAC_SHA1_32", srtp_crypto_policy_set_aes_cm_128_hmac_sha1_32,
      set_aes128_sha1_80, 16, 14 },
    { "AES_192_CM_HMAC_SHA1_80", srtp_crypto_policy_set_aes_cm_192_hmac_sha1_80,
      srtp_crypto_policy_set_aes_cm_192_hmac_sha1_80, 24, 14 },
    { "AES_192_CM_HMAC_SHA1_32", srtp_crypto_policy_set_aes_cm_192_hmac_sha1_32,
      srtp_crypto_policy_set_aes_cm_192_hmac_sha1_80, 24, 14 },
    { "AES_256_CM_HMAC_SHA1_80", srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80,
      srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80, 32, 14 },
    { "AES_256_CM_HMAC_SHA1_32", srtp_crypto_policy_set_aes_cm_256_hmac_sha1_32,
      srtp_crypto_policy_set_aes_cm_256_hmac_sha1_80, 32, 14 },
    { "AEAD_AES_128_GCM", srtp_crypto_policy_set_aes_gcm_128_16_auth,
      srtp_crypto_policy_set_aes_gcm_128_16_auth, 16, 12 },
    { "AEAD_AES_256_GCM", srtp_crypto_policy_set_aes_gcm_256_16_auth,
      srtp_crypto_policy_set_aes_gcm_256_16_auth, 32, 12 },
    { "NULL_HMAC_SHA1_80", srtp_crypto_policy_set_null_cipher_hmac_sha1_80,
      srtp_crypto_policy_set_null_cipher_hmac_sha1_80, 16, 14 },
    { "NULL_HMAC_SHA1_32", set_null_sha1_32,
      srtp_crypto_policy_set_null_cipher_hmac_sha1_80, 16, 14 },
};
#define NSUITES (sizeof(suites) / sizeof(suites[0]))

static const suite_t *find_suite(const char *name)
{
    for (size_t i = 0; i < NSUITES; i++)
        if (strcmp(suites[i].name, name) == 0)
            return &suites[i];
    return NULL;
}

static void make_policy(srtp_policy_t *pol, const suite_t *s, unsigned char *key,
                        srtp_ssrc_type_t type, uint32_t ssrc, unsigned long window)
{
    memset(pol, 0, sizeof(*pol));
    s->rtp(&pol->rtp);
    s->rtcp(&pol->rtcp);
    pol->ssrc.type = type;
    pol->ssrc.value = ssrc;
    pol->key = key;
    pol->window_size = window;
    pol->allow_repeat_tx = 0;
    pol->next = NULL;
}

/* ------------------------------------------------------------------------ */
/* helpers                                                                   */

static int b64val(int c)
{
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
}

/* Standard base64 with padding; stops at '|' (RFC 4568 lifetime/MKI suffix).
 * Returns decoded length or -1. */
static int b64decode(const char *in, unsigned char *out, int outcap)
{
    size_t n = strcspn(in, "|");
    if (n == 0 || n % 4 != 0)
        return -1;
    int o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4], pad = 0;
        for (int j = 0; j < 4; j++) {
            char c = in[i + j];
            if (c == '=') {
                if (i + 4 != n || j < 2) return -1;
                v[j] = 0;
                pad++;
            } else {
                if (pad) return -1;
                v[j] = b64val((unsigned char)c);
                if (v[j] < 0) return -1;
            }
        }
        uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        unsigned char b[3] = { (unsigned char)(w >> 16), (unsigned char)(w >> 8), (unsigned char)w };
        for (int j = 0; j < 3 - pad; j++) {
            if (o >= outcap) return -1;
            out[o++] = b[j];
        }
    }
    return o;
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static const char *err_text(srtp_err_status_t st, char *buf, size_t cap)
{
    switch (st) {
    case srtp_err_status_auth_fail:
        return "error: authentication failed";
    case srtp_err_status_replay_fail:
    case srtp_err_status_replay_old:
        return "error: replayed packet";
    default:
        snprintf(buf, cap, "error: libsrtp status %d", (int)st);
        return buf;
    }
}

static void usage(void)
{
    fprintf(stderr,
            "usage: srtp-tool protect|unprotect --suite SUITE --key BASE64 [--rtcp] "
            "[--replay-window N]\n"
            "       srtp-tool bench [--json]\n"
            "suites:");
    for (size_t i = 0; i < NSUITES; i++)
        fprintf(stderr, " %s", suites[i].name);
    fprintf(stderr, "\n");
    exit(2);
}

/* ------------------------------------------------------------------------ */
/* mode A: line filter                                                       */

static int run_filter(int argc, char **argv)
{
    int protect = strcmp(argv[1], "protect") == 0;
    const char *suite_name = NULL, *key_arg = NULL;
    int rtcp = 0;
    unsigned long window = 0;

    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--suite") == 0 && i + 1 < argc) {
            suite_name = argv[++i];
        } else if (strcmp(argv[i], "--key") == 0 && i + 1 < argc) {
            key_arg = argv[++i];
        } else if (strcmp(argv[i], "--rtcp") == 0) {
            rtcp = 1;
        } else if (strcmp(argv[i], "--replay-window") == 0 && i + 1 < argc) {
            char *end;
            errno = 0;
            window = strtoul(argv[++i], &end, 10);
            if (errno || *end || window < 64 || window > 32768) {
                fprintf(stderr, "srtp-tool: --replay-window must be 64..32768\n");
                return 2;
            }
        } else {
            usage();
        }
    }
    if (!suite_name || !key_arg)
        usage();

    const suite_t *s = find_suite(suite_name);
    if (!s) {
        fprintf(stderr, "srtp-tool: unsupported suite %s\n", suite_name);
        return 2;
    }
    if (strncmp(key_arg, "inline:", 7) == 0)
        key_arg += 7;
    unsigned char key[64];
    int klen = b64decode(key_arg, key, sizeof(key));
    if (klen != s->key_len + s->salt_len) {
        fprintf(stderr, "srtp-tool: key must be base64 of %d+%d bytes (got %d)\n", s->key_len,
                s->salt_len, klen);
        return 2;
    }

    srtp_err_status_t st = srtp_init();
    if (st) {
        fprintf(stderr, "srtp-tool: srtp_init failed: %d\n", st);
        return 1;
    }
    srtp_policy_t pol;
    make_policy(&pol, s, key, protect ? ssrc_any_outbound : ssrc_any_inbound, 0, window);
    srtp_t sess;
    st = srtp_create(&sess, &pol);
    if (st) {
        fprintf(stderr, "srtp-tool: unsupported suite %s (srtp_create status %d)\n", suite_name,
                st);
        return 2;
    }

    char *line = NULL;
    size_t linecap = 0;
    ssize_t n;
    unsigned char *pkt = NULL;
    size_t pktcap = 0;
    char errbuf[64];
    char *hexout = NULL;
    size_t hexcap = 0;

    while ((n = getline(&line, &linecap, stdin)) >= 0) {
        /* trim whitespace */
        char *p = line;
        while (*p && isspace((unsigned char)*p)) p++;
        size_t len = strlen(p);
        while (len > 0 && isspace((unsigned char)p[len - 1])) len--;
        if (len == 0)
            continue;

        const char *msg = NULL;
        size_t plen = len / 2;
        if (pktcap < plen + TRAILER_ROOM) {
            pktcap = plen + TRAILER_ROOM;
            pkt = realloc(pkt, pktcap);
            if (!pkt) { perror("realloc"); return 1; }
        }
        if (len % 2) {
            msg = "error: bad hex";
        } else {
            for (size_t i = 0; i < plen; i++) {
                int hi = hexval((unsigned char)p[2 * i]), lo = hexval((unsigned char)p[2 * i + 1]);
                if (hi < 0 || lo < 0) { msg = "error: bad hex"; break; }
                pkt[i] = (unsigned char)(hi << 4 | lo);
            }
        }
        if (!msg) {
            int ilen = (int)plen;
            if (protect)
                st = rtcp ? srtp_protect_rtcp(sess, pkt, &ilen) : srtp_protect(sess, pkt, &ilen);
            else
                st = rtcp ? srtp_unprotect_rtcp(sess, pkt, &ilen) : srtp_unprotect(sess, pkt, &ilen);
            if (st) {
                msg = err_text(st, errbuf, sizeof(errbuf));
            } else {
                size_t need = (size_t)ilen * 2 + 2;
                if (hexcap < need) {
                    hexcap = need;
                    hexout = realloc(hexout, hexcap);
                    if (!hexout) { perror("realloc"); return 1; }
                }
                static const char digits[] = "0123456789abcdef";
                for (int i = 0; i < ilen; i++) {
                    hexout[2 * i] = digits[pkt[i] >> 4];
                    hexout[2 * i + 1] = digits[pkt[i] & 15];
                }
                hexout[2 * ilen] = '\n';
                fwrite(hexout, 1, (size_t)ilen * 2 + 1, stdout);
            }
        }
        if (msg) {
            fputs(msg, stdout);
            fputc('\n', stdout);
        }
        fflush(stdout);
    }
    free(line);
    free(pkt);
    free(hexout);
    srtp_dealloc(sess);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* mode B/C: benchmark                                                       */

#define PAYLOAD 160
#define HDR 12
#define PKT (HDR + PAYLOAD)
#define SLOT 256 /* bytes per packet slot: PKT + trailer, rounded */
#define TARGET_NS 500000000.0 /* aim for ~0.5 s of measured time per figure */
#define MIN_NS 300000000.0

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

typedef struct {
    const char *engine, *suite, *op;
    int streams;
    double ns;
} result_t;

static result_t results[256];
static int nresults;
static int json_mode;

static void add_result(const char *engine, const char *suite, const char *op, int streams,
                       double ns)
{
    if (nresults < (int)(sizeof(results) / sizeof(results[0]))) {
        results[nresults].engine = engine;
        results[nresults].suite = suite;
        results[nresults].op = op;
        results[nresults].streams = streams;
        results[nresults].ns = ns;
        nresults++;
    }
    if (!json_mode) {
        printf("%-8s %-24s %-16s %6d %10.1f\n", engine, suite, op, streams, ns);
        fflush(stdout);
    }
}

static void fill_random(unsigned char *b, size_t n, uint64_t *state)
{
    for (size_t i = 0; i < n; i++) {
        *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
        b[i] = (unsigned char)(*state >> 56);
    }
}

/*
 * Benchmark one suite with `streams` SSRCs.  Each pass:
 *   1. (untimed) build a batch of plaintext packets, round-robin over the SSRCs,
 *      each SSRC's sequence number increasing by one per packet;
 *   2. (timed)   srtp_protect every packet of the batch in place (sender session);
 *   3. (untimed) nothing -- the protected batch is the input for step 4;
 *   4. (timed)   srtp_unprotect every packet of the batch in place (receiver session).
 * The first pass is a warm-up that makes libsrtp clone one stream per SSRC
 * from the any_outbound/any_inbound template (that allocates); it is not
 * counted.  The timed loops only call srtp_protect/srtp_unprotect.
 */
static int bench_suite(const suite_t *s, int streams)
{
    unsigned char key[64];
    uint64_t rng = 0x1234567 + (uint64_t)streams;
    fill_random(key, sizeof(key), &rng);

    srtp_policy_t pol;
    srtp_t tx, rx;
    make_policy(&pol, s, key, ssrc_any_outbound, 0, 0);
    if (srtp_create(&tx, &pol) != srtp_err_status_ok)
        return -1;
    make_policy(&pol, s, key, ssrc_any_inbound, 0, 0);
    if (srtp_create(&rx, &pol) != srtp_err_status_ok) {
        srtp_dealloc(tx);
        return -1;
    }

    int batch = streams >= 1000 ? streams : 1024;
    unsigned char *buf = aligned_alloc(64, (size_t)batch * SLOT);
    int *lens = malloc(sizeof(int) * (size_t)batch);
    uint16_t *seq = malloc(sizeof(uint16_t) * (size_t)streams);
    unsigned char payload[PAYLOAD];
    fill_random(payload, sizeof(payload), &rng);
    for (int i = 0; i < streams; i++)
        seq[i] = (uint16_t)(i * 7919u);

    double t_prot = 0, t_unprot = 0;
    long n_prot = 0, n_unprot = 0;
    int failures = 0;
    for (int pass = 0;; pass++) {
        for (int i = 0; i < batch; i++) {
            unsigned char *p = buf + (size_t)i * SLOT;
            int si = i % streams;
            uint32_t ssrc = 0x10000000u + (uint32_t)si;
            uint16_t sq = seq[si]++;
            uint32_t ts = (uint32_t)sq * 160u;
            p[0] = 0x80;
            p[1] = 0x00; /* PT 0 */
            p[2] = (unsigned char)(sq >> 8);
            p[3] = (unsigned char)sq;
            p[4] = (unsigned char)(ts >> 24);
            p[5] = (unsigned char)(ts >> 16);
            p[6] = (unsigned char)(ts >> 8);
            p[7] = (unsigned char)ts;
            p[8] = (unsigned char)(ssrc >> 24);
            p[9] = (unsigned char)(ssrc >> 16);
            p[10] = (unsigned char)(ssrc >> 8);
            p[11] = (unsigned char)ssrc;
            memcpy(p + HDR, payload, PAYLOAD);
            lens[i] = PKT;
        }
        double t0 = now_ns();
        for (int i = 0; i < batch; i++)
            failures += srtp_protect(tx, buf + (size_t)i * SLOT, &lens[i]) != srtp_err_status_ok;
        double t1 = now_ns();
        for (int i = 0; i < batch; i++)
            failures += srtp_unprotect(rx, buf + (size_t)i * SLOT, &lens[i]) != srtp_err_status_ok;
        double t2 = now_ns();
        if (pass == 0)
            continue; /* warm-up: stream creation */
        t_prot += t1 - t0;
        t_unprot += t2 - t1;
        n_prot += batch;
        n_unprot += batch;
        if (t_prot >= TARGET_NS && t_unprot >= MIN_NS)
            break;
        if (t_unprot >= TARGET_NS && t_prot >= MIN_NS)
            break;
    }
    if (failures) {
        fprintf(stderr, "srtp-tool bench: %s: %d protect/unprotect failures\n", s->name,
                failures);
    }
    add_result("libsrtp", s->name, "protect", streams, t_prot / (double)n_prot);
    add_result("libsrtp", s->name, "unprotect", streams, t_unprot / (double)n_unprot);

    free(buf);
    free(lens);
    free(seq);
    srtp_dealloc(tx);
    srtp_dealloc(rx);
    return 0;
}

/* Run `op` in chunks of `chunk` iterations until ~TARGET_NS has passed. */
#define TIME_LOOP(result_var, chunk, body)                                                       \
    do {                                                                                        \
        long n_ = 0;                                                                            \
        double t_ = 0;                                                                          \
        for (int i_ = 0; i_ < (chunk); i_++) { body; }                                          \
        while (t_ < TARGET_NS) {                                                                \
            double a_ = now_ns();                                                               \
            for (int i_ = 0; i_ < (chunk); i_++) { body; }                                      \
            t_ += now_ns() - a_;                                                                \
            n_ += (chunk);                                                                      \
        }                                                                                       \
        result_var = t_ / (double)n_;                                                           \
    } while (0)

static volatile unsigned char sink;

static void bench_openssl(void)
{
    unsigned char key[32], iv[16], in[PKT + 16], out[PKT + 32], aad[HDR], tag[16];
    uint64_t rng = 42;
    fill_random(key, sizeof(key), &rng);
    fill_random(iv, sizeof(iv), &rng);
    fill_random(in, sizeof(in), &rng);
    fill_random(aad, sizeof(aad), &rng);
    int outl;
    double ns_ctr, ns_sha, ns_gcm;

    /* (1) AES-128-CTR over 160 bytes, key schedule once, new IV per op */
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    EVP_EncryptInit_ex(ctx, EVP_aes_128_ctr(), NULL, key, iv);
    TIME_LOOP(ns_ctr, 100000, {
        iv[15] = (unsigned char)i_;
        EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, iv);
        EVP_EncryptUpdate(ctx, out, &outl, in, PAYLOAD);
    });
    sink = out[0];
    EVP_CIPHER_CTX_free(ctx);

    /* (2) 4 SHA-1 compression blocks: HMAC-SHA1 over 172+4 bytes with
     * precomputed ipad/opad states = 3 inner blocks + 1 outer block. */
    SHA_CTX sha;
    SHA1_Init(&sha);
    unsigned char blocks[4 * 64];
    fill_random(blocks, sizeof(blocks), &rng);
    TIME_LOOP(ns_sha, 100000, {
        blocks[0] = (unsigned char)i_;
        SHA1_Transform(&sha, blocks);
        SHA1_Transform(&sha, blocks + 64);
        SHA1_Transform(&sha, blocks + 128);
        SHA1_Transform(&sha, blocks + 192);
    });
    sink = (unsigned char)sha.h0;

    /* (4) AES-128-GCM seal of 160 bytes with 12 bytes AAD */
    ctx = EVP_CIPHER_CTX_new();
    EVP_EncryptInit_ex(ctx, EVP_aes_128_gcm(), NULL, key, NULL);
    EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, 12, NULL);
    TIME_LOOP(ns_gcm, 100000, {
        iv[11] = (unsigned char)i_;
        EVP_EncryptInit_ex(ctx, NULL, NULL, NULL, iv);
        EVP_EncryptUpdate(ctx, NULL, &outl, aad, HDR);
        EVP_EncryptUpdate(ctx, out, &outl, in, PAYLOAD);
        EVP_EncryptFinal_ex(ctx, out + outl, &outl);
        EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag);
    });
    sink = tag[0];
    EVP_CIPHER_CTX_free(ctx);

    add_result("openssl", "AES_CM_128_HMAC_SHA1_80", "aes128_ctr", 1, ns_ctr);
    add_result("openssl", "AES_CM_128_HMAC_SHA1_80", "sha1_4blocks", 1, ns_sha);
    add_result("openssl", "AES_CM_128_HMAC_SHA1_80", "primitive_limit", 1, ns_ctr + ns_sha);
    add_result("openssl", "AEAD_AES_128_GCM", "gcm_seal", 1, ns_gcm);
}

static int run_bench(int argc, char **argv)
{
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0)
            json_mode = 1;
        else
            usage();
    }
    /* one core */
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    if (sched_setaffinity(0, sizeof(set), &set) != 0)
        perror("sched_setaffinity (continuing unpinned)");

    if (srtp_init() != srtp_err_status_ok) {
        fprintf(stderr, "srtp_init failed\n");
        return 1;
    }
    if (!json_mode) {
        printf("payload %d bytes (RTP packet %d bytes), ns per operation, pinned to CPU 0\n",
               PAYLOAD, PKT);
        printf("%-8s %-24s %-16s %6s %10s\n", "engine", "suite", "op", "streams", "ns/op");
    }
    static const int stream_counts[] = { 1, 10000 };
    for (size_t si = 0; si < NSUITES; si++) {
        for (size_t k = 0; k < 2; k++) {
            if (bench_suite(&suites[si], stream_counts[k]) != 0) {
                fprintf(stderr, "srtp-tool bench: suite %s not supported by this libsrtp\n",
                        suites[si].name);
                break;
            }
        }
    }
    bench_openssl();

    if (json_mode) {
        printf("{\"results\":[");
        int first = 1;
        for (int i = 0; i < nresults; i++) {
            if (strcmp(results[i].engine, "libsrtp") != 0) continue;
            printf("%s\n  {\"engine\":\"%s\",\"suite\":\"%s\",\"op\":\"%s\",\"payload\":%d,"
                   "\"streams\":%d,\"ns_per_op\":%.1f}",
                   first ? "" : ",", results[i].engine, results[i].suite, results[i].op, PAYLOAD,
                   results[i].streams, results[i].ns);
            first = 0;
        }
        printf("\n],\n\"openssl\":[");
        first = 1;
        for (int i = 0; i < nresults; i++) {
            if (strcmp(results[i].engine, "openssl") != 0) continue;
            printf("%s\n  {\"engine\":\"%s\",\"suite\":\"%s\",\"op\":\"%s\",\"payload\":%d,"
                   "\"streams\":%d,\"ns_per_op\":%.1f}",
                   first ? "" : ",", results[i].engine, results[i].suite, results[i].op, PAYLOAD,
                   results[i].streams, results[i].ns);
            first = 0;
        }
        printf("\n]}\n");
    }
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        usage();
    if (strcmp(argv[1], "protect") == 0 || strcmp(argv[1], "unprotect") == 0)
        return run_filter(argc, argv);
    if (strcmp(argv[1], "bench") == 0)
        return run_bench(argc, argv);
    usage();
    return 2;
}
