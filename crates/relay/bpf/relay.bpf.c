// SPDX-License-Identifier: Apache-2.0 OR MIT
//
// srtpgate's XDP program: steers the media of latched legs to the relay's
// AF_XDP sockets; everything else goes on to the kernel.
//
// A frame is redirected when it is IPv4 or IPv6 (no VLAN tag, no IP options
// or extension headers, not a fragment) UDP, its destination (address, port)
// is a leg in `legs` and its source is the peer that leg latched. It goes to
// the AF_XDP socket that the worker owning the leg has on the receive queue
// the frame arrived on: every worker has one on every queue (sharing the
// queue's fill ring), so a leg's packets reach its worker whatever queue the
// NIC or the sender's hash picked. ARP, ICMP, NG, SIP, legs not latched yet,
// packets from another source (the relay's socket path decides on
// re-latching) and unknown ports pass, as does a frame whose worker has no
// socket on its queue (counted). A redirected frame carries its receive time
// as metadata (`struct rx_meta`).
//
// Built by crates/relay/build.rs with `clang -O2 -g -target bpf`; written
// without libbpf's headers (the few definitions it needs are below), so the
// build needs clang and nothing else.

typedef unsigned char __u8;
typedef unsigned short __u16;
typedef unsigned int __u32;
typedef unsigned long long __u64;

#define SEC(name) __attribute__((section(name), used))
#define __uint(name, val) int(*name)[val]
#define __type(name, val) typeof(val) *name

#define BPF_MAP_TYPE_HASH 1
#define BPF_MAP_TYPE_ARRAY 2
#define BPF_MAP_TYPE_PERCPU_ARRAY 6
#define BPF_MAP_TYPE_XSKMAP 17

#define XDP_PASS 2
#define XDP_REDIRECT 4

// Entries of `xsks`: receive queues times workers, at most (the relay's
// `XSK_SLOTS`).
#define XSK_SLOTS 4096

struct xdp_md {
    __u32 data;
    __u32 data_end;
    __u32 data_meta;
    __u32 ingress_ifindex;
    __u32 rx_queue_index;
    __u32 egress_ifindex;
};

static void *(*bpf_map_lookup_elem)(void *map, const void *key) = (void *)1;
static long (*bpf_redirect_map)(void *map, __u64 key, __u64 flags) = (void *)51;
static __u64 (*bpf_ktime_get_ns)(void) = (void *)5;
static long (*bpf_xdp_adjust_meta)(struct xdp_md *ctx, int delta) = (void *)54;

// The receive time travels in front of the frame as XDP metadata, which the
// kernel copies into the AF_XDP frame with the packet: CLOCK_MONOTONIC ns,
// then a magic word the worker clears after reading (a frame without it
// has no time, and is never judged stale on a leftover one).
#define RX_META_MAGIC 0x53524754u
struct rx_meta {
    __u64 rx_ns;
    __u32 pad;
    __u32 magic;
};

// A leg's local address: IPv4 in the first 4 bytes of `addr` (family 4) or
// IPv6 (family 6); the port in network byte order.
struct leg_key {
    __u8 addr[16];
    __u8 port[2];
    __u8 family;
    __u8 pad;
};

// The peer the leg latched (port 0: not latched: the kernel path) and the
// worker that owns the leg.
struct leg_val {
    __u8 peer[16];
    __u8 peer_port[2];
    __u16 worker;
};

struct {
    __uint(type, BPF_MAP_TYPE_HASH);
    __uint(max_entries, 262144);
    __type(key, struct leg_key);
    __type(value, struct leg_val);
} legs SEC(".maps");

// [0]: the relay's workers (the stride of `xsks`).
struct {
    __uint(type, BPF_MAP_TYPE_ARRAY);
    __uint(max_entries, 1);
    __type(key, __u32);
    __type(value, __u32);
} workers SEC(".maps");

// Receive queue q, worker w -> that worker's AF_XDP socket on that queue,
// at q * workers + w.
struct {
    __uint(type, BPF_MAP_TYPE_XSKMAP);
    __uint(max_entries, XSK_SLOTS);
    __type(key, __u32);
    __type(value, __u32);
} xsks SEC(".maps");

// Per CPU: [0] redirected, [1] passed: another source than the latched
// peer, or not latched, [2] passed: the owning worker has no socket on the
// queue the frame arrived on.
struct {
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
    __uint(max_entries, 3);
    __type(key, __u32);
    __type(value, __u64);
} counters SEC(".maps");

static __attribute__((always_inline)) int count(__u32 which, int verdict)
{
    __u64 *c = bpf_map_lookup_elem(&counters, &which);
    if (c)
        *c += 1;
    return verdict;
}

SEC("xdp")
int srtpgate_xdp(struct xdp_md *ctx)
{
    __u8 *data = (__u8 *)(long)ctx->data;
    __u8 *end = (__u8 *)(long)ctx->data_end;
    struct leg_key key = {};
    __u8 src[16] = {};
    __u8 *udp;

    if (data + 14 > end)
        return XDP_PASS;
    __u16 proto = (__u16)data[12] << 8 | data[13];
    __u8 *ip = data + 14;
    if (proto == 0x0800) {
        if (ip + 20 > end)
            return XDP_PASS;
        // Version 4, no options, UDP, not a fragment.
        if (ip[0] != 0x45 || ip[9] != 17 || ((ip[6] & 0x3f) | ip[7]) != 0)
            return XDP_PASS;
        udp = ip + 20;
        __builtin_memcpy(src, ip + 12, 4);
        __builtin_memcpy(key.addr, ip + 16, 4);
        key.family = 4;
    } else if (proto == 0x86dd) {
        if (ip + 40 > end)
            return XDP_PASS;
        if ((ip[0] >> 4) != 6 || ip[6] != 17)
            return XDP_PASS;
        udp = ip + 40;
        __builtin_memcpy(src, ip + 8, 16);
        __builtin_memcpy(key.addr, ip + 24, 16);
        key.family = 6;
    } else {
        return XDP_PASS;
    }
    if (udp + 8 > end)
        return XDP_PASS;
    key.port[0] = udp[2];
    key.port[1] = udp[3];
    struct leg_val *leg = bpf_map_lookup_elem(&legs, &key);
    if (!leg)
        return XDP_PASS;
    __u8 differ = (leg->peer_port[0] | leg->peer_port[1]) == 0;
    differ |= (leg->peer_port[0] ^ udp[0]) | (leg->peer_port[1] ^ udp[1]);
#pragma unroll
    for (int i = 0; i < 16; i++)
        differ |= leg->peer[i] ^ src[i];
    if (differ)
        return count(1, XDP_PASS);
    __u32 zero = 0;
    __u32 *stride = bpf_map_lookup_elem(&workers, &zero);
    if (!stride)
        return count(2, XDP_PASS);
    __u64 slot = (__u64)ctx->rx_queue_index * *stride + leg->worker;
    if (slot >= XSK_SLOTS)
        return count(2, XDP_PASS);
    __u64 now = bpf_ktime_get_ns();
    if (bpf_xdp_adjust_meta(ctx, -(int)sizeof(struct rx_meta)) == 0) {
        struct rx_meta *meta = (struct rx_meta *)(long)ctx->data_meta;
        if ((__u8 *)(meta + 1) <= (__u8 *)(long)ctx->data) {
            meta->rx_ns = now;
            meta->pad = 0;
            meta->magic = RX_META_MAGIC;
        }
    }
    // An empty slot (no socket of that worker on this queue) passes.
    long verdict = bpf_redirect_map(&xsks, slot, XDP_PASS);
    return count(verdict == XDP_REDIRECT ? 0 : 2, verdict);
}

char LICENSE[] SEC("license") = "Dual MIT/GPL";
