from fscontrol.cli.common import _db, _fail
from fscontrol.store import history as store
from fscontrol.store import ledger

LOAD = store.load_snapshot

class _H:
    def go(self, db):
        return ledger.decision_history(db, "c", 60), ledger.last_decision(db, "c")

@app.command()
def status(db=None, clusters=()):
    from fscontrol.agent import config, pipeline
    from fscontrol.report import status as rstatus
    cfg = config.load(None)
    database = _db(db)
    collect = pipeline.collect
    for c in clusters:
        collect(c, database)
    snap = LOAD(database)
    hist = _H().go(database)
    held = getattr(rstatus, "holds_total")(hist)
    data = rstatus.status_report_rows(snap, hist, held)
    database.execute("delete from holds")
    print(rstatus.format_status(data))
