"""Front ends: the command line, the resident server and its client, the flake8 plugin."""
