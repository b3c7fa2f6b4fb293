"""Seed a lowering that keeps an output's pinned_host memory kind on the first such output only
(later ones fall back to device memory), in the exported module itself. The round trip preserves
whatever the export holds, so a check that only compares before with after, or only looks at the
first output, is blind to it."""

import re


def pytest_configure(config):
    import dataclasses

    import jax.export
    from jax._src.interpreters import mlir
    from jax._src.lib.mlir import ir

    real = jax.export.export

    def export(fun, *a, **k):
        exporter = real(fun, *a, **k)

        def call(*args, **kwargs):
            exp = exporter(*args, **kwargs)
            text = exp.mlir_module()
            m = re.search(r"func\.func public @main\(.*?\)\s*->\s*\((.*?)\)\s*\{\s*$", text, re.S | re.M)
            if m is None:
                return exp
            first = text.find('mhlo.memory_kind = "pinned_host"', m.start(1), m.end(1))
            if first < 0:
                return exp
            cut = first + len('mhlo.memory_kind = "pinned_host"')
            results = text[cut:m.end(1)].replace('mhlo.memory_kind = "pinned_host"', 'mhlo.memory_kind = "device"')
            text = text[:cut] + results + text[m.end(1):]
            with mlir.make_ir_context():
                module = ir.Module.parse(text)
                return dataclasses.replace(exp, mlir_module_serialized=mlir.module_to_bytecode(module))

        return call

    jax.export.export = export
