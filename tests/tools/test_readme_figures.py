"""The README's benchmark figures are the chart's: both come from the JSON in
docs/_static/bench (one run of ``python -m benchmarks variable reshape memory``)."""

from benchmarks import readme_figures
from paths import REPO


def test_the_readme_states_the_figures_of_the_run_the_chart_is_drawn_from():
    readme = (REPO / "README.md").read_text()
    for line in readme_figures.lines(str(REPO / readme_figures.RESULTS)):
        assert line in readme, line


def test_the_tables_under_the_chart_are_the_same_runs():
    performance = (REPO / "docs" / "performance.md").read_text()
    for line in readme_figures.tables(str(REPO / readme_figures.RESULTS)):
        assert line in performance, line


def test_the_chart_and_the_readme_name_the_same_results():
    performance = (REPO / "docs" / "performance.md").read_text()
    command = ("python -m benchmarks variable reshape memory --out docs/_static/bench "
               "--plot docs/_static/bench.png")
    assert command in performance
    assert command in (REPO / "README.md").read_text()
