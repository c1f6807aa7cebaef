"""What a stage of a MIGRATED-only pipeline (SNIPER's: no fork runs here) wrote, checked.

No other tree to compare with, so each stage's outputs are read and described: every batch's
metrics (the shim's trace) finite; every ``.params`` array finite, and how many arrays are
all zeros; every pickle's numeric arrays finite and how many numbers they hold; every JSON
file parsed and its length; the log lines that carry the stage's results.
"""
import json
import os
import re

from .compare import _load_pickle


def _numbers(value, found):
    """Every numeric array of a loaded pickle (nested lists, tuples, dicts, objects)."""
    import numpy as np
    if isinstance(value, np.ndarray) and value.dtype.kind in 'fiub':
        found.append(value)
    elif isinstance(value, np.ndarray) and value.dtype == object:
        for item in value.ravel():
            _numbers(item, found)
    elif isinstance(value, dict):
        for item in value.values():
            _numbers(item, found)
    elif isinstance(value, (list, tuple)):
        for item in value:
            _numbers(item, found)
    elif hasattr(value, '__dict__'):
        _numbers(vars(value), found)
    return found


def _check_file(path):
    import mxnet as mx
    import numpy as np
    if path.endswith('.params'):
        arrays = {k: v.asnumpy() for k, v in mx.nd.load(path).items()}
        return {'arrays': len(arrays),
                'finite': all(bool(np.isfinite(a).all()) for a in arrays.values()),
                'all_zero_arrays': sorted(k for k, a in arrays.items() if not a.any())}
    if path.endswith('.pkl'):
        arrays = _numbers(_load_pickle(path), [])
        return {'numeric_arrays': len(arrays), 'numbers': int(sum(a.size for a in arrays)),
                'finite': all(bool(np.isfinite(a.astype(float)).all()) for a in arrays),
                'nonzero_numbers': int(sum(np.count_nonzero(a) for a in arrays))}
    if path.endswith('.json'):
        with open(path) as f:
            return {'json_items': len(json.load(f))}
    return {'bytes': os.path.getsize(path)}


def check_stage(stage, log_folder, snapshot_folder, label):
    """``{'batches', 'metrics_finite', 'lines', 'files': {rel: what it holds}}`` of one stage."""
    import math
    out = {'files': {}}
    trace = os.path.join(log_folder, label + '_trace.jsonl')
    if os.path.exists(trace):
        with open(trace) as f:
            batches = [json.loads(line) for line in f]
        values = [float(v) for _, _, metrics in batches for _, v in metrics]
        out['batches'] = len(batches)
        out['metrics_finite'] = all(math.isfinite(v) for v in values)
        out['last_metrics'] = batches[-1][2] if batches else []
    if stage.get('lines'):
        with open(os.path.join(log_folder, label + '.log'), errors='replace') as f:
            out['lines'] = [line.rstrip('\n') for line in f
                            if re.search(stage['lines'], line.rstrip('\n'))]
    folder = os.path.join(snapshot_folder, stage['name'])
    for root, _, files in os.walk(folder):
        for name in sorted(files):
            path = os.path.join(root, name)
            out['files'][os.path.relpath(path, folder)] = _check_file(path)
    out['all_finite'] = out.get('metrics_finite', True) and all(
        f.get('finite', True) for f in out['files'].values())
    return out
