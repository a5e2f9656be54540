"""Progress of long commands on stderr: a bar on a terminal, nothing when piped or quiet.

    with progress_bar("scheduling", total=cycles) as step:
        for ...: step()              # one unit done
        step(0, "binding")           # a new stage, nothing done

stdout stays the command's result alone, so `caldera simulate > out.txt` and pipes see no bar.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

Step = Callable[..., None]


@contextmanager
def progress_bar(description: str, total: int | None, enabled: bool = True) -> Iterator[Step]:
    """A `step(advance=1, description=None)` callable; `total` None for work of unknown size."""
    console = Console(file=sys.stderr)
    if not enabled or not console.is_terminal:
        yield lambda advance=1, description=None: None
        return
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    # Results printed meanwhile go through the bar's console only when stdout is the same
    # terminal; stdout to a file or pipe is left alone.
    with Progress(*columns, console=console, transient=True, redirect_stdout=sys.stdout.isatty(),
                  redirect_stderr=False) as progress:
        task = progress.add_task(description, total=total)

        def step(advance: int = 1, description: str | None = None) -> None:
            progress.update(task, advance=advance, description=description or progress.tasks[0].description)

        yield step
