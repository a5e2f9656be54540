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


def printable(text: str) -> str:
    """`text` safe to write to a terminal: what a terminal would act on rather than show (C0 and
    C1 controls, ESC sequences and NUL among them, DEL) and what reorders or hides text (bidi
    overrides and isolates, zero-width and other format characters, line separators) is written
    as a Python escape (`\\x1b`, `\\u202e`). Names and messages come from user files and objects."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)
