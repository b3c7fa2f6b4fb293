"""xla-seams: conformance and regression harness for the JAX <-> PyTorch/XLA seams."""

__version__ = "0.1.0"
