"""The sample-to-device planner: which samples go to which device, at what size (private).

It sees only sample sizes (an ``(n, axes)`` int array), never the samples, so an epoch is
planned without decoding anything. It imports numpy only.
"""

from typing import NamedTuple, Tuple

import numpy as np

__all__ = ["BatchPlan", "PaddingStats", "plan_epoch", "part_of", "padding_stats", "round_up"]


class PaddingStats(NamedTuple):
    """Pixel counts of one epoch's batches, as returned by :meth:`PerDeviceIter.padding_stats`.

    A pixel is one position of a sample's size axes (for images: one spatial
    position; channels are not counted, every sample has the same number).

    Attributes
    ----------
    real_pixels : int
        Pixels of the dataset's samples, each counted once.
    padding_pixels : int
        Pixels added so that every sample on a device fills that device's
        shape, rounding included.
    filler_pixels : int
        Pixels of the filler samples that complete the last batch.
    device_pixels : tuple of int
        Per device, the pixels of all its padded arrays in the epoch: the work
        each device does.
    step_pixels : int
        Sum over batches of the busiest device's pixels: what synchronous
        steps wait for when the devices run in parallel.
    rounding_pixels : int
        The part of :attr:`padding_pixels` that ``pad_to_multiple`` added (0 without it).
    distinct_shapes : int
        Distinct per-device shapes ``(count,) + size`` in the epoch: each is a
        reshape the executors see at least once (a shape seen before hits the
        executor cache).

    Examples
    --------
    >>> stats = PaddingStats(real_pixels=60, padding_pixels=20, filler_pixels=0,
    ...                      device_pixels=(40, 40), step_pixels=40)
    >>> stats.total_pixels, stats.padding_fraction
    (80, 0.25)
    """

    real_pixels: int
    padding_pixels: int
    filler_pixels: int
    device_pixels: Tuple[int, ...]
    step_pixels: int
    rounding_pixels: int = 0
    distinct_shapes: int = 0

    @property
    def total_pixels(self):
        """All pixels the devices process: real, padding and filler."""
        return sum(self.device_pixels)

    @property
    def padding_fraction(self):
        """Share of :attr:`total_pixels` that is padding."""
        return self.padding_pixels / self.total_pixels


class BatchPlan(NamedTuple):
    """Which samples go to which device in one batch, and each device's padded size."""

    device_indices: Tuple[np.ndarray, ...]
    device_sizes: Tuple[Tuple[int, ...], ...]
    pad: int


def round_up(size, multiple):
    """``size`` with every extent rounded up to a multiple of ``multiple``."""
    return tuple(-(-int(extent) // multiple) * multiple for extent in size)


def _chunks(items, size):
    """Consecutive runs of ``size`` items; the last may be shorter."""
    return [items[start:start + size] for start in range(0, len(items), size)]


def _padded_pixels(groups, sizes):
    """Pixels of the groups once each is padded to its own largest extent."""
    return sum(len(group) * int(np.prod(sizes[group].max(axis=0))) for group in groups)


def _sorted_groups(indices, sizes, primary_axis, group_size):
    """Sort by one size axis (ties by the others) and cut into runs of ``group_size``."""
    others = [sizes[indices, axis] for axis in range(sizes.shape[1]) if axis != primary_axis]
    # np.lexsort sorts by its last key first; it is stable, so ties keep arrival order.
    order = indices[np.lexsort(others[::-1] + [sizes[indices, primary_axis]])]
    return _chunks(order, group_size)


def _best_fit_groups(indices, sizes, group_size):
    """Seed each group with the largest sample left, then add those that grow its box least."""
    remaining = np.asarray(indices)
    groups = []
    while len(remaining):
        areas = sizes[remaining].prod(axis=1)
        seed = int(np.argmax(areas))
        box = sizes[remaining[seed]]
        group = [remaining[seed]]
        remaining = np.delete(remaining, seed)
        while len(group) < group_size and len(remaining):
            candidates = sizes[remaining]
            grown = np.maximum(box, candidates).prod(axis=1)
            # Among equally cheap samples take the largest: the small ones still fit later groups.
            pick = int(np.lexsort((-candidates.prod(axis=1), grown))[0])
            box = np.maximum(box, candidates[pick])
            group.append(remaining[pick])
            remaining = np.delete(remaining, pick)
        groups.append(np.array(group))
    return groups


def _group_by_size(indices, sizes, group_size):
    """Split ``indices`` into groups of similar size, keeping whichever split pads least.

    Sorting along one axis is best for small windows, best-fit for large
    ones (measured on random sizes); trying both costs little.
    """
    candidates = [_sorted_groups(indices, sizes, axis, group_size)
                  for axis in range(sizes.shape[1])]
    candidates.append(_best_fit_groups(indices, sizes, group_size))
    return min(candidates, key=lambda groups: _padded_pixels(groups, sizes))


def _device_work(groups, sizes, multiple):
    """Busiest device's padded pixels, then all devices' pixels: what a split is judged by."""
    work = [len(group) * int(np.prod(round_up(sizes[group].max(axis=0), multiple)))
            for group in groups]
    return max(work), sum(work)


def _best_cut(order, sizes, num_devices, multiple):
    """Cut ``order`` into ``num_devices`` contiguous runs (each >= 1) whose busiest is least.

    Dynamic programming over the cut points: exact for the given order.
    """
    count = len(order)
    # cost[i, j]: pixels of samples i..j-1 padded to their common (rounded) box.
    cost = np.zeros((count + 1, count + 1), dtype=np.int64)
    for start in range(count):
        box = sizes[order[start]]
        for stop in range(start + 1, count + 1):
            box = np.maximum(box, sizes[order[stop - 1]])
            cost[start, stop] = (stop - start) * int(np.prod(round_up(box, multiple)))
    inf = np.iinfo(np.int64).max
    # best[d, j]: least busiest-device pixels for the first j samples on d devices.
    best = np.full((num_devices + 1, count + 1), inf, dtype=np.int64)
    cut = np.zeros((num_devices + 1, count + 1), dtype=np.int64)
    best[0, 0] = 0
    for devices in range(1, num_devices + 1):
        for stop in range(devices, count - (num_devices - devices) + 1):
            for start in range(devices - 1, stop):
                if best[devices - 1, start] == inf:
                    continue
                worst = max(best[devices - 1, start], cost[start, stop])
                if worst < best[devices, stop]:
                    best[devices, stop], cut[devices, stop] = worst, start
    groups, stop = [], count
    for devices in range(num_devices, 0, -1):
        start = int(cut[devices, stop])
        groups.append(order[start:stop])
        stop = start
    return groups[::-1]


def _balanced_split(groups, sizes, num_devices, multiple):
    """Re-split one batch's samples across devices so that the busiest device pads least.

    Candidates: the batch's equal-count groups as they are (when it has one per
    device), and the best contiguous cut of the samples ordered largest first by
    pixels and by each size axis. Keeping the equal split as a candidate means a
    balanced batch never waits for more pixels than the equal one.
    """
    batch = np.concatenate(groups)
    keys = [sizes[batch].prod(axis=1)] + [sizes[batch, axis] for axis in range(sizes.shape[1])]
    candidates = [list(groups)] if len(groups) == num_devices else []
    for key in keys:
        order = batch[np.argsort(-key, kind="stable")]
        candidates.append(_best_cut(order, sizes, num_devices, multiple))
    return min(candidates, key=lambda split: _device_work(split, sizes, multiple))


def _fixed_batch(groups, num_devices, batch_per_device):
    """Fill a batch up to ``num_devices`` full groups with copies of its last real sample.

    Copies of the last real sample pad nothing: on its own device it is already
    there, elsewhere every sample is the same copy.
    """
    last = groups[-1][-1]
    groups = list(groups) + [[]] * (num_devices - len(groups))
    device_indices = tuple(
        np.concatenate([group, np.full(batch_per_device - len(group), last)]).astype(np.int64)
        for group in groups)
    return device_indices, num_devices * batch_per_device - sum(len(g) for g in groups)


def _balanced_batch(groups, sizes, num_devices, multiple):
    """Per-device counts that even out the padded work; filler only when samples < devices."""
    batch = np.concatenate(groups)
    if len(batch) >= num_devices:
        split = _balanced_split(groups, sizes, num_devices, multiple)
        return tuple(np.asarray(group, dtype=np.int64) for group in split), 0
    # Fewer samples than devices: one each, the last real sample repeated on the others.
    filler = num_devices - len(batch)
    groups = [np.array([index]) for index in batch] + [np.array([batch[-1]])] * filler
    return tuple(group.astype(np.int64) for group in groups), filler


def plan_epoch(order, sizes, *, num_devices, batch_per_device, grouping, group_window,
               balanced, multiple, rng):
    """Every batch of one epoch, from its sample ``order``; see ``PerDeviceIter`` for the policy."""
    batch_size = num_devices * batch_per_device
    num_samples = len(order)
    if grouping:
        window = group_window * batch_size
        groups = [group for start in range(0, num_samples, window)
                  for group in _group_by_size(order[start:start + window], sizes,
                                              batch_per_device)]
    else:
        groups = _chunks(order, batch_per_device)
    batches = _chunks(groups, num_devices)
    if rng is not None:
        # Grouped windows come out sorted by size; shuffle the batches so that
        # training does not see sizes in order. A short last batch stays last.
        num_full = num_samples // batch_size
        batches[:num_full] = [batches[i] for i in rng.permutation(num_full)]
    plans = []
    for batch in batches:
        if balanced:
            device_indices, pad = _balanced_batch(batch, sizes, num_devices, multiple)
        else:
            device_indices, pad = _fixed_batch(batch, num_devices, batch_per_device)
        device_sizes = tuple(round_up(sizes[indices].max(axis=0), multiple)
                             for indices in device_indices)
        plans.append(BatchPlan(device_indices, device_sizes, pad))
    return plans


def padding_stats(plans, sizes, num_devices, multiple):
    """Count real, padding, filler and rounding pixels and distinct shapes of ``plans``."""
    areas = sizes.prod(axis=1)
    device_pixels = np.zeros(num_devices, dtype=np.int64)
    filler_pixels = step_pixels = rounding_pixels = 0
    shapes = set()
    for plan in plans:
        batch_pixels = [len(indices) * int(np.prod(size))
                        for indices, size in zip(plan.device_indices, plan.device_sizes)]
        device_pixels += batch_pixels
        step_pixels += max(batch_pixels)
        flat = np.concatenate(plan.device_indices)
        filler_pixels += int(areas[flat[len(flat) - plan.pad:]].sum()) if plan.pad else 0
        for indices, size in zip(plan.device_indices, plan.device_sizes):
            unrounded = int(np.prod(sizes[indices].max(axis=0)))
            rounding_pixels += len(indices) * (int(np.prod(size)) - unrounded)
            shapes.add((len(indices),) + tuple(size))
    real_pixels = int(areas.sum())
    return PaddingStats(real_pixels=real_pixels,
                        padding_pixels=int(device_pixels.sum()) - real_pixels - filler_pixels,
                        filler_pixels=filler_pixels,
                        device_pixels=tuple(int(pixels) for pixels in device_pixels),
                        step_pixels=step_pixels, rounding_pixels=rounding_pixels,
                        distinct_shapes=len(shapes))


def part_of(plan, num_parts, part_index):
    """Part ``part_index`` of an epoch's batches shared by ``num_parts`` workers.

    Every ``num_parts``-th batch from ``part_index``, and as many for every part: a
    ``dist_sync`` job's workers then read disjoint batches and take the same number of steps
    (each step waits for all of them). The last ``len(plan) % num_parts`` batches are left out
    of the epoch. Round robin, not one block each: with grouping, neighbouring batches have
    similar sizes, so the workers of one step do similar work.
    """
    per_part = len(plan) // num_parts
    return plan[part_index:per_part * num_parts:num_parts]

