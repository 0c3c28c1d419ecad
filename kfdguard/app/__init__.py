"""The application layer: what kfdguard does, for the command line and the service alike.

``pipeline`` is the one probe → assess → enforce → re-probe sequence,
``triggers`` names why it runs, ``usecases`` holds the calls both adapters
make, and ``targets`` picks the machine (the only module outside
``kfdguard.simulate`` that may import it).
"""
