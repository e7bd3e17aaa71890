"""The one exception type for user errors: the CLI prints it on one line and exits 2."""


class GpucostError(Exception):
    """Bad input or a refused request, explained in one line for the user."""

    exit_code = 2

    def __str__(self) -> str:
        return " ".join(super().__str__().split())
