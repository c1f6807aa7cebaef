"""A synthetic ImageNet VID folder (``data/ILSVRC2015``), as ``imagenet_vid.py`` reads it.

``Data/{DET,VID}/...JPEG``, ``Annotations/{DET,VID}/...xml`` and the image sets the family's
configs name: ``DET_train_30classes`` (``index frame_id``), ``VID_train_15frames`` and
``VID_val_videos`` (``video frame_id first_frame length``), AdaScale's ``VID_val_frames``
(one line per frame) and ``MIX_train`` (DET and VID lines together), and FGFA's motion IoU
``.mat`` for its detailed evaluation. Videos are 64x96 frames in which two boxes move back and
forth by up to 3 pixels. Written by us from fixed seeds.
"""
import os

H, W = 64, 96
SYNSETS = ('n02691156', 'n02958343')  # the VID classes 'airplane' and 'car'
DET_IMAGES = ['train/ILSVRC2014_train_0000/ILSVRC2014_train_%08d' % k for k in (1, 2)]
TRAIN_VIDEOS = ['train/ILSVRC2015_VID_train_0000/ILSVRC2015_train_%08d' % k for k in (0, 1)]
VAL_VIDEOS = ['val/ILSVRC2015_val_%08d' % k for k in (0, 1)]
# FGFA's tester predicts a frame once 18 frames are cached (its first frame counts 10 times):
# a validation video needs 11 frames or more
TRAIN_FRAMES, VAL_FRAMES = 4, 11


def _xml(boxes):
    objects = ''.join(
        '<object><trackid>%d</trackid><name>%s</name><bndbox><xmax>%d</xmax><xmin>%d</xmin>'
        '<ymax>%d</ymax><ymin>%d</ymin></bndbox><occluded>0</occluded><generated>0</generated>'
        '</object>' % (j, SYNSETS[j], x2, x1, y2, y1) for j, (x1, y1, x2, y2) in enumerate(boxes))
    return ('<annotation><folder>x</folder><filename>x</filename><source><database>ILSVRC_2015'
            '</database></source><size><width>%d</width><height>%d</height></size>%s'
            '</annotation>\n' % (W, H, objects))


def _scene(rng):
    """A background and two boxes (x, y, w, h) that the frames move: anchors of the tiny
    model (32x32 on the 16-pixel grid), as in ``data_still``."""
    import numpy as np
    background = rng.randint(0, 60, size=(H, W, 3)).astype(np.uint8)
    cells = rng.permutation([(i, j) for i in range(1, 5) for j in range(1, 3)])[:len(SYNSETS)]
    boxes = [(16 * int(i) - 8, 16 * int(j) - 8, 32, 32) for i, j in cells]
    return background, boxes


def _frame(root, kind, index, background, boxes, shift):
    import cv2
    image = background.copy()
    corners = []
    for j, (x, y, bw, bh) in enumerate(boxes):
        x = min(x + shift, W - bw - 1)
        image[y:y + bh, x:x + bw] = (200 - 120 * j, 70 + 110 * j, 60 + 40 * j)
        corners.append((x, y, x + bw - 1, y + bh - 1))
    for folder, ext in (('Data', '.JPEG'), ('Annotations', '.xml')):
        os.makedirs(os.path.dirname(os.path.join(root, folder, kind, index + ext)), exist_ok=True)
    cv2.imwrite(os.path.join(root, 'Data', kind, index + '.JPEG'), image,
                [cv2.IMWRITE_JPEG_QUALITY, 95])
    with open(os.path.join(root, 'Annotations', kind, index + '.xml'), 'w') as f:
        f.write(_xml(corners))


def _write_set(root, name, lines):
    with open(os.path.join(root, 'ImageSets', name + '.txt'), 'w') as f:
        f.write('\n'.join(lines) + '\n')


def _motion_iou(path, frames):
    """FGFA's motion IoU file: one (objects x 1) array per evaluated frame, as its ``.mat``."""
    import numpy as np
    import scipy.io as sio
    cells = np.empty((frames, 1), dtype=object)
    for i in range(frames):
        cells[i, 0] = np.array([[0.95], [0.6 + 0.05 * (i % 3)]])
    sio.savemat(path, {'motion_iou': cells})


def write_vid(tree):
    """The ILSVRC2015 folder: 2 DET images, 2 training videos of 4 frames (frames 2 and 1 are
    the training samples), 2 validation videos of 11 frames."""
    import numpy as np
    root = os.path.join(tree, 'data', 'ILSVRC2015')
    os.makedirs(os.path.join(root, 'ImageSets'), exist_ok=True)
    rng = np.random.RandomState(7)
    for index in DET_IMAGES:
        _frame(root, 'DET', index, *_scene(rng), 0)
    for videos, frames in ((TRAIN_VIDEOS, TRAIN_FRAMES), (VAL_VIDEOS, VAL_FRAMES)):
        for video in videos:
            background, boxes = _scene(rng)
            for k in range(frames):
                _frame(root, 'VID', '%s/%06d' % (video, k), background, boxes, k % 4)
    det_lines = ['%s 1' % index for index in DET_IMAGES]
    vid_lines = ['%s %d %d %d' % (video, 1 + 4 * v, 2 - v, TRAIN_FRAMES)
                 for v, video in enumerate(TRAIN_VIDEOS)]
    _write_set(root, 'DET_train_30classes', det_lines)
    _write_set(root, 'VID_train_15frames', vid_lines)
    # AdaScale keys its per-image scales by frame id: DET lines get ids of their own there
    _write_set(root, 'MIX_train', ['%s %d' % (index, 1001 + k)
                                   for k, index in enumerate(DET_IMAGES)] + vid_lines)
    _write_set(root, 'VID_val_videos', ['%s %d 0 %d' % (video, 1 + VAL_FRAMES * v, VAL_FRAMES)
                                        for v, video in enumerate(VAL_VIDEOS)])
    _write_set(root, 'VID_val_frames', ['%s/%06d %d' % (video, k, 1 + VAL_FRAMES * v + k)
                                        for v, video in enumerate(VAL_VIDEOS)
                                        for k in range(VAL_FRAMES)])
    _motion_iou(os.path.join(root, 'motion_iou.mat'), len(VAL_VIDEOS) * VAL_FRAMES)
