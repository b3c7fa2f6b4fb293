"""Seed a per-op lowering bug: compute_on("device_host") puts `_xla_compute_type = "host"` on the
first call site of a module only; later host calls (a gradient's derivative call, a second use of
the host function) lower as device calls. The ops inside the host functions keep theirs.

A check that the attribute appears somewhere in the module passes; the per-call-site invariant
(every host call carries it) must not. stream_on_first_op_only.py is the gpu_stream twin.
"""


def pytest_configure(config):
    from jax._src.interpreters import mlir

    real = mlir.wrap_compute_type_in_place
    annotated: set[int] = set()  # modules (the ir.Module every lowering context of one module shares)

    def wrap_compute_type_in_place(ctx, op):
        eqn = getattr(ctx, "jaxpr_eqn_ctx", None)
        compute_type = getattr(eqn, "compute_type", None) or ""
        call = getattr(getattr(ctx, "primitive", None), "name", "") in ("jit", "pjit", "closed_call")
        if call and compute_type and not compute_type.startswith("gpu_stream:"):
            key = id(ctx.module_context.module)
            if key in annotated:
                return
            annotated.add(key)
        real(ctx, op)

    mlir.wrap_compute_type_in_place = wrap_compute_type_in_place
