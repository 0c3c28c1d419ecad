"""A small udev rules evaluator for the simulated machine.

It understands what decides device-node permissions for KFD and DRM render
nodes: ``SUBSYSTEM``/``KERNEL``/``ACTION``/``ATTRS{...}`` matches and ``GROUP``/``OWNER``/
``MODE``/``TAG+="uaccess"`` assignments, with later rules overriding earlier
ones and files ordered by name across udev's directories (a file in
/etc/udev/rules.d replaces a same-named one in /usr/lib/udev/rules.d). A rule
line with any other match key is skipped: the simulator would rather miss a
rule than apply one it does not understand.
"""

from __future__ import annotations

import fnmatch
import os

from kfdguard.host.root import Root
from kfdguard.record import dataclass

RULES_DIRS = ("etc/udev/rules.d", "run/udev/rules.d", "usr/lib/udev/rules.d", "lib/udev/rules.d")
_MATCH = {"SUBSYSTEM", "KERNEL", "ACTION"}
_ASSIGN = {"GROUP", "OWNER", "MODE", "TAG"}


@dataclass(frozen=True)
class NodePolicy:
    owner: str = "root"
    group: str = "root"
    mode: int = 0o600  # devtmpfs creates nodes 0600 root:root
    uaccess: bool = False


def _tokens(line: str) -> list[tuple[str, str, str]] | None:
    result = []
    for raw in line.split(","):
        part = raw.strip()
        if not part:
            continue
        for op in ("==", "!=", "+=", "-=", ":=", "="):
            key, sep, value = part.partition(op)
            if sep:
                value = value.strip()
                if len(value) < 2 or value[0] != '"' or value[-1] != '"':
                    return None
                result.append((key.strip(), op, value[1:-1]))
                break
        else:
            return None
    return result


def _attr_name(key: str) -> str | None:
    for prefix in ("ATTRS{", "ATTR{"):
        if key.startswith(prefix) and key.endswith("}"):
            return key[len(prefix) : -1]
    return None


def rule_files(root: Root) -> list[str]:
    chosen: dict[str, str] = {}
    for rel in RULES_DIRS:
        directory = root.path / rel
        try:
            names = os.listdir(directory)
        except OSError:
            continue
        for name in names:
            if name.endswith(".rules") and name not in chosen:
                chosen[name] = str(directory / name)
    return [chosen[name] for name in sorted(chosen)]


def _matches(tokens: list[tuple[str, str, str]], values: dict[str, str], attrs: dict[str, str]) -> bool:
    """Every match key of the rule holds for this device (udev ANDs them)."""
    for key, op, value in tokens:
        attr = _attr_name(key)
        if key in _MATCH or attr:
            actual = values[key] if key in _MATCH else attrs.get(attr or "")
            hit = actual is not None and fnmatch.fnmatchcase(actual, value)
            if (op == "==" and not hit) or (op == "!=" and hit):
                return False
    return True


def _assign(policy: NodePolicy, key: str, op: str, value: str) -> NodePolicy:
    """One assignment of a matching rule; later rules override earlier ones, as in udev."""
    if key == "GROUP":
        return NodePolicy(policy.owner, value, policy.mode, policy.uaccess)
    if key == "OWNER":
        return NodePolicy(value, policy.group, policy.mode, policy.uaccess)
    if key == "MODE":
        try:
            return NodePolicy(policy.owner, policy.group, int(value, 8), policy.uaccess)
        except ValueError:
            return policy
    if key == "TAG" and op in ("+=", "=") and value == "uaccess":
        return NodePolicy(policy.owner, policy.group, policy.mode, True)
    return policy


def _rules(path: str) -> list[list[tuple[str, str, str]]]:
    """The rules of a file that the model understands (a rule with an unknown key is skipped whole)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return []
    rules = []
    for raw in lines:
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        tokens = _tokens(line)
        if tokens and not any(k not in _MATCH | _ASSIGN and not _attr_name(k) for k, _, _ in tokens):
            rules.append(tokens)
    return rules


def policy_for(
    root: Root, subsystem: str, kernel: str, action: str = "add", attrs: dict[str, str] | None = None
) -> NodePolicy:
    """``attrs``: sysfs attributes of the device and its parents (ATTRS{vendor} of the PCI GPU)."""
    policy = NodePolicy()
    values = {"SUBSYSTEM": subsystem, "KERNEL": kernel, "ACTION": action}
    for path in rule_files(root):
        for tokens in _rules(path):
            if _matches(tokens, values, attrs or {}):
                for key, op, value in tokens:
                    policy = _assign(policy, key, op, value)
    return policy
