"""The one remedy kfdguard carries out for another program: a systemd drop-in that sets its service's
environment (issue 37), written only when an administrator asks for it.

An application verdict (userspace/application_rules.py) names, besides its remedy text, the environment
values of the application's service that the remedy consists of (ollama 0.30 on an integrated GPU:
``OLLAMA_IGPU_ENABLE=1``). ``kfdguard remedy apply ollama`` (as root) and the bus's ``ApplyRemedy``
(polkit's org.kfdguard.configure-applications, then kfdguard-remedy@apply-ollama.service) write them as
kfdguard's own drop-in; ``clear`` removes it. Nothing does it on its own: a check only says the remedy.

What it will not do, each a refusal with the reason and the exit status 1:

- write for an application that is not installed, or whose service unit is not (the values would reach
  no process; the message says where to set them instead);
- override a value another file sets (``systemctl edit``'s override.conf, the unit itself, an
  EnvironmentFile=): the administrator's file is changed by the administrator; the message names it;
- replace a file of the same name that kfdguard did not write.

A plan is computed from the machine by the process that writes it (root), never taken from the caller:
the unprivileged service passes only which application, and the unit's instance name is fixed.
"""

from __future__ import annotations

import re

from kfdguard.host.root import SYSTEMD_ADMIN_UNIT_DIR
from kfdguard.record import dataclass

TYPE_CHECKING = False
if TYPE_CHECKING:
    from kfdguard.facts import Facts
    from kfdguard.host.paths import HostPath
    from kfdguard.host.root import Root

# Application kind -> the unit its own installer or package ships (ollama's install.sh writes
# /etc/systemd/system/ollama.service). One row per application whose remedy can be a service value.
SERVICES = {"ollama": "ollama.service"}
ACTIONS = ("apply", "clear")
# Sorted after the unit's own drop-ins' usual numbers; its order does not matter, since a value another
# file sets is refused rather than overridden.
FILE_NAME = "50-kfdguard-remedy.conf"
UNIT_DIR = SYSTEMD_ADMIN_UNIT_DIR
_NAME = re.compile(r"[A-Z_][A-Z0-9_]{0,63}")
_VALUE = re.compile(r"[A-Za-z0-9._:/-]{0,256}")
_OWN_LINE = re.compile(r'Environment="?([A-Z_][A-Z0-9_]{0,63})=([A-Za-z0-9._:/-]{0,256})"?')


class Refusal(Exception):
    """Nothing was written: the message says why and what to do instead."""


class NothingToDo(Refusal):
    """Nothing was written because nothing is asked: a success (exit status 0), not a refusal."""


@dataclass(frozen=True)
class Plan:
    application: str  # the kind: "ollama"
    unit: str  # "ollama.service"
    shown: str  # the drop-in's path on the machine
    environment: tuple[tuple[str, str], ...]  # what the file will hold: kfdguard's earlier values, then the new
    added: tuple[tuple[str, str], ...]  # the values this request adds or changes
    reasons: tuple[str, ...]  # the verdicts the values come from
    text: str  # the file's content


def instance(action: str, application: str) -> str:
    """The instance of kfdguard-remedy@.service for this request: "apply-ollama"."""
    return f"{action}-{application}"


def parse_instance(text: str) -> tuple[str, str]:
    """ "apply-ollama" -> ("apply", "ollama"); a ValueError for anything else (the unit's %i)."""
    action, _, application = text.partition("-")
    if action not in ACTIONS or application not in SERVICES:
        known = ", ".join(instance(a, k) for a in ACTIONS for k in SERVICES)
        raise ValueError(f"{text!r} is not a remedy this version carries out (known: {known})")
    return action, application


def drop_in(root: Root, application: str) -> tuple[HostPath, str]:
    """The drop-in's path under ``root`` and as shown on the machine."""
    shown = f"{UNIT_DIR}/{SERVICES[application]}.d/{FILE_NAME}"
    return root.join(shown), shown


def plan_apply(root: Root, facts: Facts, application: str) -> Plan:
    """What ``remedy apply`` writes for ``application`` on this machine; a Refusal when it must not."""
    from kfdguard.userspace.assess import assess_installed

    unit = SERVICES[application]
    if facts.software is None:
        raise Refusal("the software inventory was not taken")
    verdicts = [v for v in assess_installed(facts).applications if v.kind == application]
    if not verdicts:
        raise Refusal(f"no {application} is installed here (or it shows no AMD GPU to judge)")
    wanted: dict[str, str] = {}
    reasons = []
    for v in verdicts:
        if v.environment:
            wanted.update(v.environment)
            reasons.append(f"{v.application} on {v.slot}: {v.detail}")
    if not wanted:
        said = ", ".join(f"{v.slot} via {v.via}" for v in verdicts)
        others = "; ".join(dict.fromkeys(v.remedy for v in verdicts if v.remedy))
        if others:
            not_env = f"its remedy is not a value of {unit}'s environment"
            raise Refusal(f"{application} takes {said}, and {not_env}: {others}")
        raise NothingToDo(f"nothing to do: {application} takes {said}, and asks no value of {unit}'s environment")
    if not _unit_installed(root, unit):
        values = " ".join(f"{k}={v}" for k, v in wanted.items())
        raise Refusal(
            f"{unit} is not installed, so a drop-in would reach no process: set {values} in the environment "
            f"that starts {application}"
        )
    path, shown = drop_in(root, application)
    own = read_own(path, shown)
    for setting in facts.software.env:
        theirs = setting.unit == unit and setting.name in wanted and shown not in setting.origin
        if theirs and setting.value != wanted[setting.name]:
            raise Refusal(
                f"{setting.name}={setting.value} is set by {setting.origin}: kfdguard does not override another "
                f"file's value; change it there to {setting.name}={wanted[setting.name]}"
            )
    added = tuple((k, v) for k, v in wanted.items() if own.get(k) != v)
    merged = {**own, **wanted}
    environment = tuple(merged.items())
    return Plan(application, unit, shown, environment, added, tuple(reasons), render(application, environment, reasons))


def render(application: str, environment: tuple[tuple[str, str], ...], reasons: list[str] | tuple[str, ...]) -> str:
    from kfdguard.host.files import GENERATED

    why = "".join(f"#   {r}\n" for r in reasons)
    lines = "".join(f"Environment={k}={v}\n" for k, v in environment)
    return (
        f"# {GENERATED} (kfdguard remedy apply {application}), on an administrator's request.\n"
        f"# Why:\n{why}"
        f"# Remove with: kfdguard remedy clear {application}\n"
        f"[Service]\n{lines}"
    )


def read_own(path: HostPath, shown: str) -> dict[str, str]:
    """The values of kfdguard's existing drop-in; a Refusal when the file is there and is not kfdguard's."""
    from kfdguard.host.files import UnsafeTarget, check_target, is_generated

    try:
        if check_target(path) is None:
            return {}
    except UnsafeTarget as exc:
        raise Refusal(f"{shown}: {exc.strerror}") from None
    if not is_generated(path):
        raise Refusal(f"{shown} exists and kfdguard did not write it: kfdguard does not change it")
    try:
        with open(path, "rb") as handle:
            text = handle.read(1 << 16).decode("utf-8", "replace")
    except OSError as exc:
        raise Refusal(f"{shown}: {exc.strerror or exc}") from None
    values = {}
    for line in text.splitlines():
        if line.startswith("Environment="):
            match = _OWN_LINE.fullmatch(line.strip())
            if match is None:  # edited by hand into something kfdguard would not write
                raise Refusal(f"{shown}: a line kfdguard did not write ({line[:80]!r}); fix or remove the file")
            values[match.group(1)] = match.group(2)
    return values


def valid(name: str, value: str) -> bool:
    """Whether a value is one kfdguard writes: a plain name and a value needing no quoting."""
    return _NAME.fullmatch(name) is not None and _VALUE.fullmatch(value) is not None


def write(root: Root, plan: Plan) -> bool:
    """Write the plan's drop-in (its directory made if missing); False when it already says this."""
    import os

    from kfdguard.host.files import atomic_write

    if not all(valid(k, v) for k, v in plan.environment):
        raise Refusal("a value is not one kfdguard writes")  # the rules' own constants: cannot happen
    path = root.join(plan.shown)
    try:
        with open(path, encoding="utf-8") as handle:
            if handle.read() == plan.text:
                return False
    except OSError:
        pass
    if not os.path.isdir(path.parent):
        if os.path.islink(path.parent):
            raise Refusal(f"{plan.shown.rsplit('/', 1)[0]} is a symbolic link; kfdguard does not write through it")
        os.makedirs(path.parent, mode=0o755, exist_ok=True)
    atomic_write(path, plan.text.encode(), 0o644)
    return True


def clear(root: Root, application: str) -> str | None:
    """Remove kfdguard's drop-in for ``application``: its path as shown, None when there was none."""
    import os

    path, shown = drop_in(root, application)
    read_own(path, shown)  # refuses a file that is not kfdguard's
    try:
        os.unlink(path)
    except FileNotFoundError:
        return None
    return shown


def _unit_installed(root: Root, unit: str) -> bool:
    from kfdguard.host.root import SYSTEMD_UNIT_DIRS

    return any((root.join(d) / unit).is_file() for d in SYSTEMD_UNIT_DIRS)


__all__ = ["ACTIONS", "FILE_NAME", "SERVICES", "NothingToDo", "Plan", "Refusal", "clear", "instance", "parse_instance",
           "plan_apply", "read_own", "render", "write"]  # fmt: skip
