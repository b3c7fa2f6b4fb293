"""Reduce a finding's standalone script to what still fails the same way (issue 32)."""
