"""kfdguard's own D-Bus fuzzer: random and malformed calls against the service on a private bus.

Debian 12 has no dfuzzer package, so this module generates the calls itself
(see ``python -m tools.dbusfuzz --help`` for what it sends and
checks). Three kinds of traffic run at once:

- well-formed but wrong calls through dbus-fast's low-level Message API, on
  several connections as root and, in a second process under setpriv, as an
  unprivileged user;
- malformed messages written byte by byte on a raw socket (invalid UTF-8,
  bodies that do not match their signature, nesting past the limits...),
  first a fixed table that records which ones the bus refuses before the
  service sees them, then random byte mutations of valid calls;
- a well-behaved client that keeps calling GetStatus and Get(State) and
  checks every answer.
"""

from __future__ import annotations

import argparse
import asyncio
import builtins
import contextlib
import json
import math
import os
import random
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kfdguard.publish import names
from kfdguard.publish.names import BUS_NAME, OBJECT_PATH

NAME, PATH, INTERFACE = BUS_NAME, OBJECT_PATH, names.INTERFACE
PROPERTIES = "org.freedesktop.DBus.Properties"
INTROSPECTABLE = "org.freedesktop.DBus.Introspectable"
PEER = "org.freedesktop.DBus.Peer"
BUS = "org.freedesktop.DBus"
STANDARD = (PROPERTIES, INTROSPECTABLE, PEER)
ERROR_NAMESPACES = ("org.freedesktop.DBus.Error.", f"{NAME}.Error.")
XML = Path(__file__).resolve().parents[1] / "kfdguard" / "service" / "org.kfdguard.Guardian1.xml"
CALL_TIMEOUT = 30.0  # longer than any answer the service gives (polkit's interactive bound is 20 s)
DEFAULT_MACHINE = "rx7900xtx-ubuntu2404"

# What a leaked Python failure looks like in a reply: a traceback, a source
# location, or the name of an exception class (builtins and the D-Bus libraries').
_EXCEPTIONS = sorted(
    {n for n, o in vars(builtins).items() if isinstance(o, type) and issubclass(o, BaseException)} - {"Warning"}
    | {"SignatureBodyMismatchError", "InvalidSignatureError", "InvalidMessageError", "InvalidMemberNameError",
       "InvalidInterfaceNameError", "InvalidObjectPathError", "InvalidBusNameError", "InvalidIntrospectionError",
       "DBusError", "YAMLError", "CancelledError", "InvalidStateError"}
)  # fmt: skip
LEAK = re.compile(r"Traceback|File \"[^\"]*\", line \d+|\b(?:" + "|".join(_EXCEPTIONS) + r")\b")

USAGE_EPILOG = """\
DESCRIPTION
  Starts kfdguard's service on a private dbus-daemon that has the project's bus
  policy (or attaches to one already running with --address), then, for
  --duration seconds or --calls calls, sends it random and malformed
  messages while a well-behaved client keeps asking for the status.

  Well-formed calls (dbus-fast's Message API, several connections, pipelined):
    every method of org.kfdguard.Guardian1 (from the interface XML) with the
    right signature and with random ones; Get, GetAll and Set of
    org.freedesktop.DBus.Properties with known and random interface and
    property names; Introspect, Ping and GetMachineId with and without
    arguments; random member names, random interfaces and random object paths;
    random argument types nested to the protocol's limits (32 arrays, 32
    structs, variants), strings and arrays of up to --max-string bytes; the
    NO_REPLY_EXPECTED, ALLOW_INTERACTIVE_AUTHORIZATION and NO_AUTO_START flags;
    addressed to the well-known name or to the service's unique name; and
    connections that disconnect with calls in flight. The same runs in a
    second process as an unprivileged user (--unprivileged, setpriv).

  Malformed messages (a raw socket, bytes written by hand): a fixed table --
    invalid UTF-8, NUL in a string, bodies shorter or longer than their
    signature, nesting past 32, invalid member, interface and path names,
    protocol version 2, unknown message types and header fields, header fields
    of the wrong type, missing members, unix fds that were never sent, serial
    0, lying lengths, invalid booleans, object paths and signatures, a message
    over the bus's size limit, replies and errors nobody asked for, big-endian
    messages -- whose outcome (refused by the bus, or answered by the service)
    is reported; then random byte mutations of valid calls for the rest of
    the run.

PROPERTIES CHECKED
  - the service process never dies and keeps its name on the bus;
  - no reply (error text or returned strings) contains a Python traceback,
    a source location or an exception class name;
  - every error reply is named under org.freedesktop.DBus.Error.* or
    org.kfdguard.Guardian1.Error.*;
  - every call that expects a reply gets one, and the one the interface
    contract allows (the declared out-signature, InvalidArgs for wrong
    arguments, UnknownMethod/UnknownProperty/UnknownInterface, Busy,
    NotAuthorized...);
  - the well-behaved client is always served: GetStatus returns every
    property with the state it had at the start, Get(State) agrees.

EXIT STATUS
  0  every property held
  1  a property was violated (the report lists each case)
  2  the run could not be set up (no root to own the name, no dbus-daemon...)
  64 usage error

EXAMPLES
  sudo python -m tools.dbusfuzz --duration 60
  sudo python -m tools.dbusfuzz --backend next --calls 20000 --seed 7 --json report.json
  python -m tools.dbusfuzz --address unix:path=/run/x/bus --pid 1234 --unprivileged none

SEE ALSO
  kfdguard(8), dbus-daemon(1); systemd's TEST-21-DFUZZER and dfuzzer (not packaged in Debian 12).
"""


# --- the interface contract ---------------------------------------------------------------


@dataclass(frozen=True)
class Contract:
    methods: dict[str, str]  # name -> out signature
    properties: dict[str, str]  # name -> type
    ins: dict[str, str] = field(default_factory=dict)  # name -> in signature, for the methods that take any


def load_contract(path: Path = XML) -> Contract:
    root = ET.parse(path).getroot()  # noqa: S314 - the project's own interface file
    iface = next(i for i in root.iter("interface") if i.get("name") == INTERFACE)
    methods, ins = {}, {}
    for method in iface.iter("method"):
        args = list(method.iter("arg"))
        name = method.get("name", "")
        methods[name] = "".join(a.get("type", "") for a in args if a.get("direction", "in") == "out")
        wanted = "".join(a.get("type", "") for a in args if a.get("direction", "in") == "in")
        if wanted:
            ins[name] = wanted
    properties = {p.get("name", ""): p.get("type", "") for p in iface.iter("property")}
    return Contract(methods, properties, ins)


# --- random values ------------------------------------------------------------------------

BASIC = "ybnqiuxtdsog"
_INT_RANGES = {"y": (0, 255), "n": (-(2**15), 2**15 - 1), "q": (0, 2**16 - 1), "i": (-(2**31), 2**31 - 1),
               "u": (0, 2**32 - 1), "x": (-(2**63), 2**63 - 1), "t": (0, 2**64 - 1)}  # fmt: skip
_WORDS = ["GetStatus", "State", "Ready", "Devices", "org.kfdguard.Guardian1", "", " ", "%s%n%x", "{0}", "'\"",
          "../../../etc/shadow", "$(reboot)", "`id`", "; rm -rf /", "\u202e", "\ufeff", "😀", "é", "\x1b[31m",
          "\u2028", "ready", "render", "a" * 255]  # fmt: skip


def first_type(signature: str) -> tuple[str, str]:
    """Split a signature into its first complete type and the rest."""
    head = signature[0]
    if head == "a":
        inner, rest = first_type(signature[1:])
        return "a" + inner, rest
    if head in "({":
        close = ")" if head == "(" else "}"
        depth, i = 0, 0
        while True:
            if signature[i] in "({":
                depth += 1
            elif signature[i] in ")}":
                depth -= 1
                if depth == 0:
                    break
            i += 1
        assert signature[i] == close
        return signature[: i + 1], signature[i + 1 :]
    return head, signature[1:]


def complete_types(signature: str) -> list[str]:
    types = []
    while signature:
        one, signature = first_type(signature)
        types.append(one)
    return types


class Values:
    """Random D-Bus values for dbus-fast, within what the bus accepts."""

    def __init__(self, rng: random.Random, variant: Any, max_string: int) -> None:
        self.rng = rng
        self.Variant = variant
        self.max_string = max_string

    def type(self, depth: int = 3) -> str:
        r = self.rng.random()
        if depth <= 0 or r < 0.5:
            return self.rng.choice(BASIC)
        if r < 0.65:
            return "v"
        if r < 0.8:
            return "a" + self.type(depth - 1)
        if r < 0.9:
            return "a{" + self.rng.choice(BASIC) + self.type(depth - 1) + "}"
        return "(" + "".join(self.type(depth - 1) for _ in range(self.rng.randint(1, 4))) + ")"

    def signature(self) -> str:
        while True:
            sig = "".join(self.type() for _ in range(self.rng.randint(1, 4)))
            if len(sig) <= 255:
                return sig

    def deep(self) -> tuple[str, list[Any]]:
        """Nesting at the protocol's limits: 32 arrays, 32 structs, or variants in variants."""
        depth = self.rng.choice([2, 16, 31, 32])
        kind = self.rng.choice("a(v")
        if kind == "a":
            value: Any = [self.rng.randint(0, 9)]
            for _ in range(depth - 1):
                value = [value]
            return "a" * depth + "i", [value]
        if kind == "(":
            value = [self.rng.randint(0, 9)]
            for _ in range(depth - 1):
                value = [value]
            return "(" * depth + "i" + ")" * depth, [value]
        value = self.Variant("s", self.string())
        for _ in range(depth - 1):
            value = self.Variant("v", value)
        return "v", [value]

    def string(self) -> str:
        r = self.rng.random()
        if r < 0.01:
            size = self.rng.randint(1, self.max_string)
            return self.rng.choice("Aé😀") * (size // 4)
        if r < 0.4:
            return self.rng.choice(_WORDS)
        while True:
            text = "".join(chr(self._codepoint()) for _ in range(self.rng.randint(0, 40)))
            if not LEAK.search(text):
                return text

    def _codepoint(self) -> int:
        r = self.rng.random()
        if r < 0.7:
            return self.rng.randint(0x20, 0x7E)
        while True:
            c = self.rng.randint(1, 0x10FFFF)  # never NUL (the bus drops the sender) nor a surrogate
            if not 0xD800 <= c <= 0xDFFF:
                return c

    def path(self) -> str:
        if self.rng.random() < 0.3:
            return self.rng.choice(["/", PATH, "/org", "/org/kfdguard", PATH + "/x", "/org/freedesktop/DBus"])
        parts = [name(self.rng, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", 20)
                 for _ in range(self.rng.randint(1, 6))]  # fmt: skip
        return "/" + "/".join(parts)

    def value(self, t: str, depth: int = 0) -> Any:
        head = t[0]
        if head in _INT_RANGES:
            low, high = _INT_RANGES[head]
            return self.rng.choice([low, high, 0, 1, self.rng.randint(low, high)])
        basic: dict[str, Callable[[], Any]] = {
            "b": lambda: self.rng.random() < 0.5,
            "d": lambda: self.rng.choice(
                [0.0, -0.0, math.inf, -math.inf, math.nan, 1e308, 5e-324, self.rng.uniform(-1e9, 1e9)]
            ),
            "s": self.string,
            "o": self.path,
            "g": lambda: "".join(self.type(1) for _ in range(self.rng.randint(0, 3))),
        }
        if head in basic:
            return basic[head]()
        if head == "v":
            inner = self.type(0 if depth > 4 else 2)
            return self.Variant(inner, self.value(inner, depth + 1))
        if head == "(":
            return [self.value(m, depth + 1) for m in complete_types(t[1:-1])]
        return self._array(t[1:], depth)

    def _array(self, inner: str, depth: int) -> Any:
        # Arrays: usually short, sometimes huge.
        huge = self.rng.random() < 0.01
        if inner == "y":
            return self.rng.randbytes(self.rng.randint(0, self.max_string) if huge else self.rng.randint(0, 16))
        count = self.rng.randint(0, 100_000) if huge and inner[0] in _INT_RANGES else self.rng.randint(0, 5)
        if inner.startswith("{"):
            key, val = complete_types(inner[1:-1])
            return {self.value(key, depth + 1): self.value(val, depth + 1) for _ in range(count)}
        if huge and inner[0] in _INT_RANGES:
            low, high = _INT_RANGES[inner[0]]
            return [self.rng.randint(low, high) for _ in range(count)]
        return [self.value(inner, depth + 1) for _ in range(count)]


def name(rng: random.Random, alphabet: str, longest: int) -> str:
    first = rng.choice("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
    while True:
        text = first + "".join(rng.choice(alphabet) for _ in range(rng.randint(0, longest)))
        if not LEAK.search(text):
            return text


def member_name(rng: random.Random) -> str:
    if rng.random() < 0.02:
        return name(rng, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", 254)[:255]
    return name(rng, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", 20)


def interface_name(rng: random.Random) -> str:
    alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_"
    return ".".join(name(rng, alphabet, 12) for _ in range(rng.randint(2, 5)))


# --- the calls ----------------------------------------------------------------------------

FLAG_NO_REPLY, FLAG_NO_AUTO_START, FLAG_INTERACTIVE = 0x1, 0x2, 0x4
E = "org.freedesktop.DBus.Error."
K = f"{NAME}.Error."
# Answers of a method called correctly, besides its out-signature.
METHOD_ERRORS = {K + "Busy", K + "NotAuthorized", K + "Failed", E + "InteractiveAuthorizationRequired"}


@dataclass
class Case:
    kind: str  # what the generator meant to do, for the report
    path: str
    interface: str | None
    member: str
    signature: str
    body: list[Any]
    flags: int = 0
    to_unique: bool = False
    expect: frozenset[str] = frozenset()  # "return:<sig>" and error names; empty: any namespaced answer

    def describe(self) -> str:
        sizes = ", ".join(_size(v) for v in self.body)
        flags = [n for bit, n in ((FLAG_NO_REPLY, "no-reply"), (FLAG_INTERACTIVE, "interactive"),
                                  (FLAG_NO_AUTO_START, "no-auto-start")) if self.flags & bit]  # fmt: skip
        to = "unique name" if self.to_unique else NAME
        return (f"[{self.kind}] {self.interface}.{self.member[:60]}({self.signature[:60]}) at {self.path[:60]} "
                f"to {to}{' ' + '+'.join(flags) if flags else ''} args: {sizes[:200]}")  # fmt: skip


def _size(value: Any) -> str:
    if isinstance(value, str | bytes):
        return f"{type(value).__name__}[{len(value)}]"
    if isinstance(value, list | dict):
        return f"{type(value).__name__}[{len(value)}]"
    return type(value).__name__


class Generator:
    def __init__(self, rng: random.Random, contract: Contract, values: Values) -> None:
        self.rng = rng
        self.contract = contract
        self.values = values

    def _args(self) -> tuple[str, list[Any]]:
        if self.rng.random() < 0.15:
            return self.values.deep()
        sig = self.values.signature()
        return sig, [self.values.value(t) for t in complete_types(sig)]

    def case(self) -> Case:
        rng = self.rng
        kinds: list[tuple[float, Callable[[], Case]]] = [
            (0.25, self._method),
            (0.15, self._method_with_args),
            (0.2, self._properties),
            (0.08, self._introspect),
            (0.07, self._peer),
            (0.1, self._unknown_member),
            (0.08, self._random_interface),
            (0.07, self._random_path),
        ]
        r = rng.random() * sum(w for w, _ in kinds)
        for weight, make in kinds:
            r -= weight
            if r <= 0:
                case = make()
                break
        else:
            case = self._method()
        flags = 0
        for bit, chance in ((FLAG_NO_REPLY, 0.08), (FLAG_INTERACTIVE, 0.15), (FLAG_NO_AUTO_START, 0.1)):
            if rng.random() < chance:
                flags |= bit
        case.flags = flags
        case.to_unique = rng.random() < 0.2
        return case

    def _method(self) -> Case:
        member = self.rng.choice(sorted(self.contract.methods))
        out = self.contract.methods[member]
        expect = {f"return:{out}"} | (set() if member == "GetStatus" else METHOD_ERRORS)
        sig, body = "", []
        wanted = self.contract.ins.get(member)
        if wanted is not None:
            # Its own signature with random values: answered, or refused as InvalidArgs when too large.
            sig, body = wanted, [self.values.value(t) for t in complete_types(wanted)]
            expect |= {K + "InvalidArgs"}
        interface = self.rng.choice([INTERFACE, INTERFACE, INTERFACE, None])
        if interface is None:
            # The bus policy names the interfaces one may call: a call without one never arrives.
            expect = {E + "AccessDenied"}
        return Case("method", PATH, interface, member, sig, body, expect=frozenset(expect))

    def _method_with_args(self) -> Case:
        sig, body = self._args()
        member = self.rng.choice(sorted(self.contract.methods))
        expect = {K + "InvalidArgs"}
        if sig == self.contract.ins.get(member, ""):  # by chance the method's own signature
            expect |= {f"return:{self.contract.methods[member]}"} | METHOD_ERRORS
        return Case("method-args", PATH, INTERFACE, member, sig, body, expect=frozenset(expect))

    def _properties(self) -> Case:
        rng = self.rng
        props = sorted(self.contract.properties)
        iface = rng.choice([INTERFACE, INTERFACE, INTERFACE, "", *STANDARD, interface_name(rng)])
        prop = rng.choice([*props, *props, member_name(rng), ""])
        member = rng.choice(["Get", "Get", "GetAll", "Set", "GetAll", member_name(rng)])
        right = {"Get": "ss", "GetAll": "s", "Set": "ssv"}.get(member)
        if right is not None and rng.random() < 0.8:
            sig = right
            body: list[Any] = [iface, prop, self.values.Variant(*self._variant())][: len(right)]
            if member == "GetAll":
                body = [iface]
        else:
            sig, body = self._args()
        expect: set[str]
        if member == "Get" and sig == "ss":
            known = iface == INTERFACE and prop in self.contract.properties
            expect = {"return:v"} if known else {E + "UnknownProperty"}
        elif member == "GetAll" and sig == "s":
            expect = {"return:a{sv}"}
        elif member == "Set" and sig == "ssv":
            expect = {E + "PropertyReadOnly"}
        else:
            expect = {E + "InvalidArgs"}
        return Case("properties", PATH, PROPERTIES, member, sig, body, expect=frozenset(expect))

    def _variant(self) -> tuple[str, Any]:
        t = self.values.type(2)
        return t, self.values.value(t)

    def _introspect(self) -> Case:
        path = self.rng.choice([PATH, PATH, "/", "/org", "/org/kfdguard", self.values.path()])
        sig, body = ("", []) if self.rng.random() < 0.6 else self._args()
        served = path == PATH or PATH.startswith(path.rstrip("/") + "/")
        if not served:
            expect = {E + "UnknownObject"}
        elif sig:
            expect = {E + "InvalidArgs"}
        else:
            expect = {"return:s"}
        return Case("introspect", path, INTROSPECTABLE, "Introspect", sig, body, expect=frozenset(expect))

    def _peer(self) -> Case:
        member = self.rng.choice(["Ping", "GetMachineId", member_name(self.rng)])
        sig, body = ("", []) if self.rng.random() < 0.6 else self._args()
        path = self.rng.choice([PATH, "/", self.values.path()])
        if member not in ("Ping", "GetMachineId"):
            expect = {E + "UnknownMethod"}
        elif sig:
            expect = {E + "InvalidArgs"}
        elif member == "Ping":
            expect = {"return:"}
        else:
            expect = {"return:s", E + "FileNotFound"}  # a host without machine-id(5)
        return Case("peer", path, PEER, member, sig, body, expect=frozenset(expect))

    def _unknown_member(self) -> Case:
        member = member_name(self.rng)
        while member in self.contract.methods:
            member = member_name(self.rng)
        sig, body = ("", []) if self.rng.random() < 0.5 else self._args()
        expect = {E + "UnknownMethod"}  # the name is checked before the arguments
        return Case("unknown-member", PATH, INTERFACE, member, sig, body, expect=frozenset(expect))

    def _random_interface(self) -> Case:
        sig, body = ("", []) if self.rng.random() < 0.5 else self._args()
        # The bus policy lets only kfdguard's and the standard interfaces through.
        return Case("random-interface", self.rng.choice([PATH, self.values.path()]), interface_name(self.rng),
                    member_name(self.rng), sig, body, expect=frozenset({E + "AccessDenied"}))  # fmt: skip

    def _random_path(self) -> Case:
        path = self.values.path()
        while path == PATH or PATH.startswith(path.rstrip("/") + "/"):
            path = self.values.path()
        member = self.rng.choice([*sorted(self.contract.methods), member_name(self.rng)])
        sig, body = ("", []) if self.rng.random() < 0.6 else self._args()
        return Case("random-path", path, INTERFACE, member, sig, body, expect=frozenset({E + "UnknownObject"}))


# --- the report ---------------------------------------------------------------------------


@dataclass
class Report:
    seed: int
    role: str = "root"
    calls: int = 0
    outcomes: Counter[str] = field(default_factory=Counter)
    violations: list[str] = field(default_factory=list)
    violation_count: int = 0
    observations: Counter[str] = field(default_factory=Counter)
    raw_table: list[tuple[str, str]] = field(default_factory=list)
    mutations: Counter[str] = field(default_factory=Counter)
    good_calls: int = 0
    good_max_latency: float = 0.0
    rss_kb: tuple[int, int] | None = None
    seconds: float = 0.0
    others: list[dict[str, Any]] = field(default_factory=list)

    def violation(self, text: str) -> None:
        self.violation_count += 1
        if len(self.violations) < 50:
            self.violations.append(text)

    def to_json(self) -> dict[str, Any]:
        return {
            "seed": self.seed, "role": self.role, "calls": self.calls, "seconds": round(self.seconds, 2),
            "outcomes": dict(self.outcomes.most_common()), "violation_count": self.violation_count,
            "violations": self.violations, "observations": dict(self.observations),
            "raw_table": self.raw_table, "mutations": dict(self.mutations.most_common()),
            "good_calls": self.good_calls, "good_max_latency": round(self.good_max_latency, 4),
            "rss_kb": self.rss_kb, "others": self.others,
        }  # fmt: skip

    def merge(self, other: dict[str, Any]) -> None:
        self.others.append(other)
        self.calls += int(other.get("calls", 0))
        self.violation_count += int(other.get("violation_count", 0))
        for text in other.get("violations", []):
            if len(self.violations) < 50:
                self.violations.append(f"({other.get('role')}) {text}")

    def text(self) -> str:
        lines = [f"kfdguard D-Bus fuzz: seed {self.seed}, {self.calls} calls in {self.seconds:.1f} s"]
        if self.rss_kb:
            lines.append(f"  service VmRSS: {self.rss_kb[0]} kB before, {self.rss_kb[1]} kB after")
        lines.append(
            f"  well-behaved client: {self.good_calls} calls, slowest answer {self.good_max_latency * 1000:.0f} ms"
        )
        lines.append("  answers to the fuzz calls (root):")
        lines.extend(f"    {count:7d}  {outcome}" for outcome, count in self.outcomes.most_common())
        for other in self.others:
            lines.append(f"  answers to the fuzz calls ({other.get('role')}): {other.get('calls')} calls")
            lines.extend(f"    {count:7d}  {outcome}" for outcome, count in other.get("outcomes", {}).items())
        if self.raw_table:
            lines.append("  malformed messages (raw socket):")
            lines.extend(f"    {case:34} {outcome}" for case, outcome in self.raw_table)
        if self.mutations:
            lines.append("  random byte mutations of valid calls:")
            lines.extend(f"    {count:7d}  {outcome}" for outcome, count in self.mutations.most_common())
        if self.observations:
            lines.append("  observations (not violations):")
            lines.extend(f"    {count:7d}  {text}" for text, count in self.observations.most_common())
        if self.violation_count:
            lines.append(f"  VIOLATIONS: {self.violation_count}")
            lines.extend(f"    - {v}" for v in self.violations)
        else:
            lines.append("  every property held")
        return "\n".join(lines)


def check_reply(case_text: str, reply: Any, message_type: Any, expect: frozenset[str], report: Report) -> str:
    """Record one answer against the properties; returns its outcome label."""
    if reply.message_type == message_type.ERROR:
        outcome = str(reply.error_name)
        if not outcome.startswith(ERROR_NAMESPACES):
            report.violation(f"error outside the namespaces: {outcome} for {case_text}")
    else:
        outcome = f"return:{reply.signature}"
    texts = [_all_text(reply.body)]
    leaked = LEAK.search(" ".join(texts))
    if leaked:
        report.violation(f"reply leaks {leaked.group(0)!r} ({outcome}) for {case_text}: {' '.join(texts)[:300]!r}")
    if expect and outcome not in expect:
        body = _all_text(reply.body)[:200]
        report.violation(
            f"unexpected answer {outcome} ({body!r}) for {case_text}; the contract allows {sorted(expect)}"
        )
    return outcome


def _all_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple):
        return " ".join(_all_text(v) for v in value)
    if isinstance(value, dict):
        return " ".join(_all_text(k) + " " + _all_text(v) for k, v in value.items())
    inner = getattr(value, "value", None)
    return _all_text(inner) if inner is not None else ""


# --- well-formed fuzzing through dbus-fast ----------------------------------------------------


class Run:
    """One fuzzing run against a bus address: the fuzz connections, the raw socket and the good client."""

    def __init__(self, address: str, opts: Options, report: Report, pid: int | None) -> None:
        from kfdguard.service.backend import load

        self.b = load("fast")
        self.address = address
        self.opts = opts
        self.report = report
        self.pid = pid
        self.contract = load_contract()
        self.started = time.monotonic()
        self.stop = asyncio.Event()
        self.unique: str | None = None
        self.leaving: set[int] = set()  # connections the fuzzer itself is closing
        self.state: str | None = None
        self.version: str | None = None

    def done(self) -> bool:
        if self.stop.is_set():
            return True
        if self.opts.calls is not None and self.report.calls >= self.opts.calls:
            return True
        return self.opts.duration is not None and time.monotonic() - self.started >= self.opts.duration

    async def connect(self) -> Any:
        for _ in range(5):
            try:
                return await asyncio.wait_for(
                    self.b.MessageBus(bus_address=self.address, bus_type=self.b.BusType.SYSTEM).connect(), 10
                )
            except TimeoutError:
                self.report.observations["a connection to the bus did not authenticate within 10 s"] += 1
        raise RuntimeError("cannot connect to the bus")

    @staticmethod
    async def close(bus: Any) -> None:
        """Disconnect and wait until dbus-fast has let go of the socket.

        disconnect() only shuts the socket down; the library closes it and removes
        its reader later. A connection opened in between can get the same file
        descriptor, and the old reader's removal then takes the new one's (its
        authentication never completes).
        """
        bus.disconnect()
        with contextlib.suppress(Exception):  # however it ended, the socket is gone
            await asyncio.wait_for(bus.wait_for_disconnect(), 5)

    async def call(self, bus: Any, member: str, signature: str = "", body: list[Any] | None = None,
                   interface: str = INTERFACE, destination: str = NAME, path: str = PATH) -> Any:  # fmt: skip
        msg = self.b.Message(destination=destination, path=path, interface=interface, member=member,
                             signature=signature, body=body or [])  # fmt: skip
        return await asyncio.wait_for(bus.call(msg), CALL_TIMEOUT)

    async def prepare(self) -> None:
        bus = await self.connect()
        try:
            owner = await self.call(bus, "GetNameOwner", "s", [NAME], BUS, BUS, "/org/freedesktop/DBus")
            if owner.message_type != self.b.MessageType.METHOD_RETURN:
                raise RuntimeError(f"{NAME} is not on the bus: {owner.body}")
            self.unique = owner.body[0]
            status = await self.call(bus, "GetStatus")
            self.state = status.body[0]["State"].value
            self.version = status.body[0]["Version"].value
        finally:
            await self.close(bus)

    async def fuzz_connection(self, index: int) -> None:
        rng = random.Random(f"{self.report.seed}-{self.report.role}-{index}")  # noqa: S311 - reproducible, not secret
        values = Values(rng, self.b.Variant, self.opts.max_string)
        gen = Generator(rng, self.contract, values)
        bus = await self.connect()
        in_flight: set[asyncio.Task[None]] = set()
        pipeline = asyncio.Semaphore(self.opts.pipeline)
        while not self.done():
            case = gen.case()
            self.report.calls += 1
            if not bus.connected:
                # Recorded by _one with the call that was in flight; the fuzzing goes on.
                await self.close(bus)
                bus = await self.connect()
            if rng.random() < 0.005:
                # Go away with calls in flight: the service must not care whom it answers.
                self.leaving.add(id(bus))
                await self.close(bus)
                for task in in_flight:
                    task.cancel()
                await asyncio.gather(*in_flight, return_exceptions=True)
                bus = await self.connect()
                self.report.observations["fuzz connection closed with calls in flight"] += 1
            await pipeline.acquire()
            task = asyncio.get_running_loop().create_task(self._one(bus, case))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
            # Released when the task ends, even one cancelled before it ever ran.
            task.add_done_callback(lambda _: pipeline.release())
        await asyncio.gather(*in_flight, return_exceptions=True)
        await self.close(bus)

    async def _one(self, bus: Any, case: Case) -> None:
        b = self.b
        try:
            destination = self.unique if case.to_unique and self.unique else NAME
            msg = b.Message(destination=destination, path=case.path, interface=case.interface, member=case.member,
                            signature=case.signature, body=case.body, flags=b.MessageFlag(case.flags))  # fmt: skip
        except Exception as exc:
            self.report.observations[f"generator made a message dbus-fast refuses: {type(exc).__name__}"] += 1
            return
        try:
            if case.flags & FLAG_NO_REPLY:
                await bus.send(msg)
                self.report.outcomes[f"{case.kind}: sent without reply expected"] += 1
                return
            reply = await asyncio.wait_for(bus.call(msg), CALL_TIMEOUT)
        except TimeoutError:
            if not bus.connected or id(bus) in self.leaving:
                # The connection closed while the call waited (the bus refused another message of it, or
                # the fuzzer left): nobody can answer on it, and the client library did not fail the call.
                # A timeout on a connection still open is the service's (or the bus's) silence.
                self.report.observations["a call on a connection that then closed got no answer"] += 1
            else:
                self.report.violation(f"no answer within {CALL_TIMEOUT:.0f} s for {case.describe()}")
            return
        except asyncio.CancelledError:
            return
        except Exception as exc:
            if id(bus) in self.leaving:
                self.report.observations["calls cut off by the fuzzer's own disconnects"] += 1
            elif not bus.connected:
                # The bus closed it, or dbus-fast's own writer gave up: in dbus-fast 5.2 an EAGAIN on a
                # full socket (a big message) is fatal to the connection ("client-side: BlockingIOError").
                self.report.observations[f"a fuzz connection ended with calls in flight ({case.kind})"] += 1
            else:
                self.report.observations[f"client-side failure {type(exc).__name__} ({case.kind})"] += 1
            return
        outcome = check_reply(case.describe(), reply, b.MessageType, case.expect, self.report)
        self.report.outcomes[f"{case.kind}: {outcome}"] += 1

    async def well_behaved(self) -> None:
        """Keeps asking, one call at a time, and checks every answer."""
        b = self.b
        bus = await self.connect()
        props = set(self.contract.properties)
        i = 0
        try:
            while not self.stop.is_set():
                i += 1
                start = time.monotonic()
                try:
                    if i % 2:
                        reply = await self.call(bus, "GetStatus")
                        ok = (reply.message_type == b.MessageType.METHOD_RETURN and reply.signature == "a{sv}"
                              and set(reply.body[0]) == props and reply.body[0]["State"].value == self.state
                              and reply.body[0]["Version"].value == self.version)  # fmt: skip
                    else:
                        reply = await self.call(bus, "Get", "ss", [INTERFACE, "State"], PROPERTIES)
                        ok = (reply.message_type == b.MessageType.METHOD_RETURN and reply.signature == "v"
                              and reply.body[0].signature == "s" and reply.body[0].value == self.state)  # fmt: skip
                except TimeoutError:
                    self.report.violation(f"the well-behaved client got no answer within {CALL_TIMEOUT:.0f} s")
                    continue
                except Exception as exc:
                    # Its own connection failed: not the service's doing, unless it keeps happening.
                    self.report.observations[f"the well-behaved client reconnected ({type(exc).__name__})"] += 1
                    await self.close(bus)
                    bus = await self.connect()
                    continue
                latency = time.monotonic() - start
                self.report.good_calls += 1
                self.report.good_max_latency = max(self.report.good_max_latency, latency)
                if not ok:
                    self.report.violation(f"the well-behaved client got a wrong answer: {reply.error_name or ''} "
                                          f"{_all_text(reply.body)[:300]!r}")  # fmt: skip
                await asyncio.sleep(0.01)
        finally:
            await self.close(bus)

    async def final_check(self) -> None:
        if self.pid is not None and not _alive(self.pid):
            self.report.violation(f"the service (pid {self.pid}) died")
            return
        bus = await self.connect()
        try:
            owner = await self.call(bus, "GetNameOwner", "s", [NAME], BUS, BUS, "/org/freedesktop/DBus")
            if owner.message_type != self.b.MessageType.METHOD_RETURN:
                self.report.violation(f"the service lost its name: {_all_text(owner.body)}")
            elif owner.body[0] != self.unique:
                self.report.violation(f"the service reconnected to the bus ({self.unique} -> {owner.body[0]})")
        finally:
            await self.close(bus)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def vm_rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as handle:
        for line in handle:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for pid {pid}")


# --- malformed messages on a raw socket --------------------------------------------------------

HEADER = {"path": 1, "interface": 2, "member": 3, "error": 4, "reply_serial": 5, "destination": 6, "sender": 7,
          "signature": 8, "unix_fds": 9}  # fmt: skip


class Wire:
    """Marshalling by hand, so that anything can be written (D-Bus specification, 'Message Format')."""

    def __init__(self, endian: str = "l", offset: int = 0) -> None:
        self.fmt = "<" if endian == "l" else ">"
        self.data = bytearray(offset)
        self.offset = offset

    def align(self, n: int) -> Wire:
        self.data += b"\0" * (-len(self.data) % n)
        return self

    def byte(self, v: int) -> Wire:
        self.data.append(v)
        return self

    def uint32(self, v: int) -> Wire:
        self.align(4).data += struct.pack(self.fmt + "I", v)
        return self

    def string(self, v: str | bytes) -> Wire:
        raw = v.encode() if isinstance(v, str) else v
        self.uint32(len(raw)).data += raw + b"\0"
        return self

    def signature(self, v: str | bytes) -> Wire:
        raw = v.encode() if isinstance(v, str) else v
        self.byte(len(raw)).data += raw + b"\0"
        return self

    def bytes(self) -> bytes:
        return bytes(self.data[self.offset :])


def raw_message(serial: int, fields: list[tuple[int, str, Any]], body: bytes = b"", *, mtype: int = 1, flags: int = 0,
                endian: str = "l", version: int = 1, body_length: int | None = None) -> bytes:  # fmt: skip
    return frame(serial, header_fields(fields, endian), body, mtype=mtype, flags=flags, endian=endian,
                 version=version, body_length=body_length)  # fmt: skip


def header_fields(fields: list[tuple[int, str, Any]], endian: str = "l") -> bytes:
    """The header's field array (its elements aligned as they are at offset 16 of a message)."""
    fw = Wire(endian, offset=16)
    for code, sig, value in fields:
        fw.align(8).byte(code).signature(sig)
        if sig in ("s", "o"):
            fw.string(value)
        elif sig == "g":
            fw.signature(value)
        elif sig == "u":
            fw.uint32(value)
        else:
            fw.byte(value)
    return fw.bytes()


def frame(serial: int, array: bytes, body: bytes, *, mtype: int = 1, flags: int = 0, endian: str = "l",
          version: int = 1, body_length: int | None = None) -> bytes:  # fmt: skip
    """A message around a field array and a body, with lengths that match them unless told otherwise."""
    head = Wire(endian)
    head.byte(ord(endian)).byte(mtype).byte(flags).byte(version)
    head.uint32(len(body) if body_length is None else body_length).uint32(serial)
    head.uint32(len(array)).data += array
    head.align(8)
    return bytes(head.data) + body


@dataclass
class RawMessage:
    mtype: int
    flags: int
    serial: int
    fields: dict[int, Any]
    body: bytes


def parse_messages(buffer: bytearray) -> list[RawMessage]:
    """Complete messages at the front of ``buffer`` (removed from it)."""
    messages = []
    while len(buffer) >= 16:
        fmt = "<" if buffer[0:1] == b"l" else ">"
        body_len, serial, fields_len = struct.unpack(fmt + "III", bytes(buffer[4:16]))
        header_len = 16 + fields_len + (-(16 + fields_len) % 8)
        total = header_len + body_len
        if len(buffer) < total:
            break
        data = bytes(buffer[:total])
        del buffer[:total]
        fields: dict[int, Any] = {}
        pos, end = 16, 16 + fields_len
        while pos < end:
            pos += -pos % 8
            code, size = data[pos], data[pos + 1]
            sig = data[pos + 2 : pos + 2 + size].decode(errors="replace")
            pos += 3 + size
            if sig in ("s", "o"):
                pos += -pos % 4
                (n,) = struct.unpack(fmt + "I", data[pos : pos + 4])
                fields[code] = data[pos + 4 : pos + 4 + n].decode(errors="replace")
                pos += 5 + n
            elif sig == "g":
                n = data[pos]
                fields[code] = data[pos + 1 : pos + 1 + n].decode(errors="replace")
                pos += 2 + n
            elif sig == "u":
                pos += -pos % 4
                (fields[code],) = struct.unpack(fmt + "I", data[pos : pos + 4])
                pos += 4
            else:
                break
        messages.append(RawMessage(data[1], data[2], serial, fields, data[header_len:]))
    return messages


class Dropped(Exception):
    pass


class RawConnection:
    """A bus connection on a plain socket: authentication and Hello by hand, then any bytes."""

    def __init__(self, address: str, timeout: float = 5.0) -> None:
        path = _socket_path(address)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(timeout)
        self.sock.connect(path)
        self.sock.sendall(b"\0AUTH EXTERNAL " + str(os.geteuid()).encode().hex().encode() + b"\r\n")
        if not self._line().startswith(b"OK "):
            raise RuntimeError("the bus refused EXTERNAL authentication")
        self.sock.sendall(b"BEGIN\r\n")
        self.buffer = bytearray()
        self.seen: list[RawMessage] = []
        self.serial = 0
        hello = self.next_serial()
        self.sock.sendall(raw_message(hello, [(1, "o", "/org/freedesktop/DBus"), (2, "s", BUS), (3, "s", "Hello"),
                                              (6, "s", BUS)]))  # fmt: skip
        reply = self.wait(lambda m: m.fields.get(HEADER["reply_serial"]) == hello, timeout)
        if reply is None:
            raise RuntimeError("no answer to Hello")
        self.unique = str(reply.body[4:-1].decode())

    def _line(self) -> bytes:
        data = b""
        while not data.endswith(b"\r\n"):
            chunk = self.sock.recv(1)
            if not chunk:
                raise Dropped("closed during authentication")
            data += chunk
        return data

    def next_serial(self) -> int:
        self.serial += 1
        return self.serial

    def send(self, data: bytes) -> None:
        try:
            self.sock.sendall(data)
        except OSError as exc:
            raise Dropped(str(exc)) from exc

    def wait(self, predicate: Callable[[RawMessage], bool], timeout: float) -> RawMessage | None:
        deadline = time.monotonic() + timeout
        while True:
            for message in parse_messages(self.buffer) if len(self.buffer) >= 16 else []:
                self.seen.append(message)
            for message in self.seen:
                if predicate(message):
                    return message
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            self.sock.settimeout(remaining)
            try:
                chunk = self.sock.recv(1 << 16)
            except TimeoutError:
                return None
            except OSError as exc:
                raise Dropped(str(exc)) from exc
            if not chunk:
                raise Dropped("the bus closed the connection")
            self.buffer += chunk

    def close(self) -> None:
        self.sock.close()


def _socket_path(address: str) -> str:
    for part in address.split(";"):
        transport, _, options = part.partition(":")
        opts = dict(o.split("=", 1) for o in options.split(",") if "=" in o)
        if transport == "unix" and "path" in opts:
            return opts["path"]
    raise ValueError(f"only unix:path= addresses are supported: {address!r}")


def _call_fields(member: str = "GetStatus", *, interface: str | None = INTERFACE, path: str = PATH,
                 signature: str | None = None, destination: str = NAME) -> list[tuple[int, str, Any]]:  # fmt: skip
    fields: list[tuple[int, str, Any]] = [(1, "o", path), (3, "s", member), (6, "s", destination)]
    if interface is not None:
        fields.append((2, "s", interface))
    if signature is not None:
        fields.append((8, "g", signature))
    return fields


def _s(raw: bytes) -> bytes:
    return struct.pack("<I", len(raw)) + raw + b"\0"


def raw_cases(unique: str) -> list[tuple[str, Callable[[int], bytes]]]:
    """The fixed table of malformed (and a few valid but unusual) messages, by name."""

    def msg(fields: list[tuple[int, str, Any]], body: bytes = b"", **opts: Any) -> Callable[[int], bytes]:
        return lambda serial: raw_message(serial, fields, body, **opts)

    def call(body: bytes = b"", *, member: str = "GetStatus", interface: str | None = INTERFACE, path: str = PATH,
             signature: str | None = None, destination: str = NAME, **opts: Any) -> Callable[[int], bytes]:  # fmt: skip
        fields = _call_fields(member, interface=interface, path=path, signature=signature, destination=destination)
        return msg(fields, body, **opts)

    empty, u32 = b"\0\0\0\0", struct.Struct("<I").pack
    status = [(1, "o", PATH), (3, "s", "GetStatus"), (6, "s", NAME)]
    return [
        ("valid GetStatus (control)", call()),
        ("valid, big-endian", call(endian="B")),
        ("valid, to the unique name", call(destination=unique)),
        ("valid, unknown flag bits 0xf0", call(flags=0xF0)),
        ("valid, no reply expected", call(flags=FLAG_NO_REPLY)),
        ("invalid UTF-8 in a string", call(_s(b"\xff\xfe"), signature="s")),
        ("overlong UTF-8 (C0 80)", call(_s(b"\xc0\x80"), signature="s")),
        ("UTF-16 surrogate in UTF-8", call(_s(b"\xed\xa0\x80"), signature="s")),
        ("NUL inside a string", call(_s(b"a\0b"), signature="s")),
        ("body shorter than signature", call(signature="s")),
        ("body of the wrong type", call(b"\x01\x00", signature="u")),
        ("body longer than signature", call(empty)),
        ("array length past the body", call(u32(100) + b"ab", signature="ay")),
        ("invalid boolean (2)", call(u32(2), signature="b")),
        ("invalid object path argument", call(_s(b"not/a/path"), signature="o")),
        ("invalid signature argument", call(b"\x03(((\0", signature="g")),
        ("32 nested arrays (the limit)", call(empty, signature="a" * 32 + "y")),
        ("33 nested arrays", call(empty, signature="a" * 33 + "y")),
        ("33 nested structs", call(b"\x01", signature="(" * 33 + "y" + ")" * 33)),
        ("variant in a variant (valid)", call(b"\x01v\0\x01y\0\x05", signature="v")),
        ("dict entry outside an array", call(signature="{sv}")),
        ("member name starting with a digit", call(member="1Bad")),
        ("member name of 256 characters", call(member="M" * 256)),
        ("interface name without a dot", call(interface="NoDots")),
        ("object path '//x'", call(path="//x")),
        ("relative object path", call(path="org/kfdguard")),
        ("protocol version 2", call(version=2)),
        ("unknown message type 7", call(mtype=7)),
        ("path header field typed 's'", msg([(1, "s", PATH), *status[1:]])),
        ("unknown header field 100", msg([*_call_fields(), (100, "s", "x")])),
        ("method call without a member", msg([(1, "o", PATH), (2, "s", INTERFACE), (6, "s", NAME)])),
        ("method call without an interface", call(interface=None)),
        ("unix fd in the signature, none sent", call(empty, signature="h")),
        ("UNIX_FDS header 1, no fd passed", msg([*_call_fields(signature="h"), (9, "u", 1)], empty)),
        ("serial 0", lambda serial: raw_message(0, _call_fields())),
        ("error reply nobody asked for", msg([(4, "s", "org.example.Error"), (5, "u", 7), (6, "s", NAME)], mtype=3)),
        ("method return nobody asked for", msg([(5, "u", 7), (6, "s", NAME)], mtype=2)),
        (
            "signal addressed to the service",
            msg([(1, "o", PATH), (2, "s", INTERFACE), (3, "s", "Changed"), (6, "s", NAME)], mtype=4),
        ),
        (
            "Properties.Get with invalid UTF-8",
            call(_s(b"\xff") + b"\0\0\0" + _s(b"State"), member="Get", interface=PROPERTIES, signature="ss"),
        ),
        ("message over the size limit", call(u32(200 << 20), signature="ay", body_length=(200 << 20) + 4)),
    ]


def raw_exchange(
    conn: RawConnection, data: bytes, serial: int, service: str | None, wait: float
) -> tuple[str, list[RawMessage]]:
    """Send one raw message and say what became of it."""
    conn.seen.clear()
    conn.send(data)
    barrier = conn.next_serial()
    # A Ping to the bus: the bus handles a connection's messages in order, so its answer
    # comes after any refusal of the message before it.
    conn.send(
        raw_message(barrier, [(1, "o", "/org/freedesktop/DBus"), (2, "s", PEER), (3, "s", "Ping"), (6, "s", BUS)])
    )
    if conn.wait(lambda m: m.fields.get(HEADER["reply_serial"]) == barrier, 1.0) is None:
        return "no answer from the bus (it waits for the rest of a message)", []
    answers = [m for m in conn.seen if m.fields.get(HEADER["reply_serial"]) == serial]
    if not answers and wait > 0:
        found = conn.wait(lambda m: m.fields.get(HEADER["reply_serial"]) == serial, wait)
        answers = [found] if found else []
    replies = [m for m in answers if m.mtype in (2, 3)]
    if not replies:
        return "no answer", []
    reply = replies[0]
    sender = reply.fields.get(HEADER["sender"])
    who = (
        "refused by the bus"
        if sender == BUS
        else "answered by the service"
        if sender == service
        else f"answered by {sender}"
    )
    what = (
        reply.fields.get(HEADER["error"]) if reply.mtype == 3 else f"return:{reply.fields.get(HEADER['signature'], '')}"
    )
    return f"{who}: {what}", replies


def check_raw(label: str, replies: list[RawMessage], report: Report) -> None:
    for reply in replies:
        text = reply.body.decode("utf-8", errors="replace")
        leaked = LEAK.search(text)
        if leaked:
            report.violation(f"raw {label}: reply leaks {leaked.group(0)!r}: {text[:200]!r}")
        error = reply.fields.get(HEADER["error"])
        if reply.mtype == 3 and not str(error).startswith(ERROR_NAMESPACES):
            report.violation(f"raw {label}: error outside the namespaces: {error}")


def raw_table(address: str, service: str, report: Report) -> None:
    for label, make in raw_cases(service):
        try:
            conn = RawConnection(address)
        except (OSError, RuntimeError, Dropped) as exc:
            report.violation(f"cannot connect to the bus for raw case {label!r}: {exc}")
            return
        try:
            serial = conn.next_serial()
            data = make(serial)
            # Only a method call that wants a reply gets one; for the rest the bus's answer is all there is.
            wants_reply = data[1] == 1 and not data[2] & FLAG_NO_REPLY
            outcome, replies = raw_exchange(conn, data, serial, service, 2.0 if wants_reply else 0.0)
            check_raw(label, replies, report)
        except Dropped:
            outcome = "refused by the bus: connection closed"
        finally:
            conn.close()
        report.raw_table.append((label, outcome))


def raw_mutations(address: str, service: str, report: Report, rng: random.Random, done: Callable[[], bool]) -> None:
    """Random byte flips, truncations and insertions in valid calls, until ``done``."""
    get = _s(NAME.encode()) + b"\0\0\0" + _s(b"State")
    seeds: list[tuple[list[tuple[int, str, Any]], bytes]] = [
        (_call_fields(), b""),
        (_call_fields("Get", interface=PROPERTIES, signature="ss"), get),
        (_call_fields("GetAll", interface=PROPERTIES, signature="s"), _s(NAME.encode())),
        (_call_fields("CheckAccess"), b""),
        (_call_fields("Introspect", interface=INTROSPECTABLE), b""),
    ]
    conn: RawConnection | None = None
    while not done():
        if conn is None:
            try:
                conn = RawConnection(address)
            except (OSError, RuntimeError, Dropped):
                report.mutations["could not reconnect"] += 1
                time.sleep(0.1)
                continue
        serial = conn.next_serial()
        fields, body = rng.choice(seeds)
        r = rng.random()
        if r < 0.8:
            # Inside the header fields or the body, lengths kept right: the bus can always read
            # the frame, so each mutation is judged on what it changed.
            array, payload = bytearray(header_fields(fields)), bytearray(body)
            target = array if (r < 0.5 or not payload) else payload
            _mutate(rng, target)
            flags = rng.choice([0, 0, 0, FLAG_NO_REPLY, FLAG_INTERACTIVE, rng.randrange(256)])
            data = bytearray(frame(serial, bytes(array), bytes(payload), flags=flags))
        else:
            data = bytearray(raw_message(serial, fields, body))  # anywhere, the framing included
            _mutate(rng, data)
        report.calls += 1
        try:
            outcome, replies = raw_exchange(conn, bytes(data), serial, service, 0.5)
            check_raw("mutation", replies, report)
        except Dropped:
            outcome = "refused by the bus: connection closed"
        if outcome.startswith(("no answer from the bus", "refused by the bus: connection closed")):
            conn.close()
            conn = None
        report.mutations[outcome] += 1
    if conn is not None:
        conn.close()


def _mutate(rng: random.Random, data: bytearray) -> None:
    for _ in range(rng.randint(1, 4)):
        if not data:
            data.append(rng.randrange(256))
            continue
        op, pos = rng.random(), rng.randrange(len(data))
        if op < 0.55:
            data[pos] = rng.randrange(256)
        elif op < 0.75:
            data[pos] ^= 1 << rng.randrange(8)
        elif op < 0.9:
            del data[pos]
        else:
            data[pos:pos] = rng.randbytes(rng.randint(1, 8))


# --- running it -------------------------------------------------------------------------------


@dataclass
class Options:
    seed: int = 1
    duration: float | None = 10.0
    calls: int | None = None
    connections: int = 3
    pipeline: int = 8
    max_string: int = 1 << 20
    unprivileged: int | None = 65534
    raw: bool = True


async def run(address: str, opts: Options, pid: int | None, role: str = "root") -> Report:
    report = Report(opts.seed, role)
    loop = asyncio.get_running_loop()

    def client_side(loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        # Failures of our own connections (a send on a socket the bus closed) are not the service's.
        exc = context.get("exception")
        report.observations[f"client-side: {type(exc).__name__ if exc else context.get('message')}"] += 1

    loop.set_exception_handler(client_side)
    fuzz = Run(address, opts, report, pid)
    await fuzz.prepare()
    assert fuzz.unique is not None
    rss_before = vm_rss_kb(pid) if pid is not None else None
    tasks: list[asyncio.Future[Any]] = [loop.create_task(fuzz.fuzz_connection(i)) for i in range(opts.connections)]
    if opts.raw:
        rng = random.Random(f"{opts.seed}-{role}-raw")  # noqa: S311 - reproducible, not secret
        unique = fuzz.unique

        def raw() -> None:
            if role == "root":
                raw_table(address, unique, report)
            raw_mutations(address, unique, report, rng, fuzz.done)

        tasks.append(loop.run_in_executor(None, raw))
    other: asyncio.Task[dict[str, Any] | None] | None = None
    if role == "root" and opts.unprivileged is not None:
        other = loop.create_task(_unprivileged(address, opts))
    good = loop.create_task(fuzz.well_behaved()) if role == "root" else None
    await asyncio.gather(*tasks)
    if other is not None:
        result = await other
        if result is None:
            report.observations["the unprivileged part could not run (not root, or no setpriv)"] += 1
        else:
            report.merge(result)
    fuzz.stop.set()
    if good is not None:
        await good
    await fuzz.final_check()
    if pid is not None and rss_before is not None and _alive(pid):
        report.rss_kb = (rss_before, vm_rss_kb(pid))
    report.seconds = time.monotonic() - fuzz.started
    return report


async def _unprivileged(address: str, opts: Options) -> dict[str, Any] | None:
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0 or setpriv is None or opts.unprivileged is None:
        return None
    uid = opts.unprivileged
    argv = [setpriv, f"--reuid={uid}", f"--regid={uid}", "--clear-groups", sys.executable, "-m",
            "tools.dbusfuzz", "--worker", "--address", address, "--seed", str(opts.seed + 1),
            "--connections", str(max(1, opts.connections - 1)), "--max-string", str(opts.max_string)]  # fmt: skip
    if opts.duration is not None:
        argv += ["--duration", str(opts.duration)]
    if opts.calls is not None:
        argv += ["--calls", str(max(1, opts.calls // 2))]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                env=env, cwd="/")  # fmt: skip
    out, err = await proc.communicate()
    try:
        # Exit status 1 is also Python's for an uncaught exception: only a report on stdout is a result.
        result: dict[str, Any] = json.loads(out) if proc.returncode in (0, 1) else {}
    except ValueError:
        result = {}
    if not isinstance(result, dict) or "violation_count" not in result:
        tail = err.decode(errors="replace")[-800:]
        failure = f"the unprivileged fuzzer failed ({proc.returncode}), no report: {tail}"
        return {"role": f"uid {uid}", "calls": 0, "violation_count": 1, "violations": [failure]}
    result["role"] = f"uid {uid}"
    return result


# --- the service on a private bus -------------------------------------------------------------


def quiet_bus(directory: Path) -> Any:
    """tools.privatebus's bus with its stderr in a file.

    PrivateBus keeps dbus-daemon's stderr in a pipe that nobody reads after the
    start. dbus-daemon logs every message its policy rejects there; the fuzzer's
    random interfaces filled the pipe (64 KiB) in about a thousand calls, and
    the whole bus then hung in write() -- every client, the service included.
    """
    from tools.privatebus import PrivateBus

    class QuietBus(PrivateBus):
        def start(self) -> QuietBus:
            if self.kind == "broker":  # dbus-broker logs to its journal socket (lossy, never blocks), not stderr
                super().start()
                return self
            daemon = shutil.which("dbus-daemon") or "/usr/bin/dbus-daemon"
            self.config.write_text(self.config_text())
            os.chmod(self.dir, 0o755)  # noqa: S103 - the unprivileged fuzzer reaches the socket
            self.log = self.dir / "dbus-daemon.log"
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen([daemon, f"--config-file={self.config}", "--nofork", "--nopidfile"],
                                             stdout=subprocess.DEVNULL, stderr=log)  # fmt: skip
            deadline = time.monotonic() + 10
            while not self.socket.exists():
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"dbus-daemon did not start: {self.log.read_text(errors='replace')}")
                time.sleep(0.02)
            os.chmod(self.socket, 0o666)  # noqa: S103 - like /run/dbus/system_bus_socket
            return self

    return QuietBus(directory).start()


class Target:
    """A private bus with the service on a simulated machine; the service's stderr goes to a file."""

    def __init__(self, machine: str, backend: str, layout: str = "single") -> None:
        from kfdguard.simulate import bundled
        from kfdguard.simulate.render import render

        self.tmp = tempfile.TemporaryDirectory(prefix="kfdguard-fuzz-")
        directory = Path(self.tmp.name)
        os.chmod(directory, 0o755)  # noqa: S103 - the unprivileged fuzzer reaches the bus socket inside
        (directory / "bus").mkdir()
        self.bus = quiet_bus(directory / "bus")
        root = render(bundled.load(machine), directory / "machine").path
        self.log = directory / "service.log"
        from tools.launch import NotifyListener

        # systemd reads the notify socket all the time; a full queue would block the service.
        self.notify = NotifyListener(directory / "notify")
        self.messages = self.notify.messages
        env = {**os.environ, "NOTIFY_SOCKET": str(directory / "notify")}
        env.pop("JOURNAL_STREAM", None)
        argv = [sys.executable, "-m", "kfdguard.service", "--root", str(root), "--bus", self.bus.address,
                "--backend", backend, "--no-enforce"]  # fmt: skip
        if layout == "split":
            # Issue 21: the unprivileged service, which hands repairs to the oneshot (run as a child
            # here); the oneshot's boot pass first, as systemd orders it.
            top = Path(__file__).resolve().parents[1]
            subprocess.run([sys.executable, "-m", "kfdguard", "enforce", "--record", "--root", str(root)],
                           capture_output=True, timeout=120, check=False, cwd=top)  # fmt: skip
            argv[-1:] = ["--starter", "child"]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(argv, env=env, stderr=log, stdout=subprocess.DEVNULL,
                                         cwd=Path(__file__).resolve().parents[1])  # fmt: skip

    @property
    def address(self) -> str:
        return str(self.bus.address)

    def wait_ready(self, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any("READY=1" in m for m in self.messages):
            if self.proc.poll() is not None:
                raise RuntimeError(f"the service exited: {self.log.read_text()[-2000:]}")
            if time.monotonic() > deadline:
                raise TimeoutError("no READY=1 from the service")
            time.sleep(0.02)
        deadline = time.monotonic() + timeout
        while subprocess.run([shutil.which("busctl") or "busctl", "--system", "status", NAME], env=self.bus.env(),
                             capture_output=True, check=False).returncode:  # fmt: skip
            if self.proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the service did not appear on the bus: {self.log.read_text()[-2000:]}")
            time.sleep(0.05)

    def close(self) -> tuple[int | None, str]:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.notify.close()
        self.bus.stop()
        log = self.log.read_text(errors="replace")
        self.tmp.cleanup()
        return self.proc.returncode, log


def fuzz_service(machine: str, backend: str, opts: Options, layout: str = "single") -> tuple[Report, str]:
    """Start the service (``layout`` split: unprivileged, with its oneshot), fuzz it, stop it: report and log."""
    target = Target(machine, backend, layout)
    try:
        target.wait_ready()
        report = asyncio.run(run(target.address, opts, target.proc.pid))
    finally:
        code, log = target.close()
    # A clean exit on SIGTERM is part of surviving.
    if code not in (0, None):
        report.violation(f"the service exited with status {code} when stopped")
    lines = log.splitlines()
    for i, line in enumerate(lines):
        # A traceback in the service's own log is not a leak to callers, but worth a look: name its exception.
        if line.startswith("Traceback"):
            last = next((x for x in lines[i + 1 :] if x and not x.startswith((" ", "Traceback"))), "?")
            report.observations[f"service log: a traceback ending in {last[:200]}"] += 1
        elif "dispatch failed" in line or ("failed:" in line and "error" in line):
            report.observations[f"service log: {line[:200]}"] += 1
    return report, log


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m tools.dbusfuzz",
        description="Fuzz kfdguard's D-Bus service (org.kfdguard.Guardian1) with random and malformed calls\n"
        "while a well-behaved client checks that it stays correct and available.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=USAGE_EPILOG,
    )
    target = p.add_argument_group("target")
    target.add_argument("--machine", default=DEFAULT_MACHINE, metavar="NAME",
                        help=f"bundled simulated machine the service runs on (default {DEFAULT_MACHINE}; "
                        "'python -m kfdguard machines' lists them); needs root to own the name")  # fmt: skip
    target.add_argument(
        "--layout",
        choices=("single", "split"),
        default="single",
        help="single: one service that acts itself (--no-enforce); split: the unprivileged "
        "service with --starter child and its oneshot (issue 21)",
    )
    target.add_argument("--backend", choices=("fast", "next"), default="fast",
                        help="the service's D-Bus library: dbus-fast (default) or dbus-next")  # fmt: skip
    target.add_argument("--address", metavar="ADDRESS",
                        help="fuzz a service already on this bus (unix:path=...) instead of starting one")  # fmt: skip
    target.add_argument("--pid", type=int, metavar="PID", help="with --address: the service's pid, to check it lives")
    run_group = p.add_argument_group("run")
    run_group.add_argument(
        "--seed",
        type=int,
        default=1,
        help="random seed: the same seed generates the same calls (their interleaving depends on timing; default 1)",
    )
    run_group.add_argument("--duration", type=float, default=None, metavar="SECONDS",
                           help="run this long (default 10 s unless --calls is given)")  # fmt: skip
    run_group.add_argument("--calls", type=int, default=None, metavar="N", help="stop after N fuzz calls")
    run_group.add_argument("--connections", type=int, default=3, metavar="N",
                           help="fuzzing connections as root, each pipelining up to 8 calls (default 3)")  # fmt: skip
    run_group.add_argument("--max-string", type=int, default=1 << 20, metavar="BYTES",
                           help="largest string or byte array argument (default 1 MiB)")  # fmt: skip
    run_group.add_argument("--unprivileged", default="65534", metavar="UID|none",
                           help="also fuzz as this user, from a second process under setpriv (default 65534, "
                           "nobody; dbus-daemon drops uids without a passwd entry); 'none' to skip")  # fmt: skip
    run_group.add_argument("--no-raw", action="store_true", help="skip the malformed messages on a raw socket")
    out = p.add_argument_group("output")
    out.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE ('-': standard output)")
    out.add_argument(
        "--service-log", metavar="FILE", help="keep the service's stderr in FILE (when the fuzzer starts it)"
    )
    out.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return p


def options(args: argparse.Namespace) -> Options:
    duration = args.duration if args.duration is not None else (None if args.calls is not None else 10.0)
    unprivileged = None if args.unprivileged == "none" else int(args.unprivileged)
    return Options(seed=args.seed, duration=duration, calls=args.calls, connections=args.connections,
                   max_string=args.max_string, unprivileged=unprivileged, raw=not args.no_raw)  # fmt: skip


def _terminate(signum: int, frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds through fuzz_service's cleanup: no orphaned bus or service


def _worker(address: str, opts: Options) -> int:
    """The unprivileged half: its report on stdout, or why it could not run on stderr (exit 2)."""
    try:
        report = asyncio.run(run(address, opts, None, role="worker"))
    except (OSError, RuntimeError, TimeoutError) as exc:
        print(f"dbusfuzz worker: cannot run: {exc!r}", file=sys.stderr)
        return 2
    print(json.dumps(report.to_json()))
    return 1 if report.violation_count else 0


def main(argv: list[str] | None = None) -> int:
    signal.signal(signal.SIGTERM, _terminate)
    p = parser()
    try:
        args = p.parse_args(argv)
    except SystemExit as exc:
        return 0 if exc.code == 0 else 64
    if args.pid is not None and args.address is None:
        p.print_usage(sys.stderr)
        print("--pid needs --address", file=sys.stderr)
        return 64
    opts = options(args)
    if args.worker:
        if args.address is None:
            return 64
        return _worker(args.address, opts)
    try:
        if args.address is not None:
            report = asyncio.run(run(args.address, opts, args.pid))
        else:
            report, log = fuzz_service(args.machine, args.backend, opts, args.layout)
            if args.service_log:
                Path(args.service_log).write_text(log)
    except (OSError, RuntimeError, TimeoutError) as exc:
        print(f"dbusfuzz: cannot run: {exc}", file=sys.stderr)
        return 2
    print(report.text())
    if args.json:
        data = json.dumps(report.to_json(), indent=2)
        if args.json == "-":
            print(data)
        else:
            Path(args.json).write_text(data + "\n")
    return 1 if report.violation_count else 0


if __name__ == "__main__":
    sys.exit(main())
