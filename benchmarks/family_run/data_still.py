"""Synthetic still-image data sets in the layouts the family's dataset classes read.

COCO (``data/coco``), PASCAL VOC detection (``data/VOCdevkit/VOC2007``, ``VOC2012``), VOC
segmentation (``data/VOCdevkit2012``), Cityscapes (``data/cityscapes``) and SBD's SDS instance
masks (``data/VOCdevkit/VOCSDS``), road_obj_detect's RoadImages (``rfcn/data/RoadImages``):
64x96 images of flat coloured boxes on noise, from fixed seeds. Written by us; nothing here
is copied from a data set.
"""
import json
import os

H, W = 64, 96
VOC_CLASSES = ['aeroplane', 'bicycle', 'bird', 'boat', 'bottle', 'bus', 'car', 'cat', 'chair',
               'cow', 'diningtable', 'dog', 'horse', 'motorbike', 'person', 'pottedplant',
               'sheep', 'sofa', 'train', 'tvmonitor']


def _jpeg(path, image):
    import cv2
    os.makedirs(os.path.dirname(path), exist_ok=True)
    cv2.imwrite(path, image, [cv2.IMWRITE_JPEG_QUALITY, 95])


def _boxes(rng, count):
    """``count`` boxes (x, y, w, h) and an image holding them. Each box is one of the tiny
    model's anchors (32x32 on the 16-pixel grid): its proposals then overlap the objects,
    and the evaluations count true positives, not only zeros."""
    import numpy as np
    image = rng.randint(0, 60, size=(H, W, 3)).astype(np.uint8)
    cells = rng.permutation([(i, j) for i in range(1, 5) for j in range(1, 3)])[:count]
    boxes = []
    for k, (i, j) in enumerate(cells):
        x, y = 16 * int(i) - 8, 16 * int(j) - 8
        image[y:y + 32, x:x + 32] = (200 - 60 * k, 80 + 60 * k, 40 + 50 * k)
        boxes.append((x, y, 32, 32))
    return image, boxes


def write_coco(tree):
    """A COCO-format folder: 4 training images (train2014), 2 test images (minival2014)."""
    import numpy as np
    root = os.path.join(tree, 'data', 'coco')
    rng = np.random.RandomState(2)
    categories = [{'id': 1, 'name': 'block', 'supercategory': 'shape'},
                  {'id': 2, 'name': 'slab', 'supercategory': 'shape'}]
    for image_set, data_name, count, first_id in (('train2014', 'train2014', 4, 1),
                                                  ('minival2014', 'val2014', 2, 101)):
        images, annotations = [], []
        for k in range(count):
            image_id = first_id + k
            image, boxes = _boxes(rng, 2)
            for j, (x, y, bw, bh) in enumerate(boxes):
                annotations.append({'id': len(annotations) + 1 + 1000 * first_id,
                                    'image_id': image_id, 'category_id': j + 1,
                                    'bbox': [x, y, bw, bh], 'area': bw * bh, 'iscrowd': 0,
                                    'segmentation': [[x, y, x + bw, y, x + bw, y + bh, x, y + bh]]})
            name = 'COCO_%s_%012d.jpg' % (data_name, image_id)
            _jpeg(os.path.join(root, 'images', data_name, name), image)
            images.append({'id': image_id, 'width': W, 'height': H, 'file_name': name})
        os.makedirs(os.path.join(root, 'annotations'), exist_ok=True)
        with open(os.path.join(root, 'annotations', 'instances_%s.json' % image_set), 'w') as f:
            json.dump({'images': images, 'annotations': annotations, 'categories': categories}, f)


def _voc_xml(name, boxes, classes, difficult):
    objects = ''.join(
        '<object><name>%s</name><pose>Unspecified</pose><truncated>0</truncated>'
        '<difficult>%d</difficult><bndbox><xmin>%d</xmin><ymin>%d</ymin><xmax>%d</xmax>'
        '<ymax>%d</ymax></bndbox></object>' % (cls, hard, x + 1, y + 1, x + bw, y + bh)
        for (x, y, bw, bh), cls, hard in zip(boxes, classes, difficult))
    return ('<annotation><folder>VOC</folder><filename>%s.jpg</filename><size><width>%d</width>'
            '<height>%d</height><depth>3</depth></size><segmented>0</segmented>%s</annotation>\n'
            % (name, W, H, objects))


def write_voc_detection(tree):
    """VOC2007 (trainval: 2, test: 2) and VOC2012 (trainval: 2) detection folders, 1-based
    boxes as VOC writes them; one test object is 'difficult' (the evaluation skips it)."""
    import numpy as np
    rng = np.random.RandomState(5)
    sets = (('2007', 'trainval', ['000001', '000002']), ('2007', 'test', ['000101', '000102']),
            ('2012', 'trainval', ['2012_000001', '2012_000002']))
    for year, image_set, names in sets:
        root = os.path.join(tree, 'data', 'VOCdevkit', 'VOC' + year)
        os.makedirs(os.path.join(root, 'Annotations'), exist_ok=True)
        os.makedirs(os.path.join(root, 'ImageSets', 'Main'), exist_ok=True)
        for k, name in enumerate(names):
            image, boxes = _boxes(rng, 2)
            _jpeg(os.path.join(root, 'JPEGImages', name + '.jpg'), image)
            hard = [0, 1 if (image_set == 'test' and k == 1) else 0]
            with open(os.path.join(root, 'Annotations', name + '.xml'), 'w') as f:
                f.write(_voc_xml(name, boxes, ['car', 'dog'], hard))
        with open(os.path.join(root, 'ImageSets', 'Main', image_set + '.txt'), 'w') as f:
            f.write('\n'.join(names) + '\n')


def write_voc_seg(tree):
    """A PASCAL VOC 2012 segmentation folder: 4 training images (train_seg), 2 (val_seg)."""
    import cv2
    import numpy as np
    root = os.path.join(tree, 'data', 'VOCdevkit2012', 'VOC2012')
    for sub in ('JPEGImages', 'SegmentationClass', os.path.join('ImageSets', 'Main')):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    rng = np.random.RandomState(3)
    for image_set, names in (('train_seg', ['2012_%06d' % k for k in range(1, 5)]),
                             ('val_seg', ['2012_%06d' % k for k in range(101, 103)])):
        for name in names:
            im = rng.randint(0, 60, size=(H, W, 3)).astype(np.uint8)
            label = np.zeros((H, W), np.uint8)
            for cls in (rng.randint(1, 21), rng.randint(1, 21)):
                bw, bh = rng.randint(20, 40), rng.randint(16, 32)
                x, y = rng.randint(0, W - bw), rng.randint(0, H - bh)
                im[y:y + bh, x:x + bw] = (10 * cls, 200 - 5 * cls, 90)
                label[y:y + bh, x:x + bw] = cls
                label[y, x:x + bw] = 255  # VOC's 'void' border
            _jpeg(os.path.join(root, 'JPEGImages', name + '.jpg'), im)
            cv2.imwrite(os.path.join(root, 'SegmentationClass', name + '.png'), label)
        with open(os.path.join(root, 'ImageSets', 'Main', image_set + '.txt'), 'w') as f:
            f.write('\n'.join(names) + '\n')


def write_cityscapes(tree):
    """Cityscapes' layout (leftImg8bit/ and gtFine/ ``*_labelTrainIds.png``, by split and
    city) as deeplab's ``cityscape.py`` walks it: 4 training images, 2 validation images."""
    import cv2
    import numpy as np
    root = os.path.join(tree, 'data', 'cityscapes')
    rng = np.random.RandomState(8)
    for split, first, count in (('train', 1, 4), ('val', 101, 2)):
        for k in range(first, first + count):
            index = 'aachen_000000_%06d' % k
            image = rng.randint(0, 60, size=(H, W, 3)).astype(np.uint8)
            label = np.full((H, W), 255, np.uint8)  # 'ignore' where no class is drawn
            label[H // 2:] = 0  # road
            for cls in (rng.randint(1, 19), rng.randint(1, 19)):
                bw, bh = rng.randint(20, 40), rng.randint(16, 32)
                x, y = rng.randint(0, W - bw), rng.randint(0, H - bh)
                image[y:y + bh, x:x + bw] = (12 * cls, 200 - 8 * cls, 90)
                label[y:y + bh, x:x + bw] = cls
            for folder, suffix, data in (('leftImg8bit', 'leftImg8bit', image),
                                         ('gtFine', 'gtFine_labelTrainIds', label)):
                path = os.path.join(root, folder, split, 'aachen', '%s_%s.png' % (index, suffix))
                os.makedirs(os.path.dirname(path), exist_ok=True)
                cv2.imwrite(path, data)


def write_voc_sds(tree):
    """SBD's layout for FCIS's SDS configs (VOCSDS: img/, cls/ and inst/ .mat files,
    ImageSets/Main/train.txt and val.txt): 4 training images, 2 validation images, two
    instances each (class 7 'car' and 12 'dog')."""
    import numpy as np
    import scipy.io as sio
    root = os.path.join(tree, 'data', 'VOCdevkit', 'VOCSDS')
    for sub in ('img', 'cls', 'inst', os.path.join('ImageSets', 'Main')):
        os.makedirs(os.path.join(root, sub), exist_ok=True)
    rng = np.random.RandomState(6)
    for image_set, names in (('train', ['2008_%06d' % k for k in range(1, 5)]),
                             ('val', ['2008_%06d' % k for k in range(101, 103)])):
        for name in names:
            image, boxes = _boxes(rng, 2)
            cls_map = np.zeros((H, W), np.uint8)
            inst_map = np.zeros((H, W), np.uint8)
            # the second instance drawn over the first where they overlap, as in SBD's maps
            for j, ((x, y, bw, bh), cls) in enumerate(zip(boxes, (7, 12))):
                cls_map[y:y + bh, x:x + bw] = cls
                inst_map[y:y + bh, x:x + bw] = j + 1
            _jpeg(os.path.join(root, 'img', name + '.jpg'), image)
            sio.savemat(os.path.join(root, 'cls', name + '.mat'),
                        {'GTcls': {'Segmentation': cls_map}})
            sio.savemat(os.path.join(root, 'inst', name + '.mat'),
                        {'GTinst': {'Segmentation': inst_map}})
        with open(os.path.join(root, 'ImageSets', 'Main', image_set + '.txt'), 'w') as f:
            f.write('\n'.join(names) + '\n')


def write_road(root):
    """road_obj_detect's RoadImages folder, under the folder its scripts run in (rfcn/):
    ``all_label.idl`` (one JSON object a line, ``{file name: [[x1, y1, x2, y2, class], ...]}``,
    classes 1, 2, 3 and 20 as its loader reads them), 4 training images in ``all/`` and 2 in
    ``test/``, the folder its ``inference.py`` globs."""
    import numpy as np
    folder = os.path.join(root, 'data', 'RoadImages')
    rng = np.random.RandomState(9)
    lines = []
    for k in range(4):
        image, boxes = _boxes(rng, 2)
        name = 'road_%03d.jpg' % k
        _jpeg(os.path.join(folder, 'all', name), image)
        labels = [[x, y, x + bw - 1, y + bh - 1, cls]
                  for (x, y, bw, bh), cls in zip(boxes, ((1, 20), (2, 3))[k % 2])]
        lines.append(json.dumps({name: labels}))
    with open(os.path.join(folder, 'all_label.idl'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    for k in range(2):
        _jpeg(os.path.join(folder, 'test', 'wild_%03d.jpg' % k), _boxes(rng, 2)[0])


WRITERS = {'coco': write_coco, 'voc': write_voc_detection, 'voc_seg': write_voc_seg,
           'cityscapes': write_cityscapes, 'sds': write_voc_sds, 'road': write_road}
