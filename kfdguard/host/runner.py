"""The one subprocess runner: argv lists, LC_ALL=C, a mandatory timeout.

A helper that hangs (``modprobe`` stuck in a module's init, a bootloader tool
waiting on a lock) must never hold up the boot: after ``timeout`` seconds the
whole process group gets SIGTERM, then SIGKILL after a short grace period.
"""

from __future__ import annotations

import os
import time

from kfdguard import log
from kfdguard.record import dataclass, field

# typing costs milliseconds to import and this module is on the boot path;
# mypy treats a name TYPE_CHECKING as its own marker.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Sequence

# Enough for modprobe/modinfo/grub output; a runaway child cannot fill memory.
OUTPUT_LIMIT = 1 << 20
KILL_GRACE = 2.0
SAFE_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"


@dataclass(frozen=True, slots=True)
class RunResult:
    argv: tuple[str, ...]
    returncode: int | None  # None: never started, or killed at the timeout
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    duration: float = 0.0
    error: str | None = None  # why it could not be started

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out

    def describe(self) -> str:
        """One line saying how the command ended, for findings and logs."""
        cmd = " ".join(self.argv)
        if self.error is not None:
            return f"{cmd}: could not run: {self.error}"
        if self.timed_out:
            return f"{cmd}: killed after {self.duration:.1f} s (timeout)"
        detail = self.stderr.strip().splitlines()
        tail = f": {detail[-1]}" if detail else ""
        return f"{cmd}: exit status {self.returncode}{tail}"


@dataclass(frozen=True)
class Runner:
    """Runs host commands. Tests inject a different Runner or a recording System."""

    extra_env: dict[str, str] = field(default_factory=dict)
    kill_grace: float = KILL_GRACE

    def run(
        self,
        argv: Sequence[str],
        *,
        timeout: float,
        stdin: str | None = None,
    ) -> RunResult:
        # subprocess costs several milliseconds to import; most boot passes on a
        # healthy machine never need it.
        import subprocess

        args = tuple(argv)
        if not args:
            raise ValueError("empty argv")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        env = {"LC_ALL": "C", "PATH": SAFE_PATH, **self.extra_env}
        start = time.monotonic()
        try:
            proc = subprocess.Popen(
                args,
                stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env,
                start_new_session=True,
                close_fds=True,
            )
        except OSError as exc:
            log.warning(f"{args[0]}: could not run: {exc.strerror or exc}")
            return RunResult(args, None, error=exc.strerror or str(exc))
        data = stdin.encode() if stdin is not None else None
        timed_out = False
        try:
            out, err = proc.communicate(data, timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            out, err = self._terminate(proc)
        duration = time.monotonic() - start
        result = RunResult(
            argv=args,
            returncode=None if timed_out else proc.returncode,
            stdout=out[:OUTPUT_LIMIT].decode(errors="replace"),
            stderr=err[:OUTPUT_LIMIT].decode(errors="replace"),
            timed_out=timed_out,
            duration=duration,
        )
        if not result.ok:
            log.warning(result.describe())
        return result

    def _terminate(self, proc: subprocess.Popen[bytes]) -> tuple[bytes, bytes]:
        # Here, not at the top: signal builds its enums at import (~3 M instructions, a seventieth of
        # the boot pass, which usually runs no helper); subprocess has imported it by now anyway.
        import signal
        import subprocess

        # The child runs in its own session, so the group id is its pid: helpers
        # it started (modprobe's install commands) go down with it.
        for sig, wait in ((signal.SIGTERM, self.kill_grace), (signal.SIGKILL, None)):
            try:  # noqa: SIM105 (contextlib stays off the boot path)
                os.killpg(proc.pid, sig)
            except ProcessLookupError:
                pass
            try:
                return proc.communicate(timeout=wait)
            except subprocess.TimeoutExpired:
                continue
        return b"", b""
