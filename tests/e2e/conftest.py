"""Fixtures for the end-to-end tests: a relay (ng_stub.py or `srtpgate serve`)
and Kamailio with examples/kamailio/kamailio.cfg in front of it."""

import os
import subprocess
import sys

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import harness  # noqa: E402


def skip(reason):
    # Printed as well, so that the reason shows even without -rs.
    print("SKIP: " + reason, file=sys.stderr)
    pytest.skip(reason)


def srtpgate_bin():
    path = harness.srtpgate_path()
    if not os.access(path, os.X_OK):
        skip("%s not found (build it or set SRTPGATE_BIN)" % path)
    # An older build without the daemon is not a failure of this test.
    if subprocess.run([path, "serve", "--help"], capture_output=True, timeout=10).returncode != 0:
        skip("%s has no `serve` subcommand yet" % path)
    return path


@pytest.fixture(scope="session")
def srtpgate_binary():
    """Path of a `srtpgate` with `serve`; skips the test (saying why) without one."""
    return srtpgate_bin()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    setattr(item, "rep_" + rep.when, rep)


class Stack:
    """The processes of one test run and their addresses."""

    def __init__(self, kind, relay, relay_cfg, kamailio, sip):
        self.kind, self.relay, self.cfg, self.kamailio, self.sip = kind, relay, relay_cfg, kamailio, sip

    @property
    def ng(self):
        return self.cfg["ng"]

    def logs(self):
        return "\n\n".join(p.describe() for p in (self.relay, self.kamailio))


@pytest.fixture(scope="module", params=["stub", "srtpgate"])
def stack(request, tmp_path_factory):
    """kind "stub": signalling only, ng_stub.py relays no media.
    kind "srtpgate": the real daemon, media checked too."""
    if not harness.kamailio_path():
        skip("kamailio is not installed (apt-get install kamailio; it ships rtpengine.so)")
    kind = request.param
    binary = srtpgate_bin() if kind == "srtpgate" else None
    work = str(tmp_path_factory.mktemp("e2e-" + kind))
    relay, cfg = harness.start_relay(kind, work, binary)
    try:
        kam, sip = harness.start_kamailio(work, cfg["ng"])
    except Exception:
        relay.stop()
        raise
    st = Stack(kind, relay, cfg, kam, sip)
    yield st
    kam.stop()
    relay.stop()


@pytest.fixture(autouse=True)
def logs_on_failure(request):
    """Prints the relay's and Kamailio's output when a test fails."""
    yield
    rep = getattr(request.node, "rep_call", None)
    if rep is not None and rep.failed and "stack" in request.fixturenames:
        print(request.getfixturevalue("stack").logs(), file=sys.stderr)
