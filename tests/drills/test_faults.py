"""Drill scenarios for the runner: each one dies the way real interop bugs do. Run only by tests/test_drills.py."""

import ctypes
import os
import time


def test_ok_before():
    assert True


def test_segfault():
    ctypes.string_at(0)  # SIGSEGV, like a bad buffer handed across the seam


def test_abort():
    os.abort()  # SIGABRT, like pre-fix call_jax's "Call applied function arity must match"


def test_hang():
    time.sleep(600)


def test_ok_after():
    assert True
