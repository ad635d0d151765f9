"""Example applications for icnd (run from a checkout: `python -m apps.<name>`)."""
