"""Docs that cannot go stale: the extras table is setup.cfg's, no page states a count of
tests (a count is true for one commit; the README gives the command that counts), and the
release is stated as it exists in every clone: by version and changelog, not by a git tag
(a tag made in one clone does not travel with a branch)."""

import configparser
import re

import pytest
from paths import REPO

import mxpatch_bind

INSTALL_PAGE = REPO / "docs" / "install.rst"
PAGES = [REPO / "README.md", REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.rst")),
         *sorted((REPO / "docs").glob("*.md"))]
# pytest's summary words after a number: "2,033 passed", "524 tests were collected", ...
TEST_COUNT = re.compile(r"\b\d[\d,]*\s+(?:tests?\s+)?(?:were\s+)?(?:passed|failed|skipped|"
                        r"xfailed|xpassed|deselected|selected|collected)\b")


def extras_in_setup_cfg():
    """``{extra: [requirement, ...]}`` as setup.cfg declares them."""
    config = configparser.ConfigParser()
    config.read(REPO / "setup.cfg")
    return {extra: value.split() for extra, value in config["options.extras_require"].items()}


def extras_on_the_install_page():
    """``{extra: [requirement, ...]}`` from the list-table under "Extras": the literals of each
    row's first two cells (the extra, then what it installs)."""
    page = INSTALL_PAGE.read_text()
    table = page[page.index("\nExtras\n"):page.index("\nSupported Python versions\n")]
    extras = {}
    for row in table.split("\n   * - ")[2:]:  # after the text before it, and the header row
        name, installs = row.split("\n     - ")[:2]
        extras[name.strip("`")] = re.findall(r"``([^`]+)``", installs)
    return extras


def test_the_install_pages_extras_table_installs_exactly_what_setup_cfg_declares():
    assert extras_on_the_install_page() == extras_in_setup_cfg()


def test_the_table_reader_sees_a_requirement_left_out():
    declared = extras_in_setup_cfg()
    assert "fissix>=21.11" in declared["migrate"] and "cython" in declared["migrate"]
    assert len(declared["test"]) > 3  # the table once named 3 of them


@pytest.mark.parametrize("page", PAGES, ids=lambda path: path.name)
def test_no_page_states_a_count_of_tests(page):
    assert TEST_COUNT.findall(page.read_text()) == []


def test_the_count_pattern_finds_the_counts_that_went_stale():
    stale = ("all 524 tests were collected; the same 213 passed; 2,033 passed, 15 Horovod "
             "tests skipped where Horovod is not built, 1 xfailed; 1,919 tests collected")
    assert TEST_COUNT.findall(stale) == ["524 tests were collected", "213 passed",
                                         "2,033 passed", "1 xfailed",
                                         "1,919 tests collected"]


def test_the_newest_release_in_the_changelog_is_the_packages_version():
    releases = re.findall(r"^## \[(\d[^\]]*)\] - \d{4}-\d{2}-\d{2}$",
                          (REPO / "CHANGELOG.md").read_text(), re.MULTILINE)
    assert releases[0] == mxpatch_bind.__version__


def test_the_changelog_states_releases_by_version_not_by_a_tag_a_clone_lacks():
    assert re.findall(r"\btag(?:ged)?\b[^.\n]*`v\d", (REPO / "CHANGELOG.md").read_text()) == []
