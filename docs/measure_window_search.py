"""How far the balanced split is from what a search over a whole grouping window finds.

Run from a checkout: ``PYTHONPATH=. python docs/measure_window_search.py``. The balanced
benchmark's sizes (``benchmarks/balanced.py``: 160 images of 32-160 px per side, 2 devices,
2 images per device, ``group_window=8``), planned three ways; each line gives the summed
busiest-device pixels of the epoch (what synchronous steps wait for) and the planning time:
(d) equal counts, (e) ``balanced=True`` (each batch's own samples re-split), and a local
search that also swaps samples between the batches of a window, keeping every swap that
lowers the two batches' balanced cost (docs/performance.md, section 7).
"""

import random
import time

import numpy as np

from benchmarks.variable import SIZES
from mxpatch_bind import planning

SAMPLES, DEVICES, PER_DEVICE, WINDOW = 160, 2, 2, 8


def plan(sizes, balanced):
    return planning.plan_epoch(np.arange(len(sizes)), sizes, num_devices=DEVICES,
                               batch_per_device=PER_DEVICE, grouping=True,
                               group_window=WINDOW, balanced=balanced, multiple=1, rng=None)


def busiest(sizes, batch):
    split = planning._balanced_split([np.array(batch)], sizes, DEVICES, 1)
    return planning._device_work(split, sizes, 1)[0]


def improve_window(sizes, batches):
    """Swap samples between batches while some swap lowers the pair's busiest pixels."""
    costs = [busiest(sizes, batch) for batch in batches]
    improved = True
    while improved:
        improved = False
        for i in range(len(batches)):
            for j in range(i + 1, len(batches)):
                for a in range(len(batches[i])):
                    for b in range(len(batches[j])):
                        left, right = list(batches[i]), list(batches[j])
                        left[a], right[b] = right[b], left[a]
                        pair = busiest(sizes, left), busiest(sizes, right)
                        if sum(pair) < costs[i] + costs[j]:
                            batches[i], batches[j] = left, right
                            costs[i], costs[j] = pair
                            improved = True
    return sum(costs)


def main():
    rng = random.Random(0)
    sizes = np.array([(rng.randint(*SIZES), rng.randint(*SIZES)) for _ in range(SAMPLES)])
    results = {}
    for name, balanced in (("(d) equal counts", False), ("(e) balanced", True)):
        start = time.perf_counter()
        plans = plan(sizes, balanced)
        elapsed = time.perf_counter() - start
        step_pixels = planning.padding_stats(plans, sizes, DEVICES, 1).step_pixels
        results[name] = step_pixels
        print("%-28s %9d busiest-device pixels, planned in %6.0f ms"
              % (name, step_pixels, 1e3 * elapsed))
    start = time.perf_counter()
    plans = plan(sizes, True)
    searched = sum(improve_window(sizes, [list(np.concatenate(p.device_indices))
                                          for p in plans[first:first + WINDOW]])
                   for first in range(0, len(plans), WINDOW))
    elapsed = time.perf_counter() - start
    print("%-28s %9d busiest-device pixels, planned in %6.0f ms"
          % ("window search", searched, 1e3 * elapsed))
    print("(d) / window search: %.3f; (d) / (e): %.3f"
          % (results["(d) equal counts"] / searched,
             results["(d) equal counts"] / results["(e) balanced"]))


if __name__ == "__main__":
    main()
