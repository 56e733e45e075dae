"""The lab: programs generated from a grid of ways Python values reach compiled code, proven on
torch (the oracle), and the linter's agreement with what torch did, per dimension.

``program`` (what a generated program is), ``proof`` (what torch did with it) are plain data;
the generator, the prover (the only module that imports torch, in child processes) and the
measure build on them. Nothing in the static linter imports this package.
"""
