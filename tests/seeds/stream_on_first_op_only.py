"""Seed a per-op lowering bug: compute_on("gpu_stream:N") annotates only the first op of its region.

The module still carries `_xla_stream_annotation = "N"` somewhere, so a check that the attribute
appears anywhere passes; the per-op invariant (every op of the region, none outside) must not.
"""


def pytest_configure(config):
    from jax._src.interpreters import mlir

    real = mlir.wrap_compute_type_in_place
    annotated: set[int] = set()  # lowering contexts (per module) that already got their one op

    def wrap_compute_type_in_place(ctx, op):
        eqn = getattr(ctx, "jaxpr_eqn_ctx", None)
        compute_type = getattr(eqn, "compute_type", None) or ""
        if compute_type.startswith("gpu_stream:"):
            key = id(ctx.module_context)
            if key in annotated:
                return
            annotated.add(key)
        real(ctx, op)

    mlir.wrap_compute_type_in_place = wrap_compute_type_in_place
