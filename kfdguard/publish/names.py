"""The D-Bus names of kfdguard, defined once for the service, the client, the tools and the tests.

They must match the shipped files: ``dbus/org.kfdguard.Guardian1.conf``
(bus policy), ``.service`` (activation), ``.xml`` (the interface) and
``polkit/org.kfdguard.policy`` (actions); ``tests/system/test_integration_files.py``
reads those files and compares.
"""

BUS_NAME = "org.kfdguard.Guardian1"
OBJECT_PATH = "/org/kfdguard/Guardian1"
INTERFACE = "org.kfdguard.Guardian1"
ERROR_PREFIX = f"{INTERFACE}.Error."
ERROR_BUSY = ERROR_PREFIX + "Busy"
ERROR_FAILED = ERROR_PREFIX + "Failed"
ERROR_INVALID_ARGS = ERROR_PREFIX + "InvalidArgs"
ERROR_NOT_AUTHORIZED = ERROR_PREFIX + "NotAuthorized"
ERRORS = (ERROR_BUSY, ERROR_FAILED, ERROR_INVALID_ARGS, ERROR_NOT_AUTHORIZED)
ACTION_RELOAD = "org.kfdguard.reload"
ACTION_MANAGE = "org.kfdguard.manage"
# Write or remove an application service's drop-in (kfdguard remedy; issue 37).
ACTION_CONFIGURE = "org.kfdguard.configure-applications"

__all__ = [
    "ACTION_CONFIGURE", "ACTION_MANAGE", "ACTION_RELOAD", "BUS_NAME", "ERRORS", "ERROR_BUSY", "ERROR_FAILED",
    "ERROR_INVALID_ARGS", "ERROR_NOT_AUTHORIZED", "ERROR_PREFIX", "INTERFACE", "OBJECT_PATH",
]  # fmt: skip
