"""Network namespaces for the Python tests: moving the calling thread into
one while it makes its sockets (a socket stays in the namespace it was made
in), and the two-network rig of bench/netns/two-networks.sh."""

import contextlib
import ctypes
import os
import subprocess

CLONE_NEWNET = 0x40000000
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWO_NETWORKS = os.path.join(REPO, "bench", "netns", "two-networks.sh")
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd):
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        e = ctypes.get_errno()
        raise OSError(e, "setns: " + os.strerror(e))


@contextlib.contextmanager
def inside(ns):
    """The calling thread in network namespace `ns` (an `ip netns` name;
    None: where it is) for the block; back where it was after."""
    if ns is None:
        yield
        return
    back = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open("/var/run/netns/" + ns, os.O_RDONLY)
    try:
        _setns(target)
        yield
    finally:
        _setns(back)
        os.close(back)
        os.close(target)


def exec_in(ns, argv):
    """argv run in namespace `ns` (None: here)."""
    return list(argv) if ns is None else ["ip", "netns", "exec", ns] + list(argv)


@contextlib.contextmanager
def two_networks(name):
    """The two-network rig NAME-priv / NAME-relay / NAME-pub (see the
    script), torn down after the block. Raises RuntimeError with the reason
    where this machine cannot build it."""
    check = subprocess.run([TWO_NETWORKS, "check", name], capture_output=True, text=True)
    if check.returncode != 0:
        raise RuntimeError(check.stdout.strip() or check.stderr.strip())
    up = subprocess.run([TWO_NETWORKS, "up", name], capture_output=True, text=True)
    if up.returncode != 0:
        raise RuntimeError("rig up failed: " + up.stderr)
    try:
        yield {"priv": name + "-priv", "relay": name + "-relay", "pub": name + "-pub"}
    finally:
        subprocess.run([TWO_NETWORKS, "down", name], capture_output=True)


def two_networks_fixture(name, skip):
    """The body of a pytest fixture over the two-network rig NAME: yields
    its namespaces, tears it down after the module; where this machine
    cannot build it, calls skip(reason), which raises."""
    built = two_networks(name)
    try:
        ns = built.__enter__()
    except RuntimeError as e:
        skip("the two-network rig: %s" % e)
    try:
        yield ns
    finally:
        built.__exit__(None, None, None)
