"""compute_on through jax.export called with export's defaults (no `platforms=`).

The upstream-parity export cases pass `platforms=("cpu",)`. Most users export bare, which
targets the default backend: a release that changed that default (or dropped the host
placement on the path it takes) would pass them. The signature's defaults are recorded and the
relied-on one, `platforms=None` (meaning: the default backend), is an API fact judged against
matrices/apis/jax.yaml. The body is a core in suites/compute_on/cores.py.
"""

from __future__ import annotations

from suites.compute_on import cores


def test_export_with_its_defaults_targets_the_default_backend_and_keeps_the_host_placement(observe):
    cores.export_with_its_defaults(observe)
