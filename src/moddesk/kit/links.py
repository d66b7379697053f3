"""Links a person copies from a terminal or a log: each alone on its line, never wrapped.

Rich wraps long lines at the terminal width, and at 80 columns when the output is a file or a
pipe, so a login link printed after a label used to break inside its token: the copied link
failed. ``print_link`` prints the label on one line and the URL by itself on the next, with
wrapping and cropping off.
"""

from __future__ import annotations

from rich.console import Console


def print_link(console: Console, label: str, url: str) -> None:
    """``label`` (rich markup allowed) on one line, then ``url`` alone and unwrapped."""
    console.print(label, soft_wrap=True, highlight=False)
    print_unwrapped(console, url)


def print_unwrapped(console: Console, text: str) -> None:
    """``text`` exactly as given: no markup, no highlighting, no wrapping at the console width."""
    console.print(text, soft_wrap=True, markup=False, highlight=False)
