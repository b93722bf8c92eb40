"""A pytest plugin (`-p require_no_skips`, with tests/ on PYTHONPATH): where
SRTPGATE_REQUIRE names `pytest` (or `all`), as scripts/test.sh sets it on the
machine it installed everything on, a skipped test fails the run, listed
with its reason; elsewhere skips stay skips (run with -rs to see them)."""

import os

_skipped = []


def _required():
    needs = [n.strip() for n in os.environ.get("SRTPGATE_REQUIRE", "").split(",")]
    return "pytest" in needs or "all" in needs


def pytest_runtest_logreport(report):
    if report.skipped:
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        _skipped.append((report.nodeid, reason))


def pytest_sessionfinish(session, exitstatus):
    if _skipped and _required():
        lines = "\n".join(f"  {node}: {reason}" for node, reason in _skipped)
        print(f"\n{len(_skipped)} tests skipped where SRTPGATE_REQUIRE requires every one to run:\n{lines}")
        session.exitstatus = 1
