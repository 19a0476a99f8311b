"""One module per management operation, and the registry of them by name."""
