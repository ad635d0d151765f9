"""The forwarder (`forwarder`) and its strategies, one file each.

Importing the package loads every strategy file, and each registers its
strategy by name (`icnd.core.fw.strategy.STRATEGIES`): adding a strategy is
adding its file and its import here.
"""

from icnd.core.fw import best_route, load_balance, multicast, round_robin

__all__ = ["best_route", "load_balance", "multicast", "round_robin"]
