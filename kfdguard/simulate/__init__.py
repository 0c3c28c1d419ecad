"""Simulated machines: realistic sysfs, /dev, /proc, /etc, /boot and module trees.

A machine is described in YAML (``kfdguard/machines/*.yaml``) or built with
``MachineBuilder``; ``render`` writes it under a directory that a ``Root``
then points at, and ``SimulatedSystem`` answers the calls that need more than
files (device nodes, the KFD ioctl, modprobe, udev) the way the real kernel
would. Nothing here needs root.
"""
