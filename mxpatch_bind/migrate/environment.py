"""Private to ``migrate``: what the installed Python and packages have, asked once per scan.

A child process (``migrate`` imports none of the scanned code, and keeps what installed
packages print or crash on out of its own process) imports each module a tree refers to and
walks each dotted name's attributes (importing a submodule where an attribute is missing,
as ``import a.b`` would), and lists what each star-imported module binds. What it cannot
import is *unknown*, never *gone*: the import check reports a package that is not installed.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass, field

_TIMEOUT = 300  # seconds for the whole probe (a large tree imports many packages)
_PROBE = r"""
import importlib, importlib.util, json, os, sys
request = json.loads(sys.stdin.read())
out = os.fdopen(os.dup(1), "w")
os.dup2(os.open(os.devnull, os.O_WRONLY), 1)  # what imported modules print goes nowhere
sys.stdout = sys.stderr
modules, gone, stars, versions = {}, {}, {}, {}

def module(name):
    if name not in modules:
        try:
            modules[name] = importlib.import_module(name)
        except BaseException:
            modules[name] = None
    return modules[name]

def found_spec(name):
    try:
        return importlib.util.find_spec(name) is not None
    except BaseException:  # its parent is no package: no such submodule
        return False

for dotted in request["names"]:
    parts = dotted.split(".")
    obj = module(parts[0])
    if obj is None:
        continue
    top = parts[0]
    versions[top] = str(getattr(obj, "__version__", "")) if top not in sys.stdlib_module_names \
        else "Python " + sys.version.split()[0]
    path = parts[0]
    for part in parts[1:]:
        path += "." + part
        try:
            found = hasattr(obj, part)
        except BaseException:
            break  # an attribute that raises on access exists
        if found:
            try:
                obj = getattr(obj, part)
            except BaseException:
                break
        elif type(obj).__name__ == "module" and module(path) is not None:
            obj = modules[path]
        else:
            if type(obj).__name__ == "module" and found_spec(path):
                break  # a submodule that exists but does not import here (another platform)
            gone[dotted] = path
            break
for name in request["stars"]:
    obj = module(name)
    if obj is not None:
        names = getattr(obj, "__all__", None)
        stars[name] = sorted(names if names is not None else
                             [n for n in dir(obj) if not n.startswith("_")])
out.write(json.dumps({"gone": gone, "stars": stars, "versions": versions}))
out.flush()
"""


@dataclass
class Environment:
    """The probe's answers.

    Attributes
    ----------
    gone : dict
        ``{dotted name asked: its first part that does not exist}``.
    stars : dict
        ``{module: the names its star import binds}`` (importable modules only).
    versions : dict
        ``{top-level package: its version}`` (``'Python 3.11.7'`` for the standard library).
    failure : str or None
        Why the probe gave no answer (then nothing is known to be gone).
    """

    gone: dict = field(default_factory=dict)
    stars: dict = field(default_factory=dict)
    versions: dict = field(default_factory=dict)
    failure: str | None = None


def probe(names, star_modules=()) -> Environment:
    """Ask a child process of this Python which of ``names`` (dotted) are gone, and what
    ``star_modules`` export."""
    request = {"names": sorted(set(names)), "stars": sorted(set(star_modules))}
    if not request["names"] and not request["stars"]:
        return Environment()
    try:
        done = subprocess.run([sys.executable, "-c", _PROBE], input=json.dumps(request),
                              capture_output=True, text=True, timeout=_TIMEOUT)
        answer = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError) as error:
        return Environment(failure=f"the installed packages could not be inspected "
                                   f"({type(error).__name__})")
    return Environment(gone=answer["gone"], stars=answer["stars"], versions=answer["versions"])
