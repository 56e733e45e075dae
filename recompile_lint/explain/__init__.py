"""``recompile-lint explain``: map the recompiles of a real run to source lines and findings.

Input is evidence a run already produced: a log with the ``recompiles`` channel (or
``recompiles_verbose``, ``guards``), a ``TORCH_TRACE`` directory, or the verifier's JSON.
Stages: ``inputs`` (detect the kind of input and parse it: ``textlog``, ``trace``,
``verifyjson``) -> ``evidence`` (recompiles, limit hits, as plain data) -> ``match`` (group the
guard failures of each function by guard source and find the static finding that predicted
each one) -> ``render`` (text, json, html). Nothing here imports torch or runs the code the log
names: the log is untrusted text, read and escaped, never evaluated.
"""
