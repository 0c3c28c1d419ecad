"""Compute-ready as a state programs can wait for (issue 17).

The service's READY=1 says the service is up, in any state; what consumers
(ollama, llama-server, a batch job) need is "a GPU can compute". Three views
of that one fact, all decided by ``condition.satisfied``:

- ``/run/kfdguard/ready``: present (world-readable, shell-sourceable KEY=value)
  only while compute is ready as configured (``compute.require``); written and
  removed by the service at its one transition point (``marker.py``);
- ``kfdguard wait``: blocks until ready, watching the bus signals, or the
  marker through inotify when there is no bus (``wait.py``);
- ``kfdguard-compute.target``: reached through ``kfdguard-wait.service``, a
  oneshot running ``kfdguard wait`` (``units/``).
"""
