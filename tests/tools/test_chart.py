"""The benchmark chart is readable at the documentation's page width: legends as large as
the axis labels, and no legend over a bar or a line (docs/performance.md shows it)."""

import json

import pytest

from benchmarks import chart

pytest.importorskip("matplotlib")  # the plot extra

RESULTS = {
    "variable": {"rows": [{"mode": "(a) stock", "vs_stock": 1.0, "serial_ideal": 1.0,
                           "parallel_ideal": 1.0},
                          {"mode": "(b) per-device", "vs_stock": 1.4, "serial_ideal": 1.7,
                           "parallel_ideal": 1.5}]},
    "reshape": {"rows": [{"scenario": scenario, "strategy": strategy, "ms_per_change": ms}
                         for scenario, scale in (("never-seen", 1.0), ("recurring", 0.1))
                         for strategy, ms in (("fork rebind", 1.3 * scale),
                                              ("per-device reshape", 0.9 * scale))]},
    "memory": {"rows": [{"configuration": name, "trace": [(step, (100 + growth * step) * 2 ** 20)
                                                          for step in range(0, 1001, 100)]}
                        for name, growth in (("stock, unbounded", 0.1),
                                             ("per-device, bound at largest", 0.003),
                                             ("per-device, bound small, grown", 0.004),
                                             ("per-device, unbounded", 0.2),
                                             ("per-device, cap 8", 0.002),
                                             ("stock, cap 16 set after import", 0.01),
                                             ("stock, oneDNN off", 0.0),
                                             ("per-device, bound at largest, fixed mmap", 0.0),
                                             ("per-device, grown, fixed mmap", 0.001))]},
}


@pytest.fixture(scope="module")
def figure(tmp_path_factory):
    out = tmp_path_factory.mktemp("results")
    for name, result in RESULTS.items():
        (out / (name + ".json")).write_text(json.dumps(result))
    figure = chart.figure_of(str(out))
    figure.canvas.draw()
    return figure


def test_every_legend_is_as_large_as_the_axis_labels(figure):
    for axis in figure.axes:
        label_size = axis.yaxis.label.get_fontsize()
        sizes = [text.get_fontsize() for text in axis.get_legend().get_texts()]
        assert sizes and min(sizes) >= label_size, axis.get_title()


def test_no_legend_covers_a_bar_a_line_or_the_plot(figure):
    renderer = figure.canvas.get_renderer()
    for axis in figure.axes:
        legend = axis.get_legend().get_window_extent(renderer)
        assert not legend.overlaps(axis.get_window_extent(renderer)), axis.get_title()
        for other in figure.axes:
            if other is not axis:
                assert not legend.overlaps(other.get_window_extent(renderer))


def test_no_legend_covers_its_x_label_and_every_label_is_inside_the_figure(figure):
    renderer = figure.canvas.get_renderer()
    page = figure.bbox
    for axis in figure.axes:
        legend = axis.get_legend().get_window_extent(renderer)
        for label in (axis.xaxis.label, axis.yaxis.label):
            if not label.get_text():
                continue
            extent = label.get_window_extent(renderer)
            assert not legend.overlaps(extent), (axis.get_title(), label.get_text())
            assert (page.x0 <= extent.x0 and extent.x1 <= page.x1 and page.y0 <= extent.y0
                    and extent.y1 <= page.y1), (axis.get_title(), label.get_text())


def test_bars_are_named_in_words_not_letters_and_carry_their_figures(figure):
    variable, reshape = figure.axes[0], figure.axes[1]
    names = [label.get_text() for label in variable.get_xticklabels()]
    assert names == ["stock,\npadded", "per device,\narrival"]
    texts = [text.get_text() for text in variable.texts]
    assert texts == ["1.00\u00d7", "1.40\u00d7"]
    assert sorted(text.get_text() for text in reshape.texts) == ["0.09", "0.13", "0.9", "1.3"]


def test_every_panel_names_its_unit(figure):
    assert [axis.get_ylabel() for axis in figure.axes] == [
        "steps/s, \u00d7 stock padding", "ms per change of\nboth devices' shapes",
        "resident memory, MB"]


def test_the_memory_legend_names_the_growing_configurations_and_counts_the_rest(figure):
    entries = [text.get_text() for text in figure.axes[2].get_legend().get_texts()]
    assert sorted(entries) == ["7 capped or oneDNN-off configurations", "per-device, unbounded",
                               "stock, unbounded"]
