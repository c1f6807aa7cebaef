"""Stand-ins for the fork family's code, written from the facts in ``docs/family.rst``.

Nothing here is copied from those repositories. Each :class:`Repo` records what one repo's
training script, loaders and tester hand a module (input and label names, batch forms, how
the tester binds and reads outputs, the freezing rule, ``rescale_grad``, how it resumes);
the functions build a small stand-in symbol with those names, batches in those forms, and
the oracle: stock MXNet executors, one context each, that compute what the fork computed
(gradients summed over the devices, one SGD updater, parameters averaged at each epoch end
as ``Module.fit`` does).
"""

from collections import namedtuple

import mxnet as mx
import numpy as np

Repo = namedtuple("Repo", [
    "name",            # owner/name:sub-project, as docs/family.rst names it
    "data_names",      # the training loader's data inputs
    "label_names",     # the training loader's labels
    "test_data_names",  # the TestLoader's data inputs
    "test_label_names",  # what the tester passes as label_names: None, [] or a list
    "per_device",      # batches per device (the fork's form) or flat (stock slicing)
    "test_label",      # the TestLoader's DataBatch.label: [] or None
    "short_last_batch",  # the TestLoader's last batch holds the images left (else dropped)
    "fixed_prefixes", "fixed_rule",  # config FIXED_PARAMS and the copy's rule
    "rescale_grad",    # what the training script passes (None: the module's default)
    "resume_states",   # resuming sets _preload_opt_states (else parameters only)
    "tester_is_train",  # the tester's forward(batch) passes is_train=False (else nothing)
    "vendors_module",  # it vendors a MutableModule (else it runs stock Module)
])

RESNET_PREFIXES = ["conv1", "bn_conv1", "res2", "bn2", "gamma", "beta"]
DETECTION = dict(data_names=["data", "im_info", "gt_boxes"],
                 label_names=["label", "bbox_target", "bbox_weight"],
                 test_data_names=["data", "im_info"], test_label_names=None, per_device=True,
                 test_label=[], short_last_batch=True, fixed_prefixes=["gamma", "beta"],
                 fixed_rule="substring", rescale_grad=1.0, resume_states=True,
                 tester_is_train=False, vendors_module=True)

REPOS = [
    Repo("msracver/Deformable-ConvNets:rfcn", **DETECTION),
    Repo("msracver/Deformable-ConvNets:faster_rcnn", **DETECTION),
    Repo("msracver/Deformable-ConvNets:fpn", **dict(DETECTION, rescale_grad=None)),
    Repo("msracver/Deformable-ConvNets:deeplab", **dict(
        DETECTION, data_names=["data"], label_names=["label"], test_data_names=["data"],
        test_label_names=["softmax_label"], fixed_prefixes=RESNET_PREFIXES,
        resume_states=False)),
    Repo("msracver/FCIS:fcis", **dict(
        DETECTION, data_names=["data", "im_info", "gt_boxes", "gt_masks"],
        label_names=["proposal_label", "proposal_bbox_target", "proposal_bbox_weight"],
        test_label_names=[], fixed_prefixes=RESNET_PREFIXES, fixed_rule="startswith",
        resume_states=False)),
    Repo("msracver/Relation-Networks-for-Object-Detection:relation_rcnn", **DETECTION),
    Repo("msracver/Flow-Guided-Feature-Aggregation:fgfa_rfcn", **dict(
        DETECTION, data_names=["data", "data_bef", "data_aft", "im_info", "gt_boxes"],
        test_data_names=["data", "im_info", "data_cache", "feat_cache"],
        fixed_prefixes=RESNET_PREFIXES + ["bn"], fixed_rule="startswith",
        short_last_batch=False)),
    Repo("msracver/Deep-Feature-Flow:dff_rfcn", **dict(
        DETECTION, data_names=["data", "data_ref", "eq_flag", "im_info", "gt_boxes"],
        test_data_names=["data", "im_info", "data_key", "feat_key"],
        fixed_prefixes=RESNET_PREFIXES, fixed_rule="startswith", short_last_batch=False)),
    Repo("msracver/Deep-Feature-Flow:rfcn", **dict(
        DETECTION, fixed_prefixes=RESNET_PREFIXES, fixed_rule="startswith")),
    Repo("TuSimple/mx-maskrcnn:rcnn", **dict(
        DETECTION, data_names=["data"], per_device=False, test_label=None,
        short_last_batch=False, fixed_prefixes=["conv0", "stage1", "gamma", "beta"],
        rescale_grad="1/devices", resume_states=False)),
    Repo("ijkguo/mx-rcnn:rcnn", **dict(
        DETECTION, per_device=False, test_label=None, short_last_batch=False,
        fixed_prefixes=["conv0", "stage1", "gamma", "beta"], rescale_grad="1/devices",
        resume_states=False)),
    Repo("mahyarnajibi/SNIPER", **dict(
        DETECTION, data_names=["data", "valid_ranges", "im_info"],
        test_data_names=["data", "im_info", "im_ids"], per_device=False,
        short_last_batch=False, fixed_prefixes=RESNET_PREFIXES, tester_is_train=True,
        vendors_module=False)),
    Repo("enyac-group/AdaScale:rfcn", **dict(
        DETECTION, fixed_prefixes=RESNET_PREFIXES, fixed_rule="startswith")),
]

# Shapes of the inputs besides the image, per image on a device (the image is (n, 3, h, w)).
_EXTRA_SHAPES = {"im_info": (3,), "gt_boxes": (4, 5), "gt_masks": (4, 6, 6),
                 "valid_ranges": (2,), "im_ids": (1,), "eq_flag": (1,),
                 "feat_cache": (4, 2, 2), "feat_key": (4, 2, 2)}
_IMAGE_LIKE = ("data_bef", "data_aft", "data_ref", "data_cache", "data_key")
_TRUNK = ("conv1", "res2a_branch2a", "res3a_branch2a")


def _bn_name(conv):
    return "bn_conv1" if conv == "conv1" else "bn" + conv[len("res"):]


def _trunk(image):
    """ResNet-named convolutions and frozen-statistics BatchNorms, then a global pool."""
    net = image
    for conv in _TRUNK:
        net = mx.sym.Convolution(net, num_filter=4, kernel=(3, 3), pad=(1, 1), no_bias=True,
                                 name=conv)
        net = mx.sym.BatchNorm(net, use_global_stats=True, fix_gamma=False, name=_bn_name(conv))
        net = mx.sym.Activation(net, act_type="relu")
    net = mx.sym.Pooling(net, global_pool=True, kernel=(1, 1), pool_type="avg")
    return mx.sym.flatten(net)


def _with_inputs(features, names):
    """Every non-image input moves the features (so a stale or missing one shows)."""
    for name in names[1:]:
        value = mx.sym.mean(mx.sym.flatten(mx.sym.Variable(name)), axis=1, keepdims=True)
        features = mx.sym.broadcast_add(features, 0.125 * value)
    return features


def train_symbol(repo):
    """The training symbol's stand-in: its data and label names, a classifier on the first
    label, and one regression loss for each other label."""
    features = _with_inputs(_trunk(mx.sym.Variable("data")), repo.data_names)
    cls = mx.sym.FullyConnected(features, num_hidden=3, name="cls_score")
    outputs = [mx.sym.SoftmaxOutput(cls, label=mx.sym.Variable(repo.label_names[0]),
                                    name="cls_prob")]
    for position, name in enumerate(repo.label_names[1:]):
        # The first regression is the test symbol's bbox_pred, as in the family's symbols.
        pred = mx.sym.FullyConnected(features, num_hidden=4,
                                     name="bbox_pred" if position == 0 else name + "_pred")
        loss = mx.sym.mean(mx.sym.square(pred - mx.sym.Variable(name)))
        outputs.append(mx.sym.MakeLoss(loss, name=name + "_loss"))
    return mx.sym.Group(outputs)


def predict_symbol(repo):
    """The test symbol's stand-in: probabilities and box deltas, from the test inputs (with
    a label input where the repo's tester names one, as deeplab's SoftmaxOutput has)."""
    features = _with_inputs(_trunk(mx.sym.Variable("data")), repo.test_data_names)
    cls = mx.sym.FullyConnected(features, num_hidden=3, name="cls_score")
    if repo.test_label_names:
        prob = mx.sym.SoftmaxOutput(cls, label=mx.sym.Variable(repo.test_label_names[0]),
                                    name="cls_prob")
    else:
        prob = mx.sym.softmax(cls, name="cls_prob")
    if len(repo.label_names) == 1:  # segmentation: probabilities only
        return prob
    bbox = mx.sym.FullyConnected(features, num_hidden=4, name="bbox_pred")
    return mx.sym.Group([prob, bbox])


def fixed_names(repo, symbol):
    """The parameters the repo's copy froze, by its own rule (written out here, not taken
    from mxpatch_bind)."""
    if repo.fixed_rule == "substring":
        hits = [n for n in symbol.list_arguments() for p in repo.fixed_prefixes if p in n]
    else:
        hits = [n for n in symbol.list_arguments() for p in repo.fixed_prefixes
                if n.startswith(p)]
    inputs = set(repo.data_names) | set(repo.label_names)
    return [n for n in dict.fromkeys(hits) if n not in inputs]


def initial_params(symbol, seed=0):
    """Deterministic parameters and BatchNorm statistics for the stand-in (by name)."""
    arg_shapes, _, aux_shapes = symbol.infer_shape(**_one_image_shapes(symbol))
    rng = np.random.RandomState(seed)
    args = {}
    for name, shape in zip(symbol.list_arguments(), arg_shapes):
        if name.endswith(("_weight", "_bias", "_gamma", "_beta")):
            args[name] = mx.nd.array(rng.uniform(-0.5, 0.5, shape) + (1 if "gamma" in name
                                                                       else 0))
    aux = {name: mx.nd.array(rng.uniform(0.5, 1.5, shape) if "var" in name
                             else rng.uniform(-0.1, 0.1, shape))
           for name, shape in zip(symbol.list_auxiliary_states(), aux_shapes)}
    return args, aux


def _one_image_shapes(symbol):
    """Every input of a stand-in symbol at one 8x8 image (labels: a class, or 4 numbers)."""
    shapes = {}
    for name in symbol.list_arguments():
        if name == "data" or name in _IMAGE_LIKE:
            shapes[name] = (1, 3, 8, 8)
        elif name == "im_info":
            shapes[name] = (1, 3)
        elif name in _EXTRA_SHAPES:
            shapes[name] = (1,) + _EXTRA_SHAPES[name]
        elif name in ("label", "softmax_label", "proposal_label"):
            shapes[name] = (1,)
        elif not name.endswith(("_weight", "_bias", "_gamma", "_beta")):
            shapes[name] = (1, 4)  # a regression target
    return shapes


# --------------------------------------------------------------------------- loaders' forms
def image_sizes(count, seed):
    rng = np.random.RandomState(seed)
    return [(int(rng.randint(6, 11)), int(rng.randint(6, 11))) for _ in range(count)]


def device_arrays(names, size, images, rng):
    """One device's inputs in ``names`` order for ``images`` images of ``size``."""
    height, width = size
    arrays = []
    for name in names:
        if name == "data" or name in _IMAGE_LIKE:
            shape = (images, 3, height, width)
        elif name == "im_info":
            arrays.append(mx.nd.array([[height, width, 1.0]] * images))
            continue
        else:
            shape = (images,) + _EXTRA_SHAPES[name]
        arrays.append(mx.nd.array(rng.uniform(-1, 1, shape)))
    return arrays


def device_labels(names, images, rng):
    labels = [mx.nd.array(rng.randint(0, 3, (images,)))]
    labels += [mx.nd.array(rng.uniform(-1, 1, (images, 4))) for _ in names[1:]]
    return labels


def train_batches(repo, num_devices, count, seed):
    """What the repo's AnchorLoader hands ``fit``: full batches of one image per device
    (an incomplete last batch is dropped), per device or flat (stock-sliced, images padded
    to the batch's largest as its tensor_vstack pads)."""
    rng = np.random.RandomState(seed)
    batches = []
    for step in range(count):
        sizes = image_sizes(num_devices, seed * 100 + step)
        if not repo.per_device:
            largest = (max(h for h, _ in sizes), max(w for _, w in sizes))
            sizes = [largest] * num_devices
        data = [device_arrays(repo.data_names, size, 1, rng) for size in sizes]
        label = [device_labels(repo.label_names, 1, rng) for _ in sizes]
        batches.append((data, label))
    return batches


def as_batch(repo, data, label):
    if repo.per_device:
        return mx.io.DataBatch(
            data=data, label=label, pad=0, index=None,
            provide_data=[[(n, a.shape) for n, a in zip(repo.data_names, d)] for d in data],
            provide_label=[[(n, a.shape) for n, a in zip(repo.label_names, d)]
                           for d in label])
    merged = [mx.nd.concat(*arrays, dim=0) for arrays in zip(*data)]
    merged_label = [mx.nd.concat(*arrays, dim=0) for arrays in zip(*label)]
    return mx.io.DataBatch(
        data=merged, label=merged_label, pad=0, index=None,
        provide_data=[(n, a.shape) for n, a in zip(repo.data_names, merged)],
        provide_label=[(n, a.shape) for n, a in zip(repo.label_names, merged_label)])


class TrainLoader(mx.io.DataIter):
    """The repo's AnchorLoader stand-in: the same batches every epoch, in its form."""

    def __init__(self, repo, batches):
        super().__init__()
        self.repo, self.batches, self.cursor = repo, batches, 0
        first = as_batch(repo, *batches[0])
        self.provide_data, self.provide_label = first.provide_data, first.provide_label
        self.batch_size = len(batches[0][0])

    def reset(self):
        self.cursor = 0

    def next(self):
        if self.cursor == len(self.batches):
            raise StopIteration
        batch = as_batch(self.repo, *self.batches[self.cursor])
        self.cursor += 1
        self.provide_data, self.provide_label = batch.provide_data, batch.provide_label
        return batch


def eval_batches(repo, num_devices, count, seed):
    """What the repo's TestLoader yields: one image per device, ``batch_size`` devices, the
    last batch with the images left (``short_last_batch``); ``provide_label`` one None per
    device, ``label`` [] or None; pad and index computed after the cursor moved, as the
    loaders compute them (nothing reads them)."""
    rng = np.random.RandomState(seed)
    sizes = image_sizes(count, seed)
    batches, cursor = [], 0
    while cursor < count:
        chunk = sizes[cursor:cursor + num_devices]
        if len(chunk) < num_devices and not repo.short_last_batch:
            break
        cursor += num_devices
        pad = max(cursor + num_devices - count, 0)
        if not repo.per_device:  # one flat batch, padded to its largest image
            largest = (max(h for h, _ in chunk), max(w for _, w in chunk))
            arrays = [device_arrays(repo.test_data_names, largest, 1, rng) for _ in chunk]
            merged = [mx.nd.concat(*parts, dim=0) for parts in zip(*arrays)]
            batches.append(mx.io.DataBatch(
                data=merged, label=repo.test_label, pad=0, index=None, provide_label=None,
                provide_data=[(n, a.shape) for n, a in zip(repo.test_data_names, merged)]))
            continue
        data = [device_arrays(repo.test_data_names, size, 1, rng) for size in chunk]
        batches.append(mx.io.DataBatch(
            data=data, label=repo.test_label, pad=pad, index=cursor // num_devices,
            provide_data=[[(n, a.shape) for n, a in zip(repo.test_data_names, d)] for d in data],
            provide_label=[None] * len(data)))
    return batches


def images_of(repo, batch):
    """Each image's inputs in a test batch (one per device, or the rows of a flat batch)."""
    if repo.per_device:
        return batch.data
    count = batch.data[0].shape[0]
    return [[a[i:i + 1] for a in batch.data] for i in range(count)]


class ClassAccuracy(mx.metric.EvalMetric):
    """The family's metrics' way: labels and outputs by position, one call per device."""

    def __init__(self):
        super().__init__("ClassAccuracy")

    def update(self, labels, preds):
        predicted = preds[0].asnumpy().argmax(axis=1)
        truth = labels[0].asnumpy().astype(int)
        self.sum_metric += int((predicted == truth).sum())
        self.num_inst += len(truth)


# --------------------------------------------------------------------------- the oracle
def _average(arrays):
    """``Module.get_params``' average of one parameter over its devices."""
    return sum(a.copyto(mx.cpu()) for a in arrays) / len(arrays)


class Oracle:
    """The fork's training, with stock executors bound per device at each batch's shapes."""

    def __init__(self, repo, symbol, params, num_devices, optimizer_params, states=None):
        self.repo, self.symbol = repo, symbol
        self.contexts = [mx.cpu(i) for i in range(num_devices)]
        inputs = set(repo.data_names) | set(repo.label_names)
        self.param_names = [n for n in symbol.list_arguments() if n not in inputs]
        self.fixed = set(fixed_names(repo, symbol))
        args, aux = params
        self.weights = {n: args[n].copy() for n in self.param_names}   # the kvstore's copy
        self.device_weights = dict(self.weights)                        # what devices hold
        self.aux = {n: a.copy() for n, a in aux.items()}
        optimizer = mx.optimizer.create(
            "sgd", sym=symbol, param_idx2name=dict(enumerate(self.param_names)),
            **optimizer_params)
        self.updater = mx.optimizer.get_updater(optimizer)
        if states is not None:
            self.updater.set_states(states)

    def step(self, data, label, metric=None):
        grads = []
        grad_req = {n: "null" if n in self.fixed or n not in self.param_names else "write"
                    for n in self.symbol.list_arguments()}
        for context, arrays, labels in zip(self.contexts, data, label):
            shapes = dict(zip(self.repo.data_names, (a.shape for a in arrays)))
            shapes.update(zip(self.repo.label_names, (a.shape for a in labels)))
            exe = self.symbol.simple_bind(context, grad_req=grad_req, **shapes)
            for name in self.param_names:
                self.device_weights[name].copyto(exe.arg_dict[name])
            for name, value in self.aux.items():
                value.copyto(exe.aux_dict[name])
            for name, value in zip(self.repo.data_names + self.repo.label_names,
                                   list(arrays) + list(labels)):
                value.copyto(exe.arg_dict[name])
            exe.forward(is_train=True)
            if metric is not None:
                metric.update(labels, exe.outputs)
            exe.backward()
            grads.append({n: exe.grad_dict[n].copyto(mx.cpu()) for n in self.param_names
                          if n not in self.fixed})
        for index, name in enumerate(self.param_names):
            if name not in self.fixed:
                self.updater(index, sum(g[name] for g in grads), self.weights[name])
        self.device_weights = dict(self.weights)

    def end_epoch(self):
        """``fit``'s epoch end: the devices' parameters averaged and set back (the kvstore
        keeps its own); returns the checkpoint's ``arg_params, aux_params``."""
        count = len(self.contexts)
        self.device_weights = {n: _average([w] * count) for n, w in self.device_weights.items()}
        self.aux = {n: _average([a] * count) for n, a in self.aux.items()}
        return dict(self.device_weights), dict(self.aux)


def one_context_outputs(symbol, data_names, arrays, params, context):
    """Stock MXNet on one context: the test symbol's outputs for one image. (On the device
    the module ran it on: oneDNN's results for one shape can differ in the last bit
    between cpu(0) and cpu(1).)"""
    shapes = dict(zip(data_names, (a.shape for a in arrays)))
    exe = symbol.simple_bind(context, grad_req="null", **shapes)
    args, aux = params
    for name, value in list(args.items()) + list(zip(data_names, arrays)):
        if name in exe.arg_dict:
            value.copyto(exe.arg_dict[name])
    for name, value in aux.items():
        value.copyto(exe.aux_dict[name])
    exe.forward(is_train=False)
    return [out.asnumpy() for out in exe.outputs]
