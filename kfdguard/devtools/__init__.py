"""Tools for development, tests and the demo: not used by the installed service."""
