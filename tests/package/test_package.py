"""The Debian package on this machine: scripts/package.sh built it (the test
command runs that first); it installs with dpkg, its unit passes
`systemd-analyze verify`, the daemon started from the unit's ExecStart line,
as the package's user, with the unit's open-file limit and the packaged
configuration (edited to loopback), relays calls with the codec plugins from
the package's directory; `dpkg --purge` leaves nothing of it behind.

It changes the machine (a package, a system user) and undoes it: it runs only
where the test command asks for it (SRTPGATE_PACKAGE_TEST=1), as root."""

import glob
import json
import os
import pwd
import re
import resource
import shlex
import subprocess
import tempfile
import time

import pytest

from e2e.ng_stub import ng_request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONF = "/etc/srtpgate/srtpgate.toml"
PACKAGES = ["srtpgate-codec-g729", "srtpgate"]


def debs():
    found = sorted(glob.glob(os.path.join(ROOT, "target/debian/srtpgate*_amd64.deb")))
    return [d for d in found if not d.endswith(".ddeb")]


def run(*cmd, check=True, **kw):
    return subprocess.run(cmd, check=check, capture_output=True, text=True, **kw)


def installed(name):
    r = run("dpkg-query", "-W", "-f=${Status}", name, check=False)
    return r.returncode == 0 and "installed" in r.stdout and "not-installed" not in r.stdout


def user_exists(name):
    try:
        pwd.getpwnam(name)
        return True
    except KeyError:
        return False


@pytest.fixture
def package():
    if os.environ.get("SRTPGATE_PACKAGE_TEST") != "1":
        pytest.skip("installs a package on this machine: SRTPGATE_PACKAGE_TEST=1 (scripts/test.sh sets it)")
    if os.geteuid() != 0:
        pytest.skip("dpkg -i needs root")
    files = debs()
    assert len(files) == 2, f"scripts/package.sh builds two packages; target/debian has {files}"
    for p in PACKAGES:
        assert not installed(p), f"{p} is installed already: this test installs and purges it"
    assert not user_exists("srtpgate"), "a user srtpgate exists already"
    try:
        r = run("dpkg", "-i", *files, check=False)
        assert r.returncode == 0, f"dpkg -i:\n{r.stdout}\n{r.stderr}"
        listed = run("dpkg", "-L", *PACKAGES).stdout.split("\n")
        yield [p for p in listed if p.startswith("/")]
    finally:
        run("dpkg", "--purge", *PACKAGES, check=False)


def test_the_package_installs_runs_a_call_and_purges_cleanly(package):
    files = package
    units = [f for f in files if f.endswith("/systemd/system/srtpgate.service")]
    assert len(units) == 1, files
    unit_path = units[0]
    for want in [
        "/usr/bin/srtpgate",
        CONF,
        "/usr/lib/sysctl.d/60-srtpgate.conf",
        "/usr/lib/srtpgate/codecs/libsrtpgate_plugin_opus.so",
        "/usr/lib/srtpgate/codecs/libsrtpgate_plugin_g729.so",
        "/usr/share/man/man1/srtpgate-serve.1.gz",
    ]:
        assert want in files and os.path.exists(want), f"{want} not installed"
    # Nothing only the benchmarks need.
    assert not any("srtpgate-bench" in f for f in files), files
    assert user_exists("srtpgate"), "postinst made no system user"
    conffiles = run("dpkg-query", "-W", "-f=${Conffiles}", "srtpgate").stdout
    assert CONF in conffiles, conffiles

    verify = run("systemd-analyze", "verify", unit_path, check=False)
    assert verify.returncode == 0 and not verify.stderr.strip(), f"systemd-analyze verify:\n{verify.stderr}"

    # The unit's ExecStart and open-file limit, as systemd would run them.
    unit = open(unit_path).read()
    exec_start = re.search(r"^ExecStart=(.+)$", unit, re.M).group(1)
    nofile = int(re.search(r"^LimitNOFILE=(\d+)$", unit, re.M).group(1))
    assert re.search(r"^User=srtpgate$", unit, re.M)
    # The packaged configuration, edited to this machine's loopback and
    # ports no other test uses.
    with tempfile.TemporaryDirectory() as tmp:
        ng_port, http_port = 23_791, 23_792
        conf = open(CONF).read()
        conf = re.sub(r"^listen_ng = .*$", f'listen_ng = "127.0.0.1:{ng_port}"', conf, flags=re.M)
        conf = re.sub(r"^listen_http = .*$", f'listen_http = "127.0.0.1:{http_port}"', conf, flags=re.M)
        conf = re.sub(r"^interface = .*$", 'interface = ["127.0.0.1"]', conf, count=1, flags=re.M)
        conf = re.sub(r"^port_min = .*$", "port_min = 45000", conf, flags=re.M)
        conf = re.sub(r"^port_max = .*$", "port_max = 45999", conf, flags=re.M)
        with open(CONF, "w") as f:
            f.write(conf)
        log = open(os.path.join(tmp, "srtpgate.log"), "w")

        # As far as this machine's hard limit lets a process raise it.
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        files_limit = nofile if hard == resource.RLIM_INFINITY else min(nofile, hard)

        def limits():
            resource.setrlimit(resource.RLIMIT_NOFILE, (files_limit, files_limit))

        proc = subprocess.Popen(
            shlex.split(exec_start),
            user="srtpgate",
            group="srtpgate",
            extra_groups=[],
            stdout=log,
            stderr=subprocess.STDOUT,
            preexec_fn=limits,
        )
        try:
            deadline = time.time() + 20
            pong = None
            while time.time() < deadline and proc.poll() is None:
                try:
                    pong = ng_request(("127.0.0.1", ng_port), {"command": "ping"}, timeout=0.5)
                    break
                except OSError:
                    time.sleep(0.2)
            text = open(os.path.join(tmp, "srtpgate.log")).read()
            assert pong is not None and pong.get("result") == "pong", f"no pong; daemon log:\n{text}"
            # The plugins from the package's directory, with no flag.
            assert "opus" in text.lower() and "g729" in text.lower(), text
            user = run("ps", "-o", "user=", "-p", str(proc.pid)).stdout.strip()
            assert user == "srtpgate", user
            out = os.path.join(tmp, "loadgen.json")
            bench = os.path.join(ROOT, "target/release/srtpgate-bench")
            r = run(bench, "loadgen", "--ng", f"127.0.0.1:{ng_port}", "--calls", "4", "--duration", "2",
                    "--json", out, "--quiet", check=False)
            assert r.returncode == 0, f"loadgen:\n{r.stdout}\n{r.stderr}"
            res = json.load(open(out))
            assert res["packets_received"] > 0 and res["lost"] == 0 and res["auth_failures"] == 0, res
        finally:
            proc.terminate()
            proc.wait(timeout=10)

    r = run("dpkg", "--purge", *PACKAGES, check=False)
    assert r.returncode == 0, f"dpkg --purge:\n{r.stdout}\n{r.stderr}"
    left = [f for f in files if os.path.isfile(f) or (os.path.isdir(f) and "srtpgate" in f)]
    assert not left, f"left behind: {left}"
    assert not os.path.exists("/etc/srtpgate"), os.listdir("/etc/srtpgate")
    assert not user_exists("srtpgate"), "the system user stayed"
