"""Tools for development, tests, the demo and the benchmarks: a private bus, a polkit bus,
the D-Bus fuzzer and load generator, the demo. Outside the installed package on purpose
(tests/system/test_layout.py checks the built wheel); run them from the tree (python -m tools.demo).
"""
