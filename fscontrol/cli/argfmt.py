"""What the argparse commands (forecast_cmd, collect_cmd) share: a help formatter that costs
nothing until help is printed.

argparse's own HelpFormatter imports shutil (and with it bz2 and lzma: about 6 ms, a few percent
of a whole collect) to learn the terminal's width, and it is built every time a parser is, help
or not (add_argument checks each metavar through a formatter). This one asks os for the width, by
shutil.get_terminal_size's rule, and wraps a one-paragraph description only when help is shown.
"""

from __future__ import annotations

import argparse
import os
import sys

DESCRIPTION_WIDTH = 79


def terminal_columns() -> int:
    """shutil.get_terminal_size().columns: $COLUMNS, else the terminal's width, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return columns or 80


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Text with line breaks of its own (the epilog's examples, exit codes) is kept as written;
    a text on one line (the description) is wrapped at DESCRIPTION_WIDTH columns."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None):
        super().__init__(prog, indent_increment, max_help_position, terminal_columns() - 2 if width is None else width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if "\n" in text:
            return super()._fill_text(text, width, indent)
        import textwrap

        return textwrap.fill(text, DESCRIPTION_WIDTH, initial_indent=indent, subsequent_indent=indent)
