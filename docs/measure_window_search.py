"""How far the balanced split is from what a search over a whole grouping window finds.

Run from a checkout: ``PYTHONPATH=. python docs/measure_window_search.py``. The balanced
benchmark's sizes (``benchmarks/balanced.py``: 160 images of 32-160 px per side, 2 devices,
2 images per device, ``group_window=8``), planned three ways; each line gives the summed
busiest-device pixels of the epoch (what synchronous steps wait for) and the planning time:
(d) equal counts, (e) ``balanced=True`` (each batch's own samples re-split), and a local
search that also swaps samples between the batches of a window, keeping every swap that
lowers the two batches' cost. The search runs twice: with each batch's cost its balanced
split's, and with its best split into equal counts, which tells how much of what it finds
needs uneven counts at all (docs/performance.md, section 7). Last, on 1,600 sizes, how many
busiest-device pixels the balanced split saves at each grouping window and images per device.
"""

import itertools
import random
import time

import numpy as np

from benchmarks.variable import SIZES
from mxpatch_bind.data import planning

SAMPLES, DEVICES, PER_DEVICE, WINDOW = 160, 2, 2, 8


def plan(sizes, balanced):
    return planning.plan_epoch(np.arange(len(sizes)), sizes, num_devices=DEVICES,
                               batch_per_device=PER_DEVICE, grouping=True,
                               group_window=WINDOW, balanced=balanced, multiple=1, rng=None)


def balanced_busiest(sizes, batch):
    split = planning._balanced_split([np.array(batch)], sizes, DEVICES, 1)
    return planning._device_work(split, sizes, 1)[0]


def equal_busiest(sizes, batch):
    """The busiest device of the best split of ``batch`` into two devices' equal counts."""
    first, rest = batch[0], list(batch[1:])
    splits = ([first] + list(mates) for mates in itertools.combinations(rest, PER_DEVICE - 1))
    return min(planning._device_work([np.array(one), np.setdiff1d(batch, one)], sizes, 1)[0]
               for one in splits)


def improve_window(sizes, batches, busiest):
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
    for name, balanced, busiest in (("window search, balanced", True, balanced_busiest),
                                    ("window search, equal counts", False, equal_busiest)):
        start = time.perf_counter()
        plans = plan(sizes, balanced)
        results[name] = sum(improve_window(sizes, [list(np.concatenate(p.device_indices))
                                                   for p in plans[first:first + WINDOW]],
                                           busiest)
                            for first in range(0, len(plans), WINDOW))
        elapsed = time.perf_counter() - start
        print("%-28s %9d busiest-device pixels, planned in %6.0f ms"
              % (name, results[name], 1e3 * elapsed))
    equal = results["(d) equal counts"]
    print("(d) over: (e) %.3f; window search, balanced %.3f; window search, equal counts %.3f"
          % tuple(equal / results[name] for name in list(results)[1:]))


def room(count=1600):
    """How much the balanced split saves, by grouping window and images per device."""
    rng = random.Random(0)
    sizes = np.array([(rng.randint(*SIZES), rng.randint(*SIZES)) for _ in range(count)])
    print("\n%d sizes; summed busiest-device pixels, equal counts -> balanced:" % count)
    for per_device in (2, 4):
        for window in (1, 2, 4, 8):
            pixels = [planning.padding_stats(
                planning.plan_epoch(np.arange(count), sizes, num_devices=DEVICES,
                                    batch_per_device=per_device, grouping=True,
                                    group_window=window, balanced=balanced, multiple=1,
                                    rng=None), sizes, DEVICES, 1).step_pixels
                      for balanced in (False, True)]
            print("  %d per device, window %d: %10d -> %10d (%.1f %% fewer)"
                  % (per_device, window, pixels[0], pixels[1],
                     100 * (1 - pixels[1] / pixels[0])))


if __name__ == "__main__":
    main()
    room()
