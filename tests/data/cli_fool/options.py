"""A second fooling command line (review of #29): library calls hidden in typer option callbacks
defined once, in cli/options.py, and named by a command as a type alias (`source: SourceOpt`).
The counter read the command's own signature only, so these commands counted no call at all."""

from typing import Annotated, Optional

import typer

from fscontrol.agent import pipeline
from fscontrol.store import history as store


def _collect_first(value):  # a "validation" callback that collects into the history
    if value:
        pipeline.collect(value, store.open_db(None))
    return value


SourceOpt = Annotated[Optional[str], typer.Option("--source", callback=_collect_first)]
DbOpt = Annotated[Optional[str], typer.Option("--db", callback=store.open_db)]  # a library function as the callback
NAME = "collect"
HiddenOpt = Annotated[Optional[str], typer.Option("--x", callback=getattr(pipeline, NAME))]  # computed: unresolvable
