"""Progress of long commands on stderr: a bar on a terminal, nothing when piped or quiet.

    with progress_bar("scheduling", total=cycles) as step:
        for ...: step()              # one unit done
        step(0, "binding")           # a new stage, nothing done
        step(0, completed=3.5)       # where the work stands, for work measured, not counted

Every bar a command draws is this one: it redraws one line in place and clears it when done
(no stale 0 % or 25 % lines left above the result), and draws nothing when stderr is not a
terminal. stdout stays the command's result alone, so `caldera simulate > out.txt` and pipes
see no bar.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TaskProgressColumn, TextColumn, TimeElapsedColumn

Step = Callable[..., None]


@contextmanager
def progress_bar(description: str, total: float | None, enabled: bool = True, counted: bool = True) -> Iterator[Step]:
    """A `step(advance=1, description=None, completed=None)` callable; `total` None for work of
    unknown size. `counted`: show "done/total" (units of work); else a percentage (a measure,
    such as simulated seconds)."""
    console = Console(file=sys.stderr)
    if not enabled or not console.is_terminal:
        yield lambda advance=1, description=None, completed=None: None
        return
    amount: ProgressColumn = MofNCompleteColumn() if counted else TaskProgressColumn()
    columns = (TextColumn("{task.description}"), BarColumn(), amount, TimeElapsedColumn())
    # Results printed meanwhile go through the bar's console only when stdout is the same
    # terminal; stdout to a file or pipe is left alone.
    with Progress(*columns, console=console, transient=True, redirect_stdout=sys.stdout.isatty(),
                  redirect_stderr=False) as progress:
        task = progress.add_task(description, total=total)

        def step(advance: float = 1, description: str | None = None, completed: float | None = None) -> None:
            progress.update(task, advance=None if completed is not None else advance, completed=completed,
                            description=description or progress.tasks[0].description)

        yield step
