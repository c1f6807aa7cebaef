"""The MIGRATED tree against the FORK tree, stage by stage, bit for bit.

Per stage: every batch's metrics (the shim's trace, full precision), the log lines that carry
its results (evaluation summaries), and every file the stage wrote: ``.params`` array by array
(``np.array_equal``), pickles by content (numpy arrays exactly, so that a pickle written by a
different protocol still compares its values; a difference is named by its path in the
object; the time of day an evaluation records is not compared), every other file byte for
byte.
"""
import json
import os
import pickle
import re


class Stub:
    """An object of a class the comparison does not import (the trees' own modules: COCOeval,
    COCO): its class's dotted name and its state are what is compared."""


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        try:
            return super().find_class(module, name)
        except (ImportError, AttributeError):
            return type(name, (Stub,), {'dotted': module + '.' + name})


def _load_pickle(path):
    with open(path, 'rb') as f:
        return _Unpickler(f, encoding='latin1').load()


# The time of day an evaluation writes into its results (COCOeval's eval['date']):
# two runs differ there whatever they compute.
VOLATILE = ("['date']",)


def differences(a, b, where='$'):
    """The paths at which ``a`` and ``b`` differ (numpy arrays exactly, objects of the
    trees' classes by their state)."""
    import numpy as np
    if isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == object \
            and b.dtype == object and a.shape == b.shape:  # a cell array of savemat's
        return [d for i, (x, y) in enumerate(zip(a.ravel(), b.ravel()))
                for d in differences(x, y, '%s.flat[%d]' % (where, i))]
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        same = (type(a) is type(b) and a.dtype == b.dtype and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=a.dtype.kind in 'fc'))
        return [] if same else [where]
    if isinstance(a, Stub) and isinstance(b, Stub) and a.dotted == b.dotted:
        return differences(vars(a), vars(b), where + '.' + a.dotted.rsplit('.', 1)[1])
    if type(a) is not type(b):
        return [where + ' (type %s, %s)' % (type(a).__name__, type(b).__name__)]
    if isinstance(a, dict):
        if sorted(map(repr, a)) != sorted(map(repr, b)):
            return [where + ' (keys)']
        return [d for key in a for d in differences(a[key], b[key], '%s[%r]' % (where, key))]
    if isinstance(a, (list, tuple)):
        if len(a) != len(b):
            return [where + ' (length %d, %d)' % (len(a), len(b))]
        return [d for i, (x, y) in enumerate(zip(a, b))
                for d in differences(x, y, '%s[%d]' % (where, i))]
    if isinstance(a, float) and a != a and b != b:
        return []
    return [] if a == b else [where]


def compare_file(p, q):
    if p.endswith('.params'):
        import mxnet as mx
        import numpy as np
        x, y = mx.nd.load(p), mx.nd.load(q)
        same = sorted(x) == sorted(y) and all(
            np.array_equal(x[k].asnumpy(), y[k].asnumpy()) for k in x)
        return 'arrays equal (%d)' % len(x) if same else 'ARRAYS DIFFER'
    with open(p, 'rb') as f, open(q, 'rb') as g:
        if f.read() == g.read():
            return 'bytes equal'
    if p.endswith('.mat'):  # scipy's savemat writes the time of day into its header
        from scipy.io import loadmat
        found = differences(*({k: v for k, v in loadmat(path).items() if k != '__header__'}
                              for path in (p, q)))
        return 'CONTENT DIFFERS at %s' % ', '.join(found[:5]) if found \
            else 'content equal but the header'
    if p.endswith('.pkl'):
        try:
            found = differences(_load_pickle(p), _load_pickle(q))
        except Exception as error:  # a pickle that does not load is reported, not raised
            return 'BYTES DIFFER (unpickling: %r)' % error
        real = [d for d in found if not d.endswith(VOLATILE)]
        if real:
            return 'CONTENT DIFFERS at %s' % ', '.join(real[:5])
        return 'content equal' + (' but the date at %s' % found[0] if found else ', bytes differ')
    return 'BYTES DIFFER'


def _files(folder):
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = path
    return found


def _lines(log, pattern):
    with open(log, errors='replace') as f:
        return [line.rstrip('\n') for line in f if re.search(pattern, line)]


def compare_stage(stage, logs, snapshots, label):
    """``logs`` and ``snapshots``: (migrated, fork) folders."""
    result = {}
    traces = [os.path.join(folder, label + '_trace.jsonl') for folder in logs]
    if stage.get('trace') and all(os.path.exists(t) for t in traces):
        a, b = ([json.loads(line) for line in open(t)] for t in traces)
        result['batch_metrics_equal'] = a == b and len(a) > 0
        result['batches'] = [len(a), len(b)]
        result['last_metrics_migrated'] = a[-1] if a else None
    stage_logs = [os.path.join(folder, label + '.log') for folder in logs]
    if stage.get('lines') and all(os.path.exists(t) for t in stage_logs):
        a, b = (_lines(t, stage['lines']) for t in stage_logs)
        result['result_lines_equal'] = a == b and len(a) > 0
        result['result_lines_migrated'] = a[:6]
    files = [_files(os.path.join(folder, stage['name'])) for folder in snapshots]
    result['files'] = {}
    for rel in sorted(set(files[0]) | set(files[1])):
        if rel not in files[0] or rel not in files[1]:
            result['files'][rel] = 'only in %s' % ('fork' if rel in files[1] else 'migrated')
        else:
            result['files'][rel] = compare_file(files[0][rel], files[1][rel])
    return result


def verdict(stage_result):
    """True when everything compared is equal (a pickle equal in content counts as equal)."""
    checks = [stage_result.get(k) for k in ('batch_metrics_equal', 'result_lines_equal')
              if k in stage_result]
    checks += [v.startswith(('arrays equal', 'bytes equal', 'content equal'))
               for v in stage_result['files'].values()]
    return bool(checks) and all(checks)
