"""torchax.interop entry points no other case calls: jax_jit and jax_value_and_grad (the
autograd bridge: jax.value_and_grad of a torch function, checked against torch autograd).

Each is looked up through torch_api.torchax_entry, so its presence is recorded and judged
against matrices/apis/torchax.yaml (an entry point missing inside its range is api-drift).
"""

from __future__ import annotations

import numpy as np
import pytest

from harness.incell import numerics
from harness.incell.compat import require
from suites.torchax import cores

A = np.linspace(-2.0, 2.0, 9, dtype=np.float32)
B = np.arange(9, dtype=np.float32) / 4.0


@pytest.fixture(scope="module")
def env():
    return cores.torchax_env()


def test_interop_jax_jit_of_a_torch_function(env, observe):
    torch = require("torch")
    f = lambda a, b: torch.sin(a) * b + 1.0  # noqa: E731
    with env:
        out = cores.interop("jax_jit")(f)(env.to_xla(torch.from_numpy(A)), env.to_xla(torch.from_numpy(B)))
    observe.record(result_type=type(out).__name__)
    got = np.asarray(cores.interop("jax_view")(out))
    a64, b64 = A.astype(np.float64), B.astype(np.float64)
    # sin (1 ulp at sin(a)) scaled by b (exact operand), one multiply and one add (0.5 ulp each):
    # |b| * ulp(sin a) + ulp(sin(a) b) / 2 + ulp(result) / 2.
    s = np.sin(a64)
    bound = np.abs(b64) * numerics.ulp(s, "float32") + 0.5 * numerics.ulp(s * b64, "float32") \
        + 0.5 * numerics.ulp(s * b64 + 1.0, "float32")
    observe.record(values=numerics.assert_within_bound(got, s * b64 + 1.0, bound, why="sin 1 ulp, mul and add 0.5 ulp"))


def test_interop_jax_value_and_grad_matches_torch_autograd(env, observe):
    torch = require("torch")

    def loss(w, x):
        return torch.sum(torch.tanh(x * w) ** 2)

    with env:
        value, grad = cores.interop("jax_value_and_grad")(loss)(env.to_xla(torch.from_numpy(A)),
                                                                env.to_xla(torch.from_numpy(B)))
    view = cores.interop("jax_view")
    w = torch.from_numpy(A.copy()).double().requires_grad_(True)
    ref = loss(w, torch.from_numpy(B).double())
    ref.backward()
    # float32 against a float64 torch reference: 9 terms of tanh(.)^2 (tanh 4 ulp, a square, a
    # product) summed: relative 2e-6 of the sum of |terms| is ~16 ulps; the gradient per element
    # is 2 tanh(xw) (1 - tanh^2) x: a few roundings of values below 4, so 2e-6 absolute is ~16 ulps.
    scale = float(torch.sum(torch.tanh(torch.from_numpy(B).double() * w.detach()) ** 2))
    observe.record(value=numerics.assert_within_bound(np.asarray(view(value)), ref.detach().numpy(), 2e-6 * scale,
                                                      why="9-term float32 sum of tanh^2: ~16 ulps of the sum"))
    observe.record(grad=numerics.assert_within_bound(np.asarray(view(grad)), w.grad.numpy(), 2e-6,
                                                     why="per element a few float32 roundings below 4: ~16 ulps"))
