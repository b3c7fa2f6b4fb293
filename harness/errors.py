"""The one exception type that reaches the user as a single line (exit status 2)."""


class UserError(Exception):
    """Bad input: a malformed file, an unknown name, an impossible request. Printed as one line."""

    exit_code = 2
