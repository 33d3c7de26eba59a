# the commands of the second fooling command line: each library call in tests/data/cli_fool/options.py
from fscontrol.cli import options
from fscontrol.cli.options import DbOpt, HiddenOpt, SourceOpt


@app.command()
def status(source: SourceOpt = None, db: DbOpt = None):
    pass


@app.command()
def history(source: options.SourceOpt = None):
    pass


@app.command()
def fit(x: HiddenOpt = None):
    pass
