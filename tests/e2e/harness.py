"""Starting and stopping the processes of an end-to-end call: the relay (srtpgate
serve, or ng_stub.py in its place) and Kamailio with examples/kamailio/kamailio.cfg.
Used by conftest.py and capture_kamailio.py."""

import contextlib
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time

from netns import exec_in
from ng_stub import ng_request

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
KAMAILIO_CFG = os.path.join(REPO, "examples", "kamailio", "kamailio.cfg")
IP = "127.0.0.1"


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((IP, 0))
        return s.getsockname()[1]


def free_tcp_port():
    """A TCP port free right now, taken below the kernel's ephemeral range: a
    port the kernel hands out for `bind(0)` can be handed out again to any
    outgoing connection before the child that is to listen on it binds it
    (baresip's ctrl_tcp once lost that race)."""
    lo, _ = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
    for _ in range(200):
        port = random.randrange(10000, max(10001, lo))
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind((IP, port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free TCP port below %d" % lo)


def free_port_range(size=200):
    """A range of UDP ports, all free right now, outside the kernel's ephemeral
    range so that the UAs' own sockets cannot land in it."""
    lo, hi = map(int, open("/proc/sys/net/ipv4/ip_local_port_range").read().split())
    for _ in range(50):
        base = random.randrange(10000, max(10001, lo - size)) & ~1
        socks = []
        try:
            for p in range(base, base + size):
                s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
                socks.append(s)
                s.bind((IP, p))
            return base, base + size - 1
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free block of %d UDP ports" % size)


class Proc:
    """A child process in its own process group, with output to a log file."""

    def __init__(self, name, argv, log_path, env=None):
        self.name, self.argv, self.log_path = name, argv, log_path
        self.log = open(log_path, "wb")
        self.p = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT,
                                  stdin=subprocess.DEVNULL, start_new_session=True, env=env)

    def alive(self):
        return self.p.poll() is None

    def output(self, tail=6000):
        self.log.flush()
        with open(self.log_path, "rb") as f:
            return f.read().decode("utf-8", "replace")[-tail:]

    def stop(self):
        if self.alive():
            # Kamailio's main process stops its children on SIGTERM; the group
            # kill is for anything that outlives it.
            os.killpg(self.p.pid, signal.SIGTERM)
            try:
                self.p.wait(5)
            except subprocess.TimeoutExpired:
                os.killpg(self.p.pid, signal.SIGKILL)
                self.p.wait(5)
        try:
            os.killpg(self.p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.log.close()

    def describe(self):
        return "%s (%s) log:\n%s" % (self.name, " ".join(self.argv), self.output())


@contextlib.contextmanager
def running():
    """A list to append started processes to: they are stopped when the
    block ends, the newest first, and their descriptions (command line, log
    tail) go to stderr when it ends in a failure."""
    started = []
    try:
        yield started
    except BaseException:
        for proc in started:
            print(proc.describe(), file=sys.stderr)
        raise
    finally:
        for proc in reversed(started):
            proc.stop()


def start_relay(kind, workdir, srtpgate_bin=None, extra=(), interfaces=(IP,), netns=None, ip=IP):
    """Starts `srtpgate serve` (kind "srtpgate", with `extra` flags and its
    media on `interfaces`) or ng_stub.py (kind "stub") with the same flags,
    NG and HTTP on `ip` (in network namespace `netns`, which the calling
    thread reaches); waits for it to answer an NG ping. Returns (proc, cfg)."""
    cfg = {"ng": (ip, free_udp_port()), "http": (ip, free_tcp_port())}
    cfg["port_min"], cfg["port_max"] = free_port_range()
    flags = ["--listen-ng", "%s:%d" % cfg["ng"]] + [a for i in interfaces for a in ("--interface", i)] + [
             "--port-min", str(cfg["port_min"]), "--port-max", str(cfg["port_max"]),
             "--listen-http", "%s:%d" % cfg["http"]]
    if kind == "stub":
        cfg["ng_log"] = os.path.join(workdir, "ng")
        argv = [sys.executable, os.path.join(HERE, "ng_stub.py")] + flags + ["--log-dir", cfg["ng_log"]]
    else:
        argv = [srtpgate_bin, "serve"] + flags + list(extra)
    proc = Proc(kind, exec_in(netns, argv), os.path.join(workdir, kind + ".log"))
    wait_for_pong(proc, cfg["ng"])
    return proc, cfg


def start_ng_proxy(workdir, target):
    """Starts ng_stub.py --forward target: a logging proxy in front of a real
    relay, so that both requests and replies land in cfg["ng_log"]. Returns
    (proc, cfg) once a ping through it reaches the relay and comes back."""
    cfg = {"ng": (IP, free_udp_port()), "ng_log": os.path.join(workdir, "ng")}
    argv = [sys.executable, os.path.join(HERE, "ng_stub.py"), "--listen-ng", "%s:%d" % cfg["ng"],
            "--forward", "%s:%d" % target, "--log-dir", cfg["ng_log"]]
    proc = Proc("ng-proxy", argv, os.path.join(workdir, "ng-proxy.log"))
    wait_for_pong(proc, cfg["ng"])
    return proc, cfg


def wait_for_pong(proc, addr, timeout=15):
    """Waits until an NG ping to addr gets pong; stops proc and raises if it
    dies or the time runs out."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if ng_request(addr, {"command": "ping"}, timeout=0.3).get("result") == "pong":
                return
        except (OSError, ValueError):
            pass
        if not proc.alive() or time.monotonic() > deadline:
            proc.stop()
            raise RuntimeError("no pong from NG %s:%d; %s" % (addr + (proc.describe(),)))


def srtpgate_path():
    """The daemon under test: $SRTPGATE_BIN, else the release build."""
    return os.environ.get("SRTPGATE_BIN") or os.path.join(REPO, "target", "release", "srtpgate")


def kamailio_path():
    return shutil.which("kamailio") or next(
        (p for p in ("/usr/sbin/kamailio", "/usr/local/sbin/kamailio") if os.access(p, os.X_OK)), None)


def sip_options_ok(addr, timeout=0.3):
    """True if Kamailio answers an OPTIONS keepalive (see kamailio.cfg)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind((IP, 0))
        s.settimeout(timeout)
        port = s.getsockname()[1]
        tag = "%08x" % random.getrandbits(32)
        msg = ("OPTIONS sip:%s:%d SIP/2.0\r\nVia: SIP/2.0/UDP %s:%d;branch=z9hG4bK%s;rport\r\n"
               "Max-Forwards: 70\r\nFrom: <sip:probe@%s>;tag=%s\r\nTo: <sip:%s:%d>\r\n"
               "Call-ID: %s@probe\r\nCSeq: 1 OPTIONS\r\nContent-Length: 0\r\n\r\n"
               % (addr[0], addr[1], IP, port, tag, IP, tag, addr[0], addr[1], tag))
        s.sendto(msg.encode(), addr)
        try:
            return s.recv(65535).startswith(b"SIP/2.0 200")
        except socket.timeout:
            return False


def start_kamailio(workdir, ng_addr, cfg_path=KAMAILIO_CFG, rtpe_flags=None, netns=None, ip=IP, defines=None):
    """Runs Kamailio in the foreground as the current user, all its runtime
    files under workdir, listening on `ip` (in network namespace `netns`,
    which the calling thread is in); waits until it answers SIP. rtpe_flags
    overrides the config's rtpengine_manage() flags, `defines` (name: string,
    or None for a define without a value) any other of its defines. Returns
    (proc, sip addr)."""
    sip = (ip, free_udp_port())
    rundir = os.path.join(workdir, "kamailio-run")
    os.makedirs(rundir, exist_ok=True)
    argv = [kamailio_path(), "-f", cfg_path, "-DD", "-E", "-m", "64", "-M", "8",
            "-Y", rundir, "-P", os.path.join(rundir, "kamailio.pid"), "-w", rundir,
            "-A", "SIP_ADDR=%s" % sip[0], "-A", "SIP_PORT=%d" % sip[1],
            "-A", 'RTPENGINE_SOCK="udp:%s:%d"' % ng_addr]
    if rtpe_flags:
        argv += ["-A", 'RTPE_FLAGS="%s"' % rtpe_flags]
    for name, value in (defines or {}).items():
        # None: a define without a value (for #!ifdef).
        argv += ["-A", name if value is None else '%s="%s"' % (name, value)]
    proc = Proc("kamailio", exec_in(netns, argv), os.path.join(workdir, "kamailio.log"))
    deadline = time.monotonic() + 15
    while not sip_options_ok(sip):
        if not proc.alive() or time.monotonic() > deadline:
            proc.stop()
            raise RuntimeError("kamailio did not come up; " + proc.describe())
        time.sleep(0.1)
    return proc, sip
