"""Regular expressions that users write (a HyperNode's `regexMatch.pattern`), matched in time
linear in the text.

Python's `re` backtracks: `^(a+)+b$` against 26 `a`s and a `c` takes seconds, doubling with each
`a`, with the GIL held, enough to freeze a scheduling cycle or miss a lease renewal. RE2 (through
the `google-re2` binding) never backtracks, and it is what Volcano's Go `regexp` implements, so
a pattern means the same here as there: no backreferences, no lookaround (both refused when the
pattern is compiled, as Go refuses them). Patterns are also bounded in length
(`MAX_PATTERN_CHARS`) and in the memory of their compiled program (`MAX_PROGRAM_BYTES`), so a
`\\pL{1000}` cannot take the process's memory either.
"""

from __future__ import annotations

from typing import Any

import re2

from central.errors import InputError, shown

MAX_PATTERN_CHARS = 1024
MAX_PROGRAM_BYTES = 1 << 20  # RE2's own default is 8 MiB; node-name patterns need a few kB

_OPTIONS = re2.Options()
_OPTIONS.max_mem = MAX_PROGRAM_BYTES
_OPTIONS.log_errors = False  # an invalid pattern is the user's error, told through InputError

Pattern = Any  # re2's compiled pattern (the binding ships no type stubs)


def compile_pattern(pattern: str, where: str, invalid: str = "invalid regular expression") -> Pattern:
    """The compiled pattern; InputError (naming `where`) for one too long, too large compiled,
    or outside RE2's syntax (`invalid` opens that message: the API's own words for the field)."""
    if len(pattern) > MAX_PATTERN_CHARS:
        raise InputError(where, f"is {len(pattern)} characters long; at most {MAX_PATTERN_CHARS} are allowed")
    try:
        return re2.compile(pattern, options=_OPTIONS)
    except re2.error as err:
        why = err.args[0] if err.args else ""
        why = why.decode(errors="replace") if isinstance(why, bytes) else str(why)
        raise InputError(where, f"{invalid}: {shown(pattern)} (RE2 syntax, as Go's regexp): "
                                f"{why}") from None
