"""Errors a user can cause. They carry where the problem is, so the CLI prints one clear line."""

from __future__ import annotations


class InputError(ValueError):
    """Bad user input: a manifest, a quantity, a scheduler configuration.

    `where` names the place as a user would look for it, from the outside in:
    e.g. ``examples/tf.yaml: Pod default/ps-0: spec.containers[0].resources.requests.cpu``.
    """

    def __init__(self, where: str, message: str):
        super().__init__(f"{where}: {message}" if where else message)
        self.where = where
        self.message = message

    def within(self, outer: str) -> "InputError":
        """The same error, located inside `outer` (a file, an object)."""
        where = f"{outer}: {self.where}" if self.where else outer
        return InputError(where, self.message)


def shown(value: object) -> str:
    """`repr` cut to one readable line: error messages quote user data, which may be huge."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}... ({len(text)} characters)"
