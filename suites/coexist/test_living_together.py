"""Living together: importing a bridge leaves torch's own features as they are, and the order in
which jax and the bridge are imported does not change what they do.

Every comparison is between fresh interpreters of the cell (suites/coexist/living.py), never
within the test process, whose imports other cases already decided:
- `test_torch_feature_is_unchanged_by_importing[BRIDGE-FEATURE]`: a process that imported only
  torch vs one that imported the bridge, then jax; FEATURE is torch.compile with its default
  backend (a function of a tensor, one without tensor inputs, a module), device and accelerator
  queries, default device and dtype, torch.utils.dlpack, seeded random numbers, CPU autocast;
- `test_import_order_gives_the_same_results[BRIDGE]`: `import jax` then the bridge vs the bridge
  then jax: every torch fact above, jax's backend, devices, x64 flag and a jnp result, and the
  other families' scenarios in small, through the bridge: torchax's call_jax, conversions per dtype,
  interop.jax_jit, jax.grad through extract_jax(nn.Linear); torch_xla's call_jax of jnp.sin and with
  statics, an unused argument and two outputs.
"""

from __future__ import annotations

import pytest

from suites.coexist import cores

BRIDGES = ("torchax", "torch_xla")  # literals: case ids are read statically (harness/judge/testids.py)
FEATURES = ("compile", "devices", "defaults", "dlpack", "rng", "autocast")


@pytest.mark.parametrize("feature", FEATURES)
@pytest.mark.parametrize("bridge", BRIDGES)
def test_torch_feature_is_unchanged_by_importing(bridge, feature, observe):
    cores.torch_feature_is_unchanged_by_importing(bridge, feature, observe)


@pytest.mark.parametrize("bridge", BRIDGES)
def test_import_order_gives_the_same_results(bridge, observe):
    cores.import_order_gives_the_same_results(bridge, observe)
