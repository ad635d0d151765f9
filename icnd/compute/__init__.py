"""Named functions: the codec of their arguments and results (`values`), and more to come."""
