"""Process checks shared by tests that kill things and expect nothing left behind."""

from __future__ import annotations

import os


def alive(pid: int) -> bool:
    """Whether the process runs; a zombie (exited, not yet reaped by its parent) counts as gone."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"  # the state follows the parenthesised command
    except FileNotFoundError:
        return False
