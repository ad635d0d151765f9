"""Example applications for icnd, installed with it (``--function apps.functions:NAME=/fn/NAME``;
``python -m apps.fedavg``, whose default topology is the checkout's)."""
