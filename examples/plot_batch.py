"""Draw how ``PerDeviceIter`` packs and pads one batch per device (docs/_static/data_batch.png).

Six detection samples of different sizes with their boxes, two devices, ``balanced=True``:
each column is one device's packed image array and label map. Padding is drawn hatched;
the box rows of -1 and the map's ignore value 255 are labelled; every panel has one scale.
Needs matplotlib (the ``plot`` extra)::

    python examples/plot_batch.py docs/_static/data_batch.png
"""

import sys

import numpy as np

from mxpatch_bind import Input, PerDeviceIter

SIZES = [(60, 90), (56, 80), (30, 40), (26, 44), (34, 30), (28, 36)]
IGNORE = 255


def samples(seed=0):
    """Images with one bright box each, their box lists and label maps (class 1 in the box)."""
    rng = np.random.default_rng(seed)
    out = []
    for height, width in SIZES:
        image = rng.uniform(0.3, 0.7, size=(3, height, width)).astype(np.float32)
        label = np.zeros((height, width), dtype=np.float32)
        boxes = []
        for _ in range(int(rng.integers(1, 4))):
            x1, y1 = int(rng.integers(0, width // 2)), int(rng.integers(0, height // 2))
            x2, y2 = x1 + width // 3, y1 + height // 3
            image[:, y1:y2, x1:x2] = 1.0
            label[y1:y2, x1:x2] = 1
            boxes.append([x1, y1, x2, y2, 1])
        out.append((image, label, np.array(boxes, dtype=np.float32)))
    return out


def packed_batch():
    it = PerDeviceIter(samples(), num_devices=2, batch_per_device=3, balanced=True,
                       inputs=[Input("data", size_axes=(1, 2))],
                       label_inputs=[Input("seg_label", size_axes=(0, 1), pad_value=IGNORE),
                                     Input("gt_boxes", variable_axes=(0,), pad_value=-1)])
    return it, it.next()


def draw(path):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    it, batch = packed_batch()
    counts = [device[0].shape[0] for device in batch.data]
    rows = max(counts)
    largest = np.max(SIZES, axis=0)
    figure, axes = plt.subplots(rows, 4, figsize=(11, 2.3 * rows), squeeze=False)
    for device, (data, label) in enumerate(zip(batch.data, batch.label)):
        images, maps, boxes = data[0].asnumpy(), label[0].asnumpy(), label[1].asnumpy()
        indices = it.batch_indices[0][device]
        for row in range(rows):
            image_axis, map_axis = axes[row][2 * device], axes[row][2 * device + 1]
            for axis in (image_axis, map_axis):
                axis.set_xticks([])
                axis.set_yticks([])
            if row >= counts[device]:
                image_axis.axis("off")
                map_axis.axis("off")
                continue
            height, width = SIZES[indices[row]]
            image_axis.imshow(images[row].transpose(1, 2, 0), vmin=0, vmax=1)
            shown = np.where(maps[row] == IGNORE, 0.5, maps[row])
            map_axis.imshow(shown, cmap="viridis", vmin=0, vmax=1)
            for axis in (image_axis, map_axis):
                # One scale for every panel, so that each device's array shows its true size.
                axis.set_xlim(-0.5, largest[1] - 0.5)
                axis.set_ylim(largest[0] - 0.5, -0.5)
                axis.add_patch(Rectangle((width - 0.5, -0.5), images.shape[3] - width,
                                         images.shape[2], fill=False, hatch="//",
                                         edgecolor="red", linewidth=0))
                axis.add_patch(Rectangle((-0.5, height - 0.5), width, images.shape[2] - height,
                                         fill=False, hatch="//", edgecolor="red", linewidth=0))
            valid = boxes[row][boxes[row][:, 4] >= 0]
            for x1, y1, x2, y2, _ in valid:
                image_axis.add_patch(Rectangle((x1 - 0.5, y1 - 0.5), x2 - x1, y2 - y1,
                                               fill=False, edgecolor="yellow"))
            image_axis.set_title("device %d, sample %d: %dx%d\nin %s; %d box rows of -1"
                                 % (device, indices[row], height, width, images.shape[2:],
                                    len(boxes[row]) - len(valid)), fontsize=8)
            map_axis.set_title("seg_label: padding holds %d" % IGNORE, fontsize=8)
    figure.suptitle("One batch of 6 samples, balanced: device 0 holds %d large images, device 1 "
                    "%d small ones; red hatching is padding" % tuple(counts), fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=90)
    return path


if __name__ == "__main__":
    print(draw(sys.argv[1] if len(sys.argv) > 1 else "data_batch.png"))
