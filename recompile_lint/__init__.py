"""recompile-lint: find the code that makes torch.compile recompile."""

__version__ = "0.1.0"
