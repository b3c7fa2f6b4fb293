"""Seed a packaging bug: `import torchax` also imports sortedcontainers, a package torchax does not
declare (installed in the cell only because hypothesis needs it; nothing torch or jax import pulls
it in first), as a release that grew an import without a requirement would. Everything works where the package happens to be installed, so only the
declared-dependency case can see it."""

from tests.seeds._after_import import after_import


def pytest_configure(config):
    after_import("torchax", "import sortedcontainers as _seams_undeclared")
