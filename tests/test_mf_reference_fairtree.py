"""The multifactor reference's Fair Tree ranking (tests/mf_reference.fair_tree_factors), written
from Slurm's fair_tree.c, against fscontrol's model (model.fairtree, which the engine ranks with
and which matches sprio on the real testbed): the same F for every user on random trees (sub-
accounts beside users, FairShare=parent users and accounts, shares 0, usage 0 and exact ties).
An outside review of #29 found the reference ranked with the model itself."""

from __future__ import annotations

import random

import pytest
from mf_reference import _norm_shares, fair_tree_factors
from test_sim_ftrank_fast import random_rows

from fscontrol.model import fairtree
from fscontrol.model.fairshare import build_tree


def _usage(rows, parent, rng: random.Random) -> dict:
    """Usage of each user association (0, a few shared values for ties, or random), summed into
    every ancestor, as slurmctld charges."""
    usage = {(r.account, r.user): 0.0 for r in rows}
    for r in rows:
        if r.user:
            x = rng.choice([0.0, 0.0, 100.0, 250.0, rng.uniform(0, 1000), rng.uniform(0, 1000)])
            k = (r.account, r.user)
            while True:
                usage[k] += x
                if k not in parent:
                    break
                k = parent[k]
    return usage


@pytest.mark.parametrize("seed", range(200))
def test_the_reference_ranks_as_the_model(seed):
    rng = random.Random(seed)
    rows = list(random_rows(rng, max_kids=6, depth=3))
    parent, _, _ = _norm_shares(rows)
    raw = {(r.account, r.user): (r.raw_shares or 0) for r in rows}
    usage = _usage(rows, parent, rng)
    got = fair_tree_factors(rows, parent, raw, usage)
    tree = build_tree(tuple(rows))
    _, _, lf = fairtree.level_values(tree, dict(usage))
    ranks, _ = fairtree.rank_users(tree, lf)
    n = sum(1 for r in rows if r.user)
    assert got == {k: rank / n for k, rank in ranks.items()}
