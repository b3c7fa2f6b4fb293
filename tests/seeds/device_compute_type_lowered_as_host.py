"""Seed a placement mix-up in jax's lowering: compute_on('device') lowers its region with
_xla_compute_type = "host", as a mapping that confused the two would. Every older compute_on case
places code with `device_host` or a stream (or is refused before lowering), so none can see it."""


def pytest_configure(config):
    from jax._src.interpreters import mlir

    real = mlir.map_compute_type

    def map_compute_type(c_type):
        return real("device_host" if c_type == "device" else c_type)

    mlir.map_compute_type = map_compute_type
