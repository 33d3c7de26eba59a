"""The multifactor engine, compiled (optional): mypyc's build of `mfcore`, beside the plain Python.

`python -m fscontrol.sim.accel build` compiles a copy of mfcore.py with mypyc (the `accel` extra:
mypy, a C compiler and Python's headers) into `fscontrol/sim/_mfcore_accel*.so`. The copy carries
the SHA-256 of the source it was made from: mfcore.py with the body of easycore.py (the EASY and
backfill steps the static engine runs too) in place of its import, so the compiled loop calls them
natively. `engine()` uses it only while that is still what the files beside it make, so an edited
mfcore.py or easycore.py is never shadowed by an old build. The same operations in
the same order, in C doubles: the compiled engine gives the same start times and usage as the
Python one (tests/test_sim_accel.py runs both). `FSCONTROL_SIM_ENGINE=python` forces the Python one.

`python -m fscontrol.sim.accel status` says which engine runs and why; `build` does nothing when
the compiled engine is up to date (`build --force` rebuilds it).
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from collections.abc import Iterator
from types import ModuleType

HERE = Path(__file__).resolve().parent
SOURCE = HERE / "mfcore.py"
SHARED = HERE / "easycore.py"  # compiled into the same module (see compiled_source)
SHARED_IMPORT = "from .easycore import "
MODULE = "_mfcore_accel"
_cache: dict[str, tuple[ModuleType, str]] = {}


def compiled_source() -> str:
    """What mypyc compiles: mfcore.py with its one import of easycore replaced by easycore's body
    (its `from __future__` line dropped: mfcore's stands first)."""
    src = SOURCE.read_text()
    lines = src.split("\n")
    at = [k for k, line in enumerate(lines) if line.startswith(SHARED_IMPORT)]
    if len(at) != 1:
        raise RuntimeError(f"{SOURCE.name}: expected one line starting {SHARED_IMPORT!r}, found {len(at)}")
    body = [line for line in SHARED.read_text().split("\n") if line != "from __future__ import annotations"]
    return "\n".join(lines[: at[0]] + body + lines[at[0] + 1:])


def source_sha() -> str:
    return hashlib.sha256(compiled_source().encode()).hexdigest()


def _compiled() -> tuple[ModuleType | None, str]:
    """(the compiled engine when it is built from the mfcore.py beside it, else None; why)."""
    try:
        mod = importlib.import_module(f"{__package__}.{MODULE}")
    except ImportError:
        return None, "python (no compiled engine: python -m fscontrol.sim.accel build)"
    if not getattr(mod, "__file__", "").endswith(".so"):
        return None, f"python ({mod.__file__} is not a compiled module)"
    if getattr(mod, "ACCEL_SOURCE_SHA", None) != source_sha():
        return None, "python (the compiled engine was built from another mfcore.py: rebuild it)"
    return mod, f"compiled ({Path(mod.__file__).name})"


def _load() -> tuple[ModuleType, str]:
    """(the engine module, why it is that one)."""
    if os.environ.get("FSCONTROL_SIM_ENGINE", "") == "python":
        return python_engine(), "python (FSCONTROL_SIM_ENGINE=python)"
    mod, why = _compiled()
    return (python_engine() if mod is None else mod), why


def engine() -> ModuleType:
    """The module whose `simulate` runs the multifactor simulation: the compiled one when it is
    built from the mfcore.py beside it, else mfcore itself."""
    if "e" not in _cache:
        _cache["e"] = _load()
    return _cache["e"][0]


def status() -> str:
    engine()
    return _cache["e"][1]


def python_engine() -> ModuleType:
    from . import mfcore

    return mfcore


def compiled_engine() -> ModuleType | None:
    """The compiled engine when it is built from the mfcore.py beside it (whatever
    FSCONTROL_SIM_ENGINE says), else None."""
    return _compiled()[0]


@contextlib.contextmanager
def using(mod: ModuleType) -> Iterator[None]:
    """simulate_multifactor runs `mod`'s engine inside the block (the tests run both engines)."""
    saved = _cache.get("e")
    _cache["e"] = (mod, f"{mod.__name__} (chosen)")
    try:
        yield
    finally:
        if saved is None:
            _cache.pop("e", None)
        else:
            _cache["e"] = saved


def build(*, quiet: bool = False) -> Path:
    """Compile mfcore.py (with easycore.py in it: compiled_source) with mypyc, in a scratch copy of
    the package, and put the extension modules beside mfcore.py. Returns the compiled module's path. Raises RuntimeError
    with mypyc's last lines when it fails (no mypyc, no compiler, a type error)."""
    pkg_root = HERE.parent.parent  # the folder holding the fscontrol package
    sha = source_sha()
    with tempfile.TemporaryDirectory(prefix="fscontrol-accel-") as tmp:
        work = Path(tmp)
        shutil.copytree(pkg_root / "fscontrol", work / "fscontrol",
                        ignore=shutil.ignore_patterns("__pycache__", "*.so"))
        src = work / "fscontrol" / "sim" / f"{MODULE}.py"
        src.write_text(compiled_source() + f'\n\nACCEL_SOURCE_SHA = "{sha}"\n')
        mypyc = [sys.executable, "-m", "mypyc"]
        # (only the compiled module must type-check: the modules it imports stay Python, and a
        # type error in one of them is not this build's concern)
        opts = ["--ignore-missing-imports", "--follow-imports=silent"]
        p = subprocess.run([*mypyc, *opts, f"fscontrol/sim/{MODULE}.py"], cwd=work,
                           capture_output=True, text=True, timeout=1800,
                           env={**os.environ, "MYPYC_OPT_LEVEL": os.environ.get("MYPYC_OPT_LEVEL", "3")})
        if p.returncode != 0:
            tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-12:])
            raise RuntimeError(f"mypyc failed (exit {p.returncode}):\n{tail}")
        built = sorted((work / "fscontrol" / "sim").glob(f"{MODULE}*.so"))
        if not any(b.name.startswith(f"{MODULE}.") for b in built):
            raise RuntimeError(f"mypyc left no {MODULE} extension in {work / 'fscontrol' / 'sim'}")
        for old in HERE.glob(f"{MODULE}*.so"):
            old.unlink()
        for b in built:
            shutil.copy2(b, HERE / b.name)
            if not quiet:
                print(f"built {HERE / b.name}")
    _cache.clear()
    return next(HERE / b.name for b in built if b.name.startswith(f"{MODULE}."))


def built_file() -> Path | None:
    """The compiled engine's file when it was built from the mfcore.py beside it (read from the
    file: a module already imported cannot be reloaded, so a build checks without importing)."""
    sha = source_sha().encode()
    main = sorted(HERE.glob(f"{MODULE}.*.so"))
    # (the literal is in mypyc's library beside the module, _mfcore_accel__mypyc...so)
    if main and any(sha in so.read_bytes() for so in HERE.glob(f"{MODULE}*.so")):
        return main[0]
    return None


def main(argv: list[str] | None = None) -> int:
    """`python -m fscontrol.sim.accel build [--force] | status`: typer, the project's one
    command-line framework, imported here only (the engine's import of this module never loads it).
    Returns the exit code: 0 ok, 1 the build failed, 2 a usage error."""
    import typer

    cli = typer.Typer(help="The compiled multifactor engine: build it (mypyc) or say which engine runs.",
                      no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False, rich_markup_mode=None,
                      context_settings={"help_option_names": ["-h", "--help"]})

    @cli.command("build")
    def build_cmd(force: bool = typer.Option(False, "--force", help="Rebuild even when the compiled engine is up to date.")) -> None:
        """Compile mfcore.py with mypyc (nothing to do when the build is up to date)."""
        if not force and (so := built_file()) is not None:
            print(f"multifactor engine: compiled ({so.name}; up to date, --force rebuilds it)")
            return
        try:
            so = build()
        except (RuntimeError, OSError, subprocess.TimeoutExpired) as e:
            print(f"fscontrol.sim.accel: error: {e}", file=sys.stderr)
            raise typer.Exit(1) from None
        print(f"multifactor engine: compiled ({so.name}, built from {SOURCE})")

    @cli.command("status")
    def status_cmd() -> None:
        """Say which engine runs, and why."""
        print(f"multifactor engine: {status()}")

    try:
        cli(args=sys.argv[1:] if argv is None else list(argv), prog_name="python -m fscontrol.sim.accel")
    except SystemExit as e:
        return e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
