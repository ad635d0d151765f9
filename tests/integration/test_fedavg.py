"""apps/fedavg.py across real daemons: logistic regression trained by five
workers of topologies/reduce5.toml, gradients summed in the network, matches
the same gradient descent run in one process."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from apps.fedavg import fedavg, fit_local, make_data, run_fedavg, split, train_local
from icnd.topology import launch, load

TOPOLOGY = Path(__file__).resolve().parents[2] / "topologies" / "reduce5.toml"
ROUNDS, SAMPLES, FEATURES, SEED, LR = 5, 200, 5, 3, 0.5


async def test_fedavg_over_icnd_matches_a_single_process() -> None:
    members = load(TOPOLOGY).groups["workers"].members
    X, y = make_data(SAMPLES, FEATURES, SEED)
    shards = split(X, y, len(members))
    assert sorted({len(s[1]) for s in shards}) == [len(s[1]) for s in shards]  # unequal, growing shards
    assert sum(len(s[1]) for s in shards) == SAMPLES
    local = fit_local(X, y, ROUNDS, LR)
    async with launch(str(TOPOLOGY)) as net:
        losses = await run_fedavg(net, "workers", members, ROUNDS, samples=SAMPLES, features=FEATURES,
                                  seed=SEED, lr=LR)
        # a second run on the same network, on fresh reduction rounds, also yields the final model
        trained = await fedavg(net, "workers", members, shards, ROUNDS, LR, first_round=ROUNDS)
    assert len(losses) == ROUNDS
    np.testing.assert_allclose(losses, train_local(X, y, ROUNDS, LR), rtol=1e-9, atol=0)
    np.testing.assert_allclose(trained.losses, losses, rtol=1e-12, atol=0)
    np.testing.assert_allclose(trained.theta, local.theta, rtol=1e-9, atol=1e-12)
    assert abs(losses[0] - np.log(2)) < 1e-12  # the zero model predicts 1/2 everywhere
    assert all(later < earlier for earlier, later in zip(losses, losses[1:]))
