"""The one exception type for user errors: the CLI prints it on one line and exits 2."""

# Characters of an error's own text kept in a one-line message or a failure reason.
MESSAGE_LIMIT = 300


class GpucostError(Exception):
    """Bad input or a refused request, explained in one line for the user."""

    exit_code = 2

    def __str__(self) -> str:
        return " ".join(super().__str__().split())


def one_line(exc: BaseException, *, named: bool = False) -> str:
    """An error's text on one line, cut at MESSAGE_LIMIT; `named` puts its type first (for errors not of our making)."""
    text = " ".join(str(exc).split())[:MESSAGE_LIMIT]
    return f"{type(exc).__name__}: {text}" if named else text
