"""Federated averaging of a logistic-regression model, with the gradients summed by icnd.

Run from a checkout::

    python -m apps.fedavg [--topology topologies/reduce5.toml] [--group workers] [--rounds 20]
                          [--lr 0.5] [--samples 2000] [--features 10] [--seed 0]

The algorithm
-------------
Synthetic binary classification data (``make_data``): ``n`` samples of ``d``
Gaussian features, labelled by a hidden weight vector plus Gaussian noise, is
split into one shard per member of a reduction group, of unequal sizes
(``split``: shard k holds a share proportional to k + 1).

Every worker holds the same model ``theta = [w..., b]`` (initially zero).  In
each round every worker computes, on its own shard and at the current
``theta``, the *sums* over its samples of the logistic-loss gradient, of the
loss and of the correct predictions, plus its sample count ``n_k`` -- packed
into one float64 vector ``[grad_w..., grad_b, loss, correct, n_k]``
(``local_stats``).  Summing those vectors over the workers gives the same
vector the whole data set would give, so every worker can take the exact
full-batch gradient-descent step ``theta -= lr * total_grad / total_n``
(``step``).  With one full-batch local step per round, FedAvg (average the
locally updated models, weighted by ``n_k``) and FedSGD (average the
gradients, weighted by ``n_k``) are the same update, and both equal
centralised gradient descent on the pooled data.

The loss reported for a round is the global mean logistic loss (and accuracy)
of the model the round *starts* with: it comes out of the same summed vector
as the gradient, so it costs no extra exchange.  The final loss and accuracy
are those of the model after the last round, evaluated on the full data.

What icnd does
--------------
The sum is one ``allreduce`` per round: every worker contributes its vector
under the name of (group, round) and asks for the aggregate of that name.
The network combines contributions on the way to the group's rendezvous
(in reduce5: a1 sums w1..w3, a2 sums w4..w5, r sums a1 and a2) and answers
every worker's request with the same aggregate, computed once.  No worker
talks to another worker, and no parameter server exists.

``train_local`` runs the same algorithm in one process with plain numpy, on
the pooled data; the app prints both loss curves side by side and their
largest difference, which is float64 rounding (the network adds the shards'
sums in a different order).
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import trio

import icnd
from icnd.topology import GroupMember, Network, launch, load

__all__ = [
    "Trained",
    "Worker",
    "fedavg",
    "local_stats",
    "make_data",
    "run_fedavg",
    "split",
    "step",
    "train_local",
]

DEFAULT_TOPOLOGY = Path(__file__).resolve().parents[1] / "topologies" / "reduce5.toml"
TOLERANCE = 1e-9  # relative: the network's and the single process's losses agree to float64 rounding


# --------------------------------------------------------------------------- data


def make_data(samples: int, features: int, seed: int = 0, noise: float = 0.5) -> tuple[np.ndarray, np.ndarray]:
    """``(X, y)``: ``samples`` x ``features`` standard Gaussian features and 0/1
    labels from a hidden weight vector and bias, plus Gaussian noise on the logit.
    Deterministic in ``seed``."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((samples, features))
    w_true = rng.standard_normal(features)
    b_true = rng.standard_normal()
    logits = X @ w_true + b_true + noise * rng.standard_normal(samples)
    return X, (logits > 0).astype(np.float64)


def split(X: np.ndarray, y: np.ndarray, parts: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """``parts`` shards of unequal sizes: shard k gets a share proportional to k + 1
    (every shard gets at least one sample)."""
    n = len(y)
    if parts < 1 or n < parts:
        raise ValueError(f"cannot split {n} samples into {parts} non-empty shards")
    weights = np.arange(1, parts + 1)
    sizes = np.maximum(1, n * weights // weights.sum())
    sizes[-1] = n - sizes[:-1].sum()
    cuts = np.cumsum(sizes)[:-1]
    return list(zip(np.split(X, cuts), np.split(y, cuts)))


# --------------------------------------------------------------------------- the model


def local_stats(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Sums over the samples of (X, y) at model ``theta = [w..., b]``, as one
    float64 vector ``[grad_w..., grad_b, loss, correct, n]``.

    Sums, not means: summing these vectors over shards gives exactly the
    vector of the pooled data, whatever the shard sizes."""
    w, b = theta[:-1], theta[-1]
    z = X @ w + b
    residual = 0.5 * (1.0 + np.tanh(0.5 * z)) - y  # sigmoid(z) - y, without overflow
    loss = np.logaddexp(0.0, z) - y * z  # -log-likelihood, numerically stable
    correct = (z > 0) == (y > 0.5)
    return np.concatenate([X.T @ residual, [residual.sum(), loss.sum(), correct.sum(), len(y)]])


def step(theta: np.ndarray, total: np.ndarray, lr: float) -> tuple[np.ndarray, float]:
    """One gradient-descent step from summed statistics ``total`` (see
    `local_stats`): the new model and the mean loss of ``theta``."""
    n = total[-1]
    grad = total[: len(theta)] / n
    return theta - lr * grad, float(total[len(theta)] / n)


def evaluate(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """Mean logistic loss and accuracy of ``theta`` on (X, y)."""
    stats = local_stats(theta, X, y)
    n = stats[-1]
    return float(stats[-3] / n), float(stats[-2] / n)


@dataclass
class Trained:
    """A training run: the mean loss at the start of each round, and the final model."""

    losses: list[float]
    theta: np.ndarray


# --------------------------------------------------------------------------- single process


def fit_local(X: np.ndarray, y: np.ndarray, rounds: int, lr: float) -> Trained:
    """Full-batch gradient descent on the pooled data, in one process."""
    theta = np.zeros(X.shape[1] + 1)
    losses = []
    for _ in range(rounds):
        theta, loss = step(theta, local_stats(theta, X, y), lr)
        losses.append(loss)
    return Trained(losses, theta)


def train_local(X: np.ndarray, y: np.ndarray, rounds: int, lr: float) -> list[float]:
    """The loss per round of `fit_local`."""
    return fit_local(X, y, rounds, lr).losses


# --------------------------------------------------------------------------- over icnd


@dataclass
class Worker:
    """One group member: its connection, its shard and its copy of the model."""

    member: GroupMember
    client: icnd.Client
    X: np.ndarray
    y: np.ndarray
    theta: np.ndarray

    async def round(self, group: str, round_no: int, lr: float, timeout: float) -> float:
        """Contribute this shard's statistics, fetch their sum over the group,
        take the step; returns the global mean loss of the model before it."""
        mine = local_stats(self.theta, self.X, self.y)
        total = await self.client.allreduce(group, round_no, mine, "sum", member=self.member.member_id,
                                            timeout=timeout)
        self.theta, loss = step(self.theta, np.asarray(total, dtype=np.float64), lr)
        return loss


async def fedavg(net: Network, group: str, members: Sequence[GroupMember],
                 shards: Sequence[tuple[np.ndarray, np.ndarray]], rounds: int, lr: float, *,
                 first_round: int = 0, timeout: float = 10.0) -> Trained:
    """Train over the launched topology ``net``: member k of ``members`` (all the
    members of ``group``) holds ``shards[k]``; round t uses reduction round
    ``first_round + t``.  Every worker ends with the same model (checked)."""
    if len(shards) != len(members):
        raise ValueError(f"{len(members)} members but {len(shards)} shards")
    d = shards[0][0].shape[1]
    workers = [Worker(m, await net.connect(m.node), X, y, np.zeros(d + 1)) for m, (X, y) in zip(members, shards)]
    losses: list[float] = []
    for t in range(rounds):
        seen: list[float] = []

        async def run(worker: Worker) -> None:
            seen.append(await worker.round(group, first_round + t, lr, timeout))

        async with trio.open_nursery() as nursery:
            for worker in workers:
                nursery.start_soon(run, worker)
        if len(set(seen)) != 1:
            raise RuntimeError(f"round {t}: workers disagree on the loss: {seen}")
        losses.append(seen[0])
    theta = workers[0].theta
    if any(not np.array_equal(w.theta, theta) for w in workers):
        raise RuntimeError("workers ended with different models")
    return Trained(losses, theta)


async def run_fedavg(net: Network, group: str, members: Sequence[GroupMember], rounds: int, *,
                     samples: int = 2000, features: int = 10, seed: int = 0, lr: float = 0.5,
                     first_round: int = 0, timeout: float = 10.0) -> list[float]:
    """The loss per round of `fedavg` on ``make_data(samples, features, seed)``
    split over ``members``."""
    X, y = make_data(samples, features, seed)
    trained = await fedavg(net, group, members, split(X, y, len(members)), rounds, lr,
                           first_round=first_round, timeout=timeout)
    return trained.losses


# --------------------------------------------------------------------------- command line


def relative_difference(a: Sequence[float], b: Sequence[float]) -> float:
    """Largest |a - b| / max(|b|, tiny) over the pairs."""
    return max((abs(x - z) / max(abs(z), 1e-300) for x, z in zip(a, b)), default=0.0)


async def main_async(args: argparse.Namespace) -> int:
    spec = load(args.topology)
    if args.group not in spec.groups:
        print(f"fedavg: {args.topology} has no group {args.group!r} (groups: {', '.join(spec.groups) or 'none'})",
              file=sys.stderr)
        return 2
    members = spec.groups[args.group].members
    X, y = make_data(args.samples, args.features, args.seed)
    try:
        shards = split(X, y, len(members))
    except ValueError as exc:
        print(f"fedavg: {exc}", file=sys.stderr)
        return 2
    print(f"{args.samples} samples x {args.features} features, shards "
          + ", ".join(f"{m.member_id}:{len(s[1])}" for m, s in zip(members, shards))
          + f"; {args.rounds} rounds, lr {args.lr}")
    print(f"launching {args.topology} ...", flush=True)
    async with launch(args.topology) as net:
        started = trio.current_time()
        net_run = await fedavg(net, args.group, members, shards, args.rounds, args.lr, timeout=args.timeout)
        elapsed = trio.current_time() - started
    local = fit_local(X, y, args.rounds, args.lr)

    print(f"\n{'round':>5}  {'loss (icnd)':>20}  {'loss (1 process)':>20}  {'|diff|':>9}")
    for t, (a, b) in enumerate(zip(net_run.losses, local.losses)):
        print(f"{t:>5}  {a:>20.15f}  {b:>20.15f}  {abs(a - b):>9.2e}")
    max_abs = max((abs(a - b) for a, b in zip(net_run.losses, local.losses)), default=0.0)
    rel = relative_difference(net_run.losses, local.losses)
    theta_diff = float(np.max(np.abs(net_run.theta - local.theta)))
    print(f"\nmax |loss difference| {max_abs:.3e} (relative {rel:.3e}); max |model difference| {theta_diff:.3e}")
    for label, trained in (("icnd", net_run), ("1 process", local)):
        loss, accuracy = evaluate(trained.theta, X, y)
        print(f"final ({label}): loss {loss:.6f}, accuracy {accuracy:.2%}")
    print(f"{args.rounds} rounds over {len(members)} workers in {elapsed:.2f} s")
    if not rel <= TOLERANCE:
        print(f"fedavg: the curves differ by more than {TOLERANCE:g} (relative)", file=sys.stderr)
        return 1
    return 0


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m apps.fedavg", description=__doc__.split("\n\n")[0])
    p.add_argument("--topology", default=str(DEFAULT_TOPOLOGY), help="topology file (default: %(default)s)")
    p.add_argument("--group", default="workers", help="reduction group whose members train (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=20, help="training rounds (default: %(default)s)")
    p.add_argument("--lr", type=float, default=0.5, help="learning rate (default: %(default)s)")
    p.add_argument("--samples", type=int, default=2000, help="samples in all (default: %(default)s)")
    p.add_argument("--features", type=int, default=10, help="features per sample (default: %(default)s)")
    p.add_argument("--seed", type=int, default=0, help="data seed (default: %(default)s)")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per allreduce (default: %(default)s)")
    args = p.parse_args(argv)
    if args.rounds < 0 or args.samples < 1 or args.features < 1 or not math.isfinite(args.lr):
        p.error("--rounds must be >= 0, --samples and --features >= 1, --lr finite")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    return trio.run(main_async, parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
