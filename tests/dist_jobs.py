"""Helpers shared by the distributed tests (test_distributed.py, test_horovod.py): the worker
script loaded as a module, jobs run at the same time, and their records compared."""

import importlib.util
import threading

import numpy as np


def load_script(path):
    """The worker script at ``path`` as a module, so a test's reference sees its very data."""
    spec = importlib.util.spec_from_file_location(path.stem, str(path))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def run_concurrently(jobs):
    """``{name: job()}`` for ``{name: job}``, every job in a thread of its own, all at once."""
    done = {}

    def run(name):
        done[name] = jobs[name]()

    threads = [threading.Thread(target=run, args=(name,)) for name in jobs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return done


def params_named(record, prefix):
    """The arrays of ``record`` whose key starts with ``prefix``, the prefix taken off."""
    return {key[len(prefix):]: value for key, value in record.items() if key.startswith(prefix)}


def assert_params_close(got, expected):
    assert sorted(got) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_allclose(got[name], value, rtol=1e-5, atol=1e-6, err_msg=name)
