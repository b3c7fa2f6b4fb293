"""What holds for an exported module must hold after jax.export's serialize / deserialize.

The upstream-parity round trip checks one fact (the host attribute is still somewhere). Here the
in-memory export and the one read back are compared op by op: the compute-type and stream
attributes on each op, each argument's and result's sharding and memory kind on @main, the device
count, and the values of calling both. Serialization needs flatbuffers (jax leaves it optional):
the default matrix installs it in jax072-cpu and jax0102-cpu. Cores in suites/compute_on/cores.py.
"""

from __future__ import annotations

from suites.compute_on import cores


def test_serialized_export_keeps_op_attributes_shardings_and_values(observe):
    cores.serialized_export_keeps_op_attributes_shardings_and_values(observe)


def test_serialized_export_keeps_each_outputs_memory_kind(observe):
    cores.serialized_export_keeps_each_outputs_memory_kind(observe)
