"""The `coevo` command line, one module per stage (mining, curating, scoring, browsing, publishing,
live, environments; :data:`_COMMANDS` says which holds each command): each command parses, calls
one library function, prints. ``options`` holds what several commands share: the options, the
consoles, the progress bar. A command's module is imported when the command runs (or lists its
help), so ``coevo tasks`` loads no Docker, Maven or curation code.
"""

from __future__ import annotations

import importlib
import sys

import click

from tasks import CoevoError, Terminated, disk_full, stop_on_signals

from .. import __version__
from .options import err, one_line

_COMMANDS = {
    "mine": ("mining", "mine_command"),
    "discover": ("mining", "discover_command"),
    "curate": ("curating", "curate_command"),
    "funnel": ("curating", "funnel_command"),
    "revalidate": ("curating", "revalidate_command"),
    "score": ("scoring", "score_command"),
    "leaderboard": ("scoring", "leaderboard_command"),
    "show-run": ("scoring", "show_run_command"),
    "candidates": ("browsing", "candidates"),
    "tasks": ("browsing", "tasks_command"),
    "show-task": ("browsing", "show_task_command"),
    "export": ("publishing", "export_command"),
    "verify": ("publishing", "verify_command"),
    "import": ("publishing", "import_command"),
    "snapshots": ("publishing", "snapshots_command"),
    "site": ("publishing", "site_command"),
    "run": ("live", "run"),
    "example": ("live", "example_command"),
    "schedule": ("live", "schedule_group"),
    "daemon": ("live", "daemon_command"),
    "cycles": ("live", "cycles_command"),
    "env": ("environments", "env"),
}
"""Each command's name → the stage module and the name it has there."""


class _Stages(click.Group):
    """A group whose commands are loaded from their stage's module when asked for
    (click's documented pattern for lazily loaded subcommands)."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(_COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in _COMMANDS:
            return None
        module, name = _COMMANDS[cmd_name]
        command = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        assert isinstance(command, click.Command), (cmd_name, command)
        return command


@click.group(cls=_Stages, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="coevo")
def app() -> None:
    """Mine, curate and score a live benchmark of real test/code co-evolution."""


_INTERRUPTED = (
    "interrupted; what finished is saved (units in flight are redone): run the command again to resume"
)


def main(argv: list[str] | None = None) -> int:
    """The console script: user errors end in one line on stderr, never a traceback. SIGTERM and
    SIGHUP stop it as Ctrl-C does: the run is recorded as interrupted and its sandboxes removed."""
    stop_on_signals()
    try:
        result = app.main(args=argv, prog_name="coevo", standalone_mode=False)
    except click.exceptions.Exit as exc:
        return exc.exit_code
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 1
    except click.UsageError as exc:
        hint = f" (see '{exc.ctx.command_path} --help')" if exc.ctx else ""
        err.print(f"error: {exc.format_message()}{hint}", highlight=False, soft_wrap=True)
        return 2
    except (click.Abort, KeyboardInterrupt) as exc:  # click turns KeyboardInterrupt into Abort
        err.print(_INTERRUPTED, highlight=False, soft_wrap=True)
        signalled = exc.__cause__ if isinstance(exc, click.Abort) else exc
        return 128 + signalled.signum if isinstance(signalled, Terminated) else 130
    except CoevoError as exc:
        err.print(f"error: {one_line(str(exc))}", highlight=False, soft_wrap=True)
        return 1
    except OSError as exc:
        full = disk_full(exc)
        if full is None:
            raise
        err.print(f"error: {full}; the work done so far is saved", highlight=False, soft_wrap=True)
        return 1
    return result if isinstance(result, int) else 0


def entry_point() -> None:
    sys.exit(main())


if __name__ == "__main__":
    entry_point()
