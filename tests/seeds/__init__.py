"""pytest plugins that put a known upstream bug back into real jax / torch_xla (seeded-bug tests)."""
