"""Bisection over released versions: find the first release where a scenario changes."""
