"""``python -m recompile_lint``: the same command as the ``recompile-lint`` script."""

from recompile_lint.frontends.main import run

if __name__ == "__main__":
    run()
