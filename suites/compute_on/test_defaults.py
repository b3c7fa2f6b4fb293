"""compute_on through jax.export called with export's defaults (no `platforms=`).

The upstream-parity export cases pass `platforms=("cpu",)`. Most users export bare, which
targets the default backend: a release that changed that default (or dropped the host
placement on the path it takes) would pass them. The signature's defaults are recorded and the
relied-on one, `platforms=None` (meaning: the default backend), is an API fact judged against
matrices/apis/jax.yaml.
"""

from __future__ import annotations

import jax
import numpy as np

from harness.incell.compat import jax_api
from harness.incell.defaults import check_defaults
from harness.incell.ir import stablehlo_ops_with_attribute

HOST_KEY = "_xla_compute_type"


def test_export_with_its_defaults_targets_the_default_backend_and_keeps_the_host_placement(observe):
    export = jax_api.export_module()
    check_defaults(observe, "jax.export.export", export.export, {"platforms": None})
    co = jax_api.compute_on()

    @jax.jit
    def f(x):
        return co("device_host")(lambda x: x * np.float32(3.0))(x) + np.float32(1.0)

    x = np.arange(4, dtype=np.float32)
    exp = export.export(f)(x)
    observe.record(platforms=list(exp.platforms))
    assert tuple(exp.platforms) == (jax.default_backend(),), \
        f"export with its defaults targets {exp.platforms}, not the default backend {jax.default_backend()!r}"
    ops = stablehlo_ops_with_attribute(exp.mlir_module(), HOST_KEY)
    observe.record(placed_ops=[f"{op}={v}" for op, v in ops if v])
    # Per op: the multiply is the host function's, the add the caller's (the constant's broadcast
    # may go either way).
    assert {v for op, v in ops if op == "multiply"} == {"host"}, f"the host multiply is not placed on the host: {ops}"
    assert {v for op, v in ops if op == "add"} == {None}, f"the caller's add is placed: {ops}"
    # x * 3 + 1 on small integers is exact in float32: no tolerance.
    observe.close(exp.call(x), x * 3.0 + 1.0, rtol=0, atol=0)
