"""Fleet outputs: what kfdguard knows, in the formats fleets already read.

Pure renderers (``metrics``: node_exporter's textfile format, ``nfd``: Node
Feature Discovery's feature file, ``cdi``: checking Container Device Interface
specs), one writer (``publish``) and the ``kfdguard metrics`` command (``cli``).
No network port: node_exporter and nfd-worker read the files kfdguard writes.
"""
