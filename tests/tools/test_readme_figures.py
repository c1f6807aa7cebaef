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


def test_the_readme_quotes_the_demo_as_its_recorded_run_printed_it():
    line = readme_figures.demo_line(str(REPO / readme_figures.DEMO))
    assert line in (REPO / "README.md").read_text(), line


def test_the_demo_section_of_the_performance_page_is_the_same_run():
    performance = (REPO / "docs" / "performance.md").read_text()
    assert readme_figures.DEMO_COMMAND in performance
    for line in readme_figures.demo_table(str(REPO / readme_figures.DEMO)):
        assert line in performance, line


def test_the_recorded_demo_run_is_the_command_the_pages_name():
    import json
    record = json.loads((REPO / readme_figures.DEMO).read_text())
    assert record["command"] == readme_figures.DEMO_COMMAND
    stock, per_device = (run["epoch_samples_per_s"] for run in record["runs"])
    assert record["pair_ratios"] == [fast / slow for fast, slow in zip(per_device, stock)]
