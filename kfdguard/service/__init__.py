"""The guardian service: the boot pass, then the system-bus API.

main.py runs the boot pass with no event loop and no D-Bus library loaded,
reports READY, and only then imports asyncio and the D-Bus stack (loop.py).
core.py holds the published Status and the one transition point; checks.py
is the one request queue (SIGHUP, device events, Reload, each with its
trigger); dbusapi.py adapts it to org.kfdguard.Guardian1; polkit.py asks
polkitd; backend.py is the one module that imports a D-Bus library
(dbus-fast, or dbus-next). Which machine it serves and where its device
events come from are chosen outside, by kfdguard.app.targets.
"""
