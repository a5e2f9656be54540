"""The scheduler configuration file is re-read on change; an invalid one keeps the last good."""

from __future__ import annotations

import os

import pytest

from central.errors import InputError
from central.scheduler import load_config
from central.scheduler.loop import ConfigFile

GOOD = 'actions: "enqueue, allocate"\ntiers:\n- plugins:\n  - name: gang\n'
BETTER = 'actions: "enqueue, allocate, backfill"\ntiers:\n- plugins:\n  - name: gang\n  - name: priority\n'


def write(path, text: str, stamp: int) -> None:
    path.write_text(text)
    os.utime(path, (stamp, stamp))  # distinct mtimes without sleeping


@pytest.mark.parametrize("bad", [
    pytest.param('actions: "enqueue, allocate, dance"\n', id="unknown-action"),
    pytest.param("actions: [unclosed\n", id="malformed-yaml"),
    pytest.param('actions: "allocate"\ntiers:\n- plugins:\n  - name: nosuch\n', id="unknown-plugin"),
])
def test_invalid_config_keeps_the_last_good_one(tmp_path, bad):
    path = tmp_path / "volcano-scheduler.conf"
    write(path, GOOD, 1000)
    config = ConfigFile(str(path), load_config, None)
    first = config.current()
    assert first.actions == ("enqueue", "allocate")
    write(path, bad, 2000)
    assert config.current() is first and config.rejected == 1
    write(path, BETTER, 3000)
    assert config.current().actions == ("enqueue", "allocate", "backfill")
    assert config.reloads == 1


def test_invalid_config_at_start_is_an_input_error(tmp_path):
    path = tmp_path / "volcano-scheduler.conf"
    path.write_text('actions: "dance"\n')
    with pytest.raises(InputError, match="dance"):
        ConfigFile(str(path), load_config, None)


def test_missing_config_at_start_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="No such file"):
        ConfigFile(str(tmp_path / "nope.conf"), load_config, None)
