"""matplotlib for every PNG fscontrol draws: imported only when a chart is asked for (the `plot`
extra), on the Agg backend, and the figure written with one-line errors."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fscontrol.errors import ConfigError, OutputError

INSTALL = ("install matplotlib into fscontrol's environment (.venv/bin/pip install matplotlib, "
           "or pip install '.[plot]' in the checkout; a site install: scripts/install-site.sh without --no-plot)")


def pyplot(what: str = "the PNG chart", instead: str = "") -> Any:
    """matplotlib.pyplot on the Agg backend, or ConfigError naming `what` needs it (and what to
    use `instead`)."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ConfigError(f"{what} needs matplotlib, which is not installed: {INSTALL}"
                          + (f" (or use {instead})" if instead else "")) from None
    return plt


def save(fig: Any, path: str | Path, what: str = "the chart", **savefig: Any) -> Path:
    """Write `fig` to `path` (its folder must exist: nothing is created) and close it; OutputError
    in one line when it cannot be written."""
    import matplotlib.pyplot as plt

    out = Path(path)
    try:
        if not out.parent.is_dir():
            raise FileNotFoundError(f"folder {out.parent} does not exist")
        fig.savefig(out, **savefig)
    except OSError as e:
        raise OutputError(f"cannot write {what} {out}: {e}") from None
    finally:
        plt.close(fig)
    return out
