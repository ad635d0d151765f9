"""Named functions.

- `values`: the codec of their arguments and results (never pickled);
- `registry`: the `icnd.function` decorator, ``MODULE:CALLABLE`` loading,
  the per-function settings a host needs;
- `rice`: the call protocol both sides share (names, proofs, session keys);
- `caller` / `host`: its two sides, written against `icnd.endpoint.Endpoint`;
  the host keeps the sessions it granted in `host_sessions` and the results
  it handed out thunks for in `host_jobs`;
- `pool`: the worker threads or processes a host runs sync functions in;
- `named` / `resolve`: arguments and results by name (`icnd.Ref`,
  `icnd.Future`) and how both sides fetch them.
"""
