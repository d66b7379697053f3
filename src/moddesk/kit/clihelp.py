"""Command groups whose framework text reads Chinese first, like the help texts we write.

Our help texts are bilingual in the code (Chinese first, English kept); the one line the CLI
framework writes itself, the ``--help`` option's, would stay English. A system builds its command
groups with ``BilingualTyper`` instead of ``typer.Typer`` and every group and command under it
gets the bilingual line.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import typer
from typer.core import TyperCommand, TyperGroup

_Function = TypeVar("_Function", bound=Callable[..., Any])

HELP_OPTION_TEXT = "显示本帮助并退出。Show this message and exit."


def _bilingual(option: Any) -> Any:
    if option is not None:
        option.help = HELP_OPTION_TEXT
    return option


class BilingualCommand(TyperCommand):
    """A command whose ``--help`` line is bilingual."""

    # Any: typer >= 0.29 vendors its own click, older typer uses the click package
    def get_help_option(self, ctx: Any) -> Any:
        return _bilingual(super().get_help_option(ctx))


class BilingualGroup(TyperGroup):
    """A command group whose ``--help`` line is bilingual."""

    def get_help_option(self, ctx: Any) -> Any:
        return _bilingual(super().get_help_option(ctx))


class BilingualTyper(typer.Typer):
    """``typer.Typer`` making ``BilingualGroup`` groups and ``BilingualCommand`` commands."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("cls", BilingualGroup)
        super().__init__(**kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Callable[[_Function], _Function]:
        kwargs.setdefault("cls", BilingualCommand)
        return super().command(*args, **kwargs)
