"""The exit statuses of `ace-eval` and the click group that applies them; imports only click, so `--help` stays fast.

A command raises; `ReportingGroup.invoke` turns an ACE error or a file-system failure into its message and the notes
a run added (its folder, how to resume it), with the exit status of its family (`cli_error`), never a traceback:
`UserError` and a path the user must change exit 2; `RunError` and other file-system failures (a full disk) exit 1.
"""

from __future__ import annotations

import errno

import click

__all__ = [
    "EXIT_CODES_HELP",
    "EXIT_INTERRUPTED",
    "EXIT_OK",
    "EXIT_RUN_FAILED",
    "EXIT_USER_ERROR",
    "ReportingGroup",
    "RunFailure",
    "UserFix",
    "cli_error",
    "describe_os_error",
    "with_notes",
]

EXIT_OK = 0
EXIT_RUN_FAILED = 1
"""A run failed on the way (a model, the sandbox, a checkpoint, a full disk), or a check found something."""
EXIT_USER_ERROR = 2
"""A user error (a flag, a file, the configuration); the message names the fix."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C)."""

EXIT_CODES_HELP = f"""\b
Exit status:
  {EXIT_OK}    success
  {EXIT_RUN_FAILED}    a run failed (a model, the sandbox, a checkpoint, a full disk): the message says how to
       resume it; or a check found something (scan, verify, benchmark check)
  {EXIT_USER_ERROR}    a user error (a flag, a file, the configuration): the message names the fix
  {EXIT_INTERRUPTED}  interrupted: the message says how to resume the run
"""


class ReportingGroup(click.Group):
    """A click group whose sub-commands' ACE errors and file-system failures exit with a message, not a traceback."""

    def invoke(self, ctx: click.Context) -> object:
        """Run the sub-command; report its error by family (see `EXIT_CODES_HELP`)."""
        try:
            return super().invoke(ctx)
        except KeyboardInterrupt as e:
            click.echo(with_notes("interrupted", e), err=True)
            ctx.exit(EXIT_INTERRUPTED)
        except Exception as e:
            error = cli_error(e)
            if error is None:
                raise
            raise error from None


class UserFix(click.ClickException):
    """A user error, shown as `Error: <message>`: exit status 2."""

    exit_code = EXIT_USER_ERROR


class RunFailure(click.ClickException):
    """A failed run or a file-system failure, shown as `Error: <message>`: exit status 1."""

    exit_code = EXIT_RUN_FAILED


def cli_error(e: BaseException) -> click.ClickException | None:
    """What to show for `e`, or `None` for an exception that is a bug (its traceback is wanted)."""
    from ace.exceptions import AceError, UserError  # here: `ace-eval --help` does not import the library

    if isinstance(e, UserError):
        return UserFix(with_notes(str(e), e))
    if isinstance(e, AceError):
        return RunFailure(with_notes(str(e), e))
    if isinstance(e, OSError) and e.errno != errno.EPIPE:  # click reports a closed pipe itself
        message = with_notes(describe_os_error(e), e)
        return UserFix(message) if e.errno in _PATH_MISTAKES else RunFailure(message)
    return None


_PATH_MISTAKES = frozenset({errno.ENOTDIR, errno.EISDIR, errno.EACCES, errno.EPERM, errno.EROFS})
"""File-system errors the user fixes by naming another path or changing permissions (exit 2)."""


def describe_os_error(e: OSError) -> str:
    """A file-system failure in one sentence with its fix: which file, what happened, what to do."""
    where = f" {e.filename}" if e.filename else ""
    reason = e.strerror or str(e)
    if e.errno in (errno.ENOSPC, errno.EDQUOT):
        return (
            f"no space left on the device writing{where or ' the run folder'} ({reason}): free some space and "
            "resume the run, or start a new one with --output-dir on another disk"
        )
    if e.errno in (errno.ENOTDIR, errno.EISDIR):
        return f"{where.strip() or 'a path'}: {reason}: pass a folder path (e.g. --output-dir DIR) where a folder goes"
    if e.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return f"cannot write{where} ({reason}): make it writable, or pass --output-dir to a writable folder"
    return f"file system error on{where or ' a file'}: {reason} ({type(e).__name__})"


def with_notes(message: str, e: BaseException) -> str:
    """`message` followed by the notes added to `e` on its way up (the run folder, the resume command), control
    characters escaped (a message may quote a trace's id or key)."""
    from ace_eval.text import printable

    notes = getattr(e, "__notes__", None) or []
    return printable("\n".join([message, *notes]))
