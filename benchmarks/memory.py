"""Benchmark 4: resident memory over 1,000 random shape changes, oneDNN's cache cap, and ours.

Each configuration trains a small CNN on 2 CPU contexts in its own subprocess (the oneDNN
settings are process-wide environment variables). *Memory*: new random image sizes at every
step; RSS sampled from /proc/self/statm; growth is the last sample over the one taken after
the warm-up. *Speed*: the price of a cap, where it can hurt: a dozen recurring sizes per
device (aspect-ratio buckets), whose oneDNN primitives a small cap evicts and rebuilds, and
whose executors the package's executor cache (``exec_cache_size``) keeps or reshapes again.
"""

import argparse
import json
import os
import subprocess
import sys
import time

from . import common
from .common import per_device_spec

NAME = "memory"
SIZES = (32, 160)
BATCH_PER_DEVICE = 2
# (height, width) buckets, as an aspect-ratio-grouped detection loader yields them.
BUCKETS = [(64, 64), (64, 96), (96, 64), (80, 120), (120, 80), (96, 96), (96, 144),
           (144, 96), (112, 160), (160, 112), (128, 128), (160, 160)]
POLICY = "MXPATCH_BIND_MKLDNN_CACHE_NUM"
CACHE = "MXNET_MKLDNN_CACHE_NUM"
EXEC_CACHE = "MXPATCH_BIND_EXEC_CACHE_SIZE"  # mxpatch_bind.configure(exec_cache_size=...)

# name -> (module kind, environment for the subprocess, description)
CONFIGS = {
    "per-device, bound at largest": ("largest", {}, "default policy: cap 16"),
    "per-device, bound small, grown": ("grown", {}, "default policy: cap 16"),
    "per-device, unbounded": ("largest", {POLICY: "keep"}, "MXPATCH_BIND_..=keep"),
    "per-device, cap 8": ("largest", {POLICY: "8"}, "MXPATCH_BIND_..=8"),
    "stock, unbounded": ("stock", {}, "MXNet default (-1)"),
    "stock, cap 16 set after import": ("stock-late-cap", {}, "os.environ after bind"),
    "stock, oneDNN off": ("stock", {"MXNET_MKLDNN_ENABLED": "0"}, "MXNET_MKLDNN_ENABLED=0"),
    # glibc raises its mmap threshold after freeing large blocks and then keeps freed ones
    # in the heap; a fixed threshold shows how much of the growth is that.
    "per-device, bound at largest, fixed mmap": ("largest", {"MALLOC_MMAP_THRESHOLD_": "131072"},
                                                 "cap 16, MALLOC_MMAP_THRESHOLD_=131072"),
    "per-device, grown, fixed mmap": ("grown", {"MALLOC_MMAP_THRESHOLD_": "131072"},
                                      "cap 16, MALLOC_MMAP_THRESHOLD_=131072"),
}
SPEED_CONFIGS = {
    "cap 16 (default)": ("buckets", {}, "default policy"),
    "cap 8": ("buckets", {POLICY: "8"}, "MXPATCH_BIND_..=8"),
    "cap 32": ("buckets", {POLICY: "32"}, "MXPATCH_BIND_..=32"),
    "unbounded": ("buckets", {POLICY: "keep"}, "MXPATCH_BIND_..=keep"),
    # The executor cache (8 per device by default) against the 12 buckets: none, and all.
    "cap 16, exec cache 0": ("buckets", {EXEC_CACHE: "0"}, "MXPATCH_BIND_EXEC_CACHE_SIZE=0"),
    "cap 16, exec cache 16": ("buckets", {EXEC_CACHE: "16"}, "MXPATCH_BIND_EXEC_CACHE_SIZE=16"),
}


def run(tiny=False, rounds=None):
    """Memory of every configuration once; speed of the caps ``rounds`` times, alternating."""
    changes, warmup = (30, 10) if tiny else (1000, 200)
    names = list(CONFIGS)
    if tiny:
        # One configuration per kind of module: every code path, a fraction of the time.
        first_of_kind = {}
        for name in names:
            first_of_kind.setdefault(CONFIGS[name][0], name)
        names = list(first_of_kind.values())
    memory = {}
    for name in names:
        common.progress("memory: %s (%d random shape changes)" % (name, changes))
        memory[name] = _run_child(CONFIGS[name], changes, warmup)
    rounds = rounds or (1 if tiny else 3)
    speed_changes, speed_warmup = (20, 10) if tiny else (300, 60)
    speed_names = list(SPEED_CONFIGS)[:1] if tiny else list(SPEED_CONFIGS)
    speed = {name: [] for name in speed_names}
    for index in range(rounds):
        for name in speed_names:
            common.progress("memory: speed round %d/%d, %s (%d bucketed shape changes)"
                            % (index + 1, rounds, name, speed_changes))
            speed[name].append(_run_child(SPEED_CONFIGS[name], speed_changes, speed_warmup))
    return _result(memory, speed, (changes, warmup), (speed_changes, speed_warmup, rounds), tiny)


def _run_child(config, changes, warmup):
    kind, extra_env, _ = config
    env = {key: value for key, value in os.environ.items()
           if key not in (POLICY, CACHE, EXEC_CACHE)}
    env.update(extra_env)
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [package_root, env.get("PYTHONPATH")]))
    completed = subprocess.run(
        [sys.executable, "-m", "benchmarks.memory", "--child", kind,
         "--changes", str(changes), "--warmup", str(warmup)],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True,
        check=False)
    if completed.returncode != 0:
        raise RuntimeError("memory benchmark child %r failed (exit %d):\n%s"
                           % (config, completed.returncode, completed.stderr[-3000:]))
    return json.loads(completed.stdout.strip().splitlines()[-1])


def _device_shapes(rng, kind):
    """Two devices' next shapes: random sizes, or random buckets for ``kind='buckets'``."""
    if kind == "buckets":
        sizes = [rng.choice(BUCKETS) for _ in range(2)]
    else:
        sizes = [(rng.randint(*SIZES), rng.randint(*SIZES)) for _ in range(2)]
    return [(BATCH_PER_DEVICE, 3) + size for size in sizes]


def child(kind, changes, warmup, seed=0):
    """Train through ``changes`` shape changes; RSS samples and seconds per change."""
    import random

    import mxnet as mx
    import numpy as np

    import mxpatch_bind

    rng = random.Random(seed)
    largest = (BATCH_PER_DEVICE, 3, SIZES[1], SIZES[1])
    first = (BATCH_PER_DEVICE, 3, SIZES[0], SIZES[0]) if kind == "grown" else largest
    per_device = kind in ("largest", "grown", "buckets")
    mod = mx.mod.Module(common.small_cnn(), context=common.contexts(2),
                        logger=common.quiet_logger())
    if per_device:
        mxpatch_bind.bind(mod, *per_device_spec([first] * 2))
    else:
        mod.bind([("data", (2 * BATCH_PER_DEVICE,) + first[1:])],
                 [("softmax_label", (2 * BATCH_PER_DEVICE,))])
    mod.init_params(mx.init.Xavier())
    mod.init_optimizer(optimizer_params={"learning_rate": 0.01})
    if kind == "stock-late-cap":
        os.environ[CACHE] = "16"  # after MXNet is loaded: works only if MXNet re-reads it
    trace, seconds = [], []
    for step in range(changes):
        batch = _batch(mx, per_device, _device_shapes(rng, kind))
        mx.nd.waitall()
        start = time.perf_counter()
        mod.forward_backward(batch)
        mod.update()
        mx.nd.waitall()
        seconds.append(time.perf_counter() - start)
        if step == warmup - 1 or (step + 1) % max(1, changes // 20) == 0:
            trace.append((step + 1, common.rss_bytes()))
    return {"kind": kind, "trace": trace, "warmup": warmup,
            "mkldnn_cache_num": os.environ.get(CACHE),
            "ms_per_change_after_warmup": 1e3 * float(np.mean(seconds[warmup:]))}


def _batch(mx, per_device, shapes):
    if per_device:
        return mx.io.DataBatch([[mx.nd.ones(shape)] for shape in shapes],
                               [[mx.nd.zeros((shape[0],))] for shape in shapes])
    # Stock: both devices' images padded to the larger of the two, in one flat batch.
    height = max(shape[2] for shape in shapes)
    width = max(shape[3] for shape in shapes)
    rows = sum(shape[0] for shape in shapes)
    return mx.io.DataBatch([mx.nd.ones((rows, 3, height, width))], [mx.nd.zeros((rows,))])


def _growth(sample):
    return sample["trace"][-1][1] / dict(sample["trace"])[sample["warmup"]]


def _result(memory, speed, memory_params, speed_params, tiny):
    changes, warmup = memory_params
    rows = [{"configuration": name, "setting": CONFIGS[name][2],
             "mkldnn_cache_num": sample["mkldnn_cache_num"],
             "rss_after_warmup_mb": dict(sample["trace"])[warmup] / 2 ** 20,
             "rss_final_mb": sample["trace"][-1][1] / 2 ** 20,
             "growth_after_warmup": _growth(sample), "trace": sample["trace"]}
            for name, sample in memory.items()]
    default = list(SPEED_CONFIGS)[0]
    default_ms = [run["ms_per_change_after_warmup"] for run in speed[default]]
    speed_rows = []
    for name, runs in speed.items():
        ms = [run["ms_per_change_after_warmup"] for run in runs]
        speed_rows.append({"configuration": name, "setting": SPEED_CONFIGS[name][2],
                           "ms_per_change": common.median(ms),
                           "vs_default": common.paired_ratio(ms, default_ms),
                           "rss_final_mb": common.median([r["trace"][-1][1] for r in runs])
                           / 2 ** 20})
    by_name = {row["configuration"]: row for row in rows}
    targets = [common.target("%s: RSS growth after warm-up" % name,
                             by_name[name]["growth_after_warmup"], "< 1.05",
                             by_name[name]["growth_after_warmup"] < 1.05)
               for name in ("per-device, bound at largest", "per-device, bound small, grown")]
    grown = by_name["per-device, bound small, grown"]["rss_final_mb"]
    largest = by_name["per-device, bound at largest"]["rss_final_mb"]
    targets.append(common.target("grown module's final RSS / module bound at largest",
                                 grown / largest, "<= 1.05", grown / largest <= 1.05))
    speed_changes, speed_warmup, rounds = speed_params
    return {"benchmark": NAME, "command": common.command(NAME, tiny), "machine": common.machine(),
            "params": {"changes": changes, "warmup": warmup, "sizes": SIZES,
                       "batch_per_device": BATCH_PER_DEVICE, "devices": 2,
                       "network": "small_cnn", "speed_changes": speed_changes,
                       "speed_warmup": speed_warmup, "speed_rounds": rounds,
                       "buckets": BUCKETS},
            "rows": rows, "speed": speed_rows, "targets": targets}


def format_table(result):
    memory = common.format_table(
        ["random shapes", "setting", "RSS MB after warm-up", "final MB", "growth"],
        [[r["configuration"], r["setting"], r["rss_after_warmup_mb"], r["rss_final_mb"],
          r["growth_after_warmup"]] for r in result["rows"]])
    speed = common.format_table(
        ["bucketed shapes (per-device)", "setting", "ms/change", "× cap 16", "final MB"],
        [[r["configuration"], r["setting"], r["ms_per_change"], r["vs_default"],
          r["rss_final_mb"]] for r in result["speed"]])
    return memory + "\n\n" + speed + "\n" + common.format_targets(result["targets"])


def main(argv=None):
    parser = argparse.ArgumentParser(description="one configuration of the memory benchmark")
    parser.add_argument("--child", required=True,
                        choices=["largest", "grown", "stock", "stock-late-cap", "buckets"])
    parser.add_argument("--changes", type=int, required=True)
    parser.add_argument("--warmup", type=int, required=True)
    args = parser.parse_args(argv)
    print(json.dumps(child(args.child, args.changes, args.warmup)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
