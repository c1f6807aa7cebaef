"""Edges of ``migrate.environment`` (issue 36, item 10): what the probe of this Python
reports gone (the first missing part of each dotted name, a submodule imported where an
attribute is missing), what is unknown rather than gone (a package not installed), what a
star import binds, the versions, and a probe that cannot run."""

import subprocess
import sys

import pytest

from mxpatch_bind.migrate import environment

# the probe itself, run every time (tests/conftest.py reuses its answers elsewhere)
pytestmark = pytest.mark.real_probe


def test_the_probe_names_the_first_missing_part_of_each_gone_name_and_no_unknown_one():
    found = environment.probe(
        ["time.clock", "time.time", "os.errno.ENOENT", "collections.Mapping",
         "no_such_package_for_mxpatch.a", "os.path.join", "json.decoder.JSONDecoder",
         "json.nosuch.deep", "time.clock", "xml.dom.minidom.no_such_name"],
        ["json", "no_such_package_for_mxpatch", "json"])
    python = "Python " + sys.version.split()[0]
    assert found == environment.Environment(
        gone={"collections.Mapping": "collections.Mapping", "json.nosuch.deep": "json.nosuch",
              "os.errno.ENOENT": "os.errno", "time.clock": "time.clock",
              # xml imports no submodule itself: the probe imports xml.dom, xml.dom.minidom
              "xml.dom.minidom.no_such_name": "xml.dom.minidom.no_such_name"},
        stars={"json": ["JSONDecodeError", "JSONDecoder", "JSONEncoder", "dump", "dumps",
                        "load", "loads"]},
        versions={"collections": python, "json": python, "os": python, "time": python,
                  "xml": python})


def test_nothing_asked_runs_no_probe(monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("a probe ran with nothing to ask")

    monkeypatch.setattr(subprocess, "run", refuse)
    assert environment.probe([], []) == environment.Environment()


def test_a_probe_that_cannot_run_knows_nothing_gone_and_says_why(monkeypatch):
    monkeypatch.setattr(sys, "executable", "/no/such/python")
    assert environment.probe(["time.clock"]) == environment.Environment(
        failure="the installed packages could not be inspected (FileNotFoundError)")


def test_star_modules_alone_are_probed():
    assert environment.probe([], ["json"]).stars == {
        "json": ["JSONDecodeError", "JSONDecoder", "JSONEncoder", "dump", "dumps", "load",
                 "loads"]}
