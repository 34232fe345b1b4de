"""pytest plugin of `cargo xtask test`: each test's outcome as one JSON line in the file that
TFCLUSTER_TALLY names, so the test command counts what pytest ran (its closing line, its
floors, the skips it allows) from pytest's own reports rather than from its terminal text.

A test is "failed" when any of its phases (setup, call, teardown) failed, "skipped" when it
was skipped (xfail included) and did not fail, else "passed". A module that does not collect
is one failed entry under its own node id.
"""

import json
import os

_outcomes = {}
# A test's outcome is the worst of its phases'.
_RANK = {"passed": 0, "skipped": 1, "failed": 2}


def _record(nodeid, outcome):
    if nodeid not in _outcomes or _RANK[outcome] > _RANK[_outcomes[nodeid]]:
        _outcomes[nodeid] = outcome


def pytest_runtest_logreport(report):
    if report.failed:
        _record(report.nodeid, "failed")
    elif report.skipped:
        _record(report.nodeid, "skipped")
    else:
        _record(report.nodeid, "passed")


def pytest_collectreport(report):
    if report.failed:
        _record(report.nodeid or "<collection>", "failed")


def pytest_sessionfinish(session, exitstatus):
    path = os.environ.get("TFCLUSTER_TALLY")
    if not path:
        return
    with open(path, "w", encoding="utf-8") as out:
        for nodeid, outcome in _outcomes.items():
            out.write(json.dumps({"test": nodeid, "outcome": outcome}) + "\n")
