"""Run code right after a real package's own import, in this process and in every fresh Python
process it starts (the coexist family compares fresh processes): an import hook here, and the same
hook in a sitecustomize.py that PYTHONPATH hands to child processes.

The code runs with the module's own globals, so what it imports counts as imported by the module.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import tempfile
from pathlib import Path

_HOOK = '''
import importlib.util as _seams_util
import sys as _seams_sys


class _SeamsAfterImport:
    def find_spec(self, name, path=None, target=None):
        if name != {module!r}:
            return None
        _seams_sys.meta_path.remove(self)
        spec = _seams_util.find_spec(name)
        real_exec = spec.loader.exec_module

        def exec_module(module):
            real_exec(module)
            exec({code!r}, module.__dict__)

        spec.loader.exec_module = exec_module
        return spec


_seams_sys.meta_path.insert(0, _SeamsAfterImport())
'''


def after_import(module: str, code: str) -> None:
    """Run `code` in `module`'s namespace after its real import, here and in child processes."""
    hook = _HOOK.format(module=module, code=code)
    if module in sys.modules:  # imported already (a plugin imports jax early): run the code on it now
        exec(code, sys.modules[module].__dict__)
    else:
        assert importlib.util.find_spec(module) is not None, f"{module} is not installed in this cell"
        exec(hook, {"__name__": "seams_seed"})  # this process
    folder = Path(tempfile.mkdtemp(prefix="seams-seed-"))
    (folder / "sitecustomize.py").write_text(hook)  # every fresh interpreter this process starts
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(folder), os.environ.get("PYTHONPATH")]))
