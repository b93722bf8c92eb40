"""Two relay nodes in one Kamailio rtpengine set: calls spread over both, each
call stays on its node, when a node dies the calls go to the other one, and
a node at its load limit sends new calls to the other one.

Kamailio runs tests/e2e/kamailio-two-nodes.cfg (the example config with both
NG sockets in set 0, equal weight, and a short NG timeout). The phones are
sipua.py's, SRTP on both legs as in test_kamailio.py.

    SRTPGATE_BIN=$PWD/target/release/srtpgate .venv/bin/python -m pytest tests/e2e/test_two_nodes.py -q -rs

1. 100 calls, a few at a time: every call's media arrives both ways; each call
   is known (NG query) to exactly one node while it is up, and its SDPs carry
   that node's ports; both nodes get >= 25 calls; per node, the offers,
   answers and deletes of /metrics are equal (nothing of a call strays to the
   other node) and no session is left after the calls.
2. Node A is stopped (SIGTERM to its PID). 20 more calls, one after another so
   that each one's set-up time can be read: all succeed on node B, whose
   offer/answer/delete counters rise by exactly 20. (A killed node's NG port
   answers with ICMP port unreachable, which Kamailio's connected socket sees
   at once: the call that finds A dead is retried on B within milliseconds,
   not after rtpengine_tout_ms. A node that is silent instead costs 500 ms.)
"""

import concurrent.futures
import itertools
import os
import re
import statistics
import sys
import threading
import time
import urllib.request

import pytest

import harness
from ng_stub import ng_request
from sipua import SipUA, exchange

CFG = os.path.join(harness.HERE, "kamailio-two-nodes.cfg")
CALLS = 100             # phase 1
CALLS_AFTER_STOP = 20   # phase 2
PARALLEL = 8            # phase 1 calls at a time
PACKETS = 5             # per direction and call
INTERVAL = 0.02

_users = itertools.count(1)


def skip(reason):
    print("SKIP: " + reason, file=sys.stderr)
    pytest.skip(reason)


# --- processes ---------------------------------------------------------------

def start_kamailio_two(workdir, ng_a, ng_b):
    """harness.start_kamailio, but with both NG sockets (weight 1 each) in the set."""
    sip = (harness.IP, harness.free_udp_port())
    rundir = os.path.join(workdir, "kamailio-run")
    os.makedirs(rundir, exist_ok=True)
    sock = "udp:%s:%d=1 udp:%s:%d=1" % (ng_a + ng_b)
    argv = [harness.kamailio_path(), "-f", CFG, "-DD", "-E", "-m", "64", "-M", "8",
            "-Y", rundir, "-P", os.path.join(rundir, "kamailio.pid"), "-w", rundir,
            "-A", "SIP_ADDR=%s" % sip[0], "-A", "SIP_PORT=%d" % sip[1],
            "-A", 'RTPENGINE_SOCK="%s"' % sock]
    proc = harness.Proc("kamailio", argv, os.path.join(workdir, "kamailio.log"))
    deadline = time.monotonic() + 15
    while not harness.sip_options_ok(sip):
        if not proc.alive() or time.monotonic() > deadline:
            proc.stop()
            raise RuntimeError("kamailio did not come up; " + proc.describe())
        time.sleep(0.1)
    return proc, sip


class Node:
    def __init__(self, name, proc, cfg):
        self.name, self.proc, self.cfg = name, proc, cfg
        self.ng = cfg["ng"]

    def owns_port(self, port):
        return self.cfg["port_min"] <= port <= self.cfg["port_max"]

    def metrics(self):
        """{metric line name with labels: value} from the node's /metrics."""
        url = "http://%s:%d/metrics" % self.cfg["http"]
        text = urllib.request.urlopen(url, timeout=3).read().decode()
        out = {}
        for line in text.splitlines():
            m = re.match(r"^(srtpgate_\w+(?:\{[^}]*\})?) (\S+)$", line)
            if m:
                out[m.group(1)] = float(m.group(2))
        return out

    def counts(self):
        """(offers, answers, deletes, sessions now)."""
        m = self.metrics()
        cmd = lambda c: int(m.get('srtpgate_ng_requests_total{command="%s"}' % c, 0))
        return cmd("offer"), cmd("answer"), cmd("delete"), int(m["srtpgate_sessions"])

    def knows(self, call_id):
        return ng_request(self.ng, {"command": "query", "call-id": call_id}).get("result") == "ok"

    def calls(self):
        return ng_request(self.ng, {"command": "list", "limit": 1000}).get("calls", [])


def kamailio_node_of(call_id, nodes):
    """The node Kamailio's default hash (hash_algo 0) picks among `nodes` (all
    up, weight 1): sum of the Call-ID's bytes & 0xff, modulo the weights."""
    return nodes[(sum(call_id.encode()) & 0xFF) % len(nodes)]


# --- one call ----------------------------------------------------------------

def one_call(sip, nodes):
    """alice calls bob through Kamailio, 5 SRTP packets each way, BYE.
    Returns a dict: call_id, node (name of the node that knew the call),
    seconds (INVITE to ACK), problems (list of strings)."""
    n = next(_users)
    alice, bob = SipUA("alice%d" % n, sip), SipUA("bob%d" % n, sip)
    res = {"call_id": None, "node": None, "seconds": None, "problems": []}
    p = res["problems"]
    try:
        alice.register()
        bob.register()
        errors = []

        def answer():
            try:
                bob.answer()
            except Exception as e:
                errors.append(e)
        answering = threading.Thread(target=answer, daemon=True)
        answering.start()
        t0 = time.monotonic()
        alice.call(bob.user)           # INVITE ... 200, ACK
        res["seconds"] = time.monotonic() - t0
        answering.join(10)
        if errors:
            p.append("bob: %s" % errors[0])
            return res
        call_id = res["call_id"] = alice.dialog.call_id

        # Which node has the call: exactly one must, and both SDPs (offer as
        # bob got it, answer as alice got it) must carry that node's ports.
        owners = [nd for nd in nodes if nd.knows(call_id)]
        if len(owners) != 1:
            p.append("call %s known to %s nodes" % (call_id, [nd.name for nd in owners] or "no"))
        else:
            owner = res["node"] = owners[0]
            for who, sdp in (("bob (offer)", bob.dialog.remote_sdp), ("alice (answer)", alice.dialog.remote_sdp)):
                if not owner.owns_port(sdp.port):
                    p.append("%s got port %s, not in node %s's range %d-%d"
                             % (who, sdp.port, owner.name, owner.cfg["port_min"], owner.cfg["port_max"]))

        p += exchange(alice, bob, PACKETS, INTERVAL)

        bye = alice.bye()
        if bye.status != 200:
            p.append("BYE got %s" % bye.first)
        elif bob.byes.empty():
            p.append("bob never saw the BYE")
    except Exception as e:
        p.append("%s: %s" % (type(e).__name__, e))
    finally:
        alice.close()
        bob.close()
    if res["node"] is not None:
        res["node"] = res["node"].name
    return res


def failures(results):
    return ["%s: %s" % (r["call_id"], "; ".join(r["problems"])) for r in results if r["problems"]]


def wait_idle(node, timeout=3.0):
    """The node's list is empty and its sessions gauge 0 (polling briefly)."""
    deadline = time.monotonic() + timeout
    while True:
        calls, sessions = node.calls(), node.counts()[3]
        if not calls and sessions == 0:
            return
        if time.monotonic() > deadline:
            raise AssertionError("node %s still has calls after the BYEs: list=%s sessions=%d"
                                 % (node.name, calls[:5], sessions))
        time.sleep(0.1)


# --- the test ----------------------------------------------------------------

def start_two(srtpgate_binary, tmp_path, started, extra_a=()):
    """Nodes A (with `extra_a` flags) and B, on disjoint port ranges so that
    an SDP port names its node, and Kamailio with both in its set."""
    if not harness.kamailio_path():
        skip("kamailio is not installed (apt-get install kamailio; it ships rtpengine.so)")
    nodes = []
    for name, extra in (("A", extra_a), ("B", ())):
        work = tmp_path / name
        work.mkdir()
        while True:
            proc, cfg = harness.start_relay("srtpgate", str(work), srtpgate_binary, extra)
            if all(cfg["port_max"] < o.cfg["port_min"] or cfg["port_min"] > o.cfg["port_max"] for o in nodes):
                break
            proc.stop()
        started.append(proc)
        nodes.append(Node(name, proc, cfg))
    kam, sip = start_kamailio_two(str(tmp_path), nodes[0].ng, nodes[1].ng)
    started.append(kam)
    return nodes, kam, sip


@pytest.fixture
def two_nodes(srtpgate_binary, tmp_path):
    with harness.running() as started:
        yield start_two(srtpgate_binary, tmp_path, started)


def test_a_node_at_its_load_limit_sends_new_calls_to_the_other(srtpgate_binary, tmp_path, capsys):
    """Node A at its session limit (`--max-sessions 0`, as a node that is
    full): Kamailio's module sends `supports: [load limit]`, A answers
    `result: load limit`, and the module tries B; no call fails, every call
    is on B, and A counts each refusal."""
    with harness.running() as started:
        (a, b), kam, sip = start_two(srtpgate_binary, tmp_path, started, extra_a=("--max-sessions", "0"))
        calls = 10
        results = [one_call(sip, [a, b]) for _ in range(calls)]
        bad = failures(results)
        assert not bad, "%d of %d calls failed with A at its limit:\n  %s" % (len(bad), calls, "\n  ".join(bad))
        assert all(r["node"] == "B" for r in results), [r["node"] for r in results]
        to_a = sum(kamailio_node_of(r["call_id"], [a, b]) is a for r in results)
        refused = a.metrics().get('srtpgate_ng_load_limited_total{limit="sessions"}', 0)
        assert to_a > 0, "no Call-ID hashed to A: the case did not happen"
        assert refused == to_a, "A refused %d offers; %d calls hashed to it" % (refused, to_a)
        assert a.counts()[3] == 0 and not a.calls()
        wait_idle(b)
        with capsys.disabled():
            print("\nload limit: %d calls, %d hashed to A (at its limit) and answered 'load limit', all on B"
                  % (calls, to_a))


def test_two_nodes_split_and_failover(two_nodes, capsys):
    (a, b), kam, sip = two_nodes
    t_start = time.monotonic()
    try:
        summary = _run(a, b, kam, sip, t_start)
    except BaseException:
        print("kamailio log tail:\n" + kam.output(4000), file=sys.stderr)
        raise
    with capsys.disabled():   # shown without -s too
        print("\n".join(summary))


def _run(a, b, kam, sip, t_start):
    """The calls and checks; returns the summary lines."""
    nodes = [a, b]
    base = {nd.name: nd.counts() for nd in nodes}

    # --- phase 1: 100 calls over both nodes -----------------------------------
    t1 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(PARALLEL) as pool:
        results = list(pool.map(lambda _: one_call(sip, nodes), range(CALLS)))
    phase1 = time.monotonic() - t1
    bad = failures(results)
    assert not bad, "%d of %d calls failed:\n  %s" % (len(bad), CALLS, "\n  ".join(bad[:10]))

    per_node = {nd.name: sum(r["node"] == nd.name for r in results) for nd in nodes}
    hashed = sum(r["node"] == kamailio_node_of(r["call_id"], nodes).name for r in results)
    for nd in nodes:
        wait_idle(nd)
    after1 = {nd.name: nd.counts() for nd in nodes}
    for nd in nodes:
        off, ans, dele, _ = (x - y for x, y in zip(after1[nd.name], base[nd.name]))
        assert off == ans == dele == per_node[nd.name], (
            "node %s: %d offers, %d answers, %d deletes for the %d calls it had: "
            "a call's commands went to different nodes" % (nd.name, off, ans, dele, per_node[nd.name]))
        assert per_node[nd.name] >= CALLS // 4, "uneven split: %s" % per_node

    # --- phase 2: node A stopped, 20 calls --------------------------------------
    log_mark = len(kam.output(tail=10 ** 9))
    a.proc.stop()
    assert not a.proc.alive()
    t2 = time.monotonic()
    results2 = [one_call(sip, [b]) for _ in range(CALLS_AFTER_STOP)]
    phase2 = time.monotonic() - t2
    bad = failures(results2)
    assert not bad, "%d of %d calls after stopping A failed:\n  %s" % (
        len(bad), CALLS_AFTER_STOP, "\n  ".join(bad[:10]))
    wait_idle(b)
    after2 = b.counts()
    off, ans, dele, _ = (x - y for x, y in zip(after2, after1["B"]))
    assert off == ans == dele == CALLS_AFTER_STOP, (
        "node B after A stopped: %d offers, %d answers, %d deletes for %d calls"
        % (off, ans, dele, CALLS_AFTER_STOP))

    # What Kamailio said about A meanwhile, and which calls it tried on A first.
    log2 = kam.output(tail=10 ** 9)[log_mark:]
    a_sock = "udp:%s:%d" % a.ng
    a_errors = [l for l in log2.splitlines() if a_sock in l]
    secs = [r["seconds"] for r in results2]
    setup1 = [r["seconds"] for r in results]

    out = []
    out.append("\n=== two nodes, one rtpengine set ===")
    out.append("phase 1: %d calls (%d at a time) in %.1f s: node A %d, node B %d "
               "(%d of %d on the node Kamailio's Call-ID hash predicts); INVITE-to-ACK median %.0f ms"
               % (CALLS, PARALLEL, phase1, per_node["A"], per_node["B"], hashed, CALLS,
                  statistics.median(setup1) * 1000))
    out.append("         per node offers/answers/deletes: A %s, B %s"
               % tuple("%d/%d/%d" % tuple(x - y for x, y in zip(after1[n][:3], base[n][:3])) for n in "AB"))
    out.append("phase 2: node A stopped; %d calls one at a time in %.1f s, all on B "
               "(B offers/answers/deletes +%d/+%d/+%d)" % (CALLS_AFTER_STOP, phase2, off, ans, dele))
    out.append("         INVITE-to-ACK: first call after the stop %.0f ms (its Call-ID hashes to %s), "
               "median %.0f ms, max %.0f ms (call %d)"
               % (secs[0] * 1000, kamailio_node_of(results2[0]["call_id"], nodes).name,
                  statistics.median(secs) * 1000, max(secs) * 1000, secs.index(max(secs)) + 1))
    to_a = [i for i, r in enumerate(results2) if kamailio_node_of(r["call_id"], nodes) is a]
    if to_a:
        out.append("         first call whose Call-ID hashes to A (the one that finds A dead): "
                   "call %d, INVITE-to-ACK %.0f ms; all such calls: %s"
                   % (to_a[0] + 1, secs[to_a[0]] * 1000, ["#%d %.0f ms" % (i + 1, secs[i] * 1000) for i in to_a]))
    out.append("         kamailio log lines naming A after the stop: %d" % len(a_errors))
    for l in a_errors[:6]:
        out.append("           " + l.strip()[:200])
    out.append("total %.1f s" % (time.monotonic() - t_start))
    return out
