"""Seed an entry-point bug: torchax.interop.jax_value_and_grad returns the right value but a gradient
off by one part in 1024 (as a wrong cotangent scale or a lost term would give).

Only the entry-point case calls interop.jax_value_and_grad; the other gradient cases take jax.grad
through extract_jax and are blind to it.
"""


def pytest_configure(config):
    from torchax import interop

    real = interop.jax_value_and_grad

    def jax_value_and_grad(torch_function, kwargs_for_value_and_grad=None):
        inner = real(torch_function, kwargs_for_value_and_grad)

        def call(*args, **kwargs):
            value, grad = inner(*args, **kwargs)
            return value, grad * (1.0 + 2.0**-10)

        return call

    interop.jax_value_and_grad = jax_value_and_grad
