"""Builds the Debian package in a clean room, the way Debian's buildds do.

A minimal chroot (debootstrap --variant=buildd: essential packages and
build-essential, nothing else) is kept as a cache outside the tree. Each build
runs in a throw-away copy of it (an overlayfs upper layer, or a plain copy
where overlayfs is not available): the Build-Depends of debian/control are
installed there with apt-get build-dep, then dpkg-buildpackage runs as an
unprivileged user with no network. A package the build or its tests need and
debian/control does not declare therefore fails the build on every machine,
the developer's included; nothing installed on the host can hide it.

    python3 scripts/cleanroom.py build --src DIR --out build/deb   # as root
    python3 scripts/cleanroom.py refresh | info | clean

The archive is the host's own (scripts/aptsources.py reads /etc/apt). Cache:
$KFDGUARD_BUILDD_CACHE (default /var/cache/kfdguard): buildd-SUITE/ (the
chroot), buildd-SUITE.json (its key and age), debs/ (downloaded .debs, shared
with debootstrap), runs/ (the throw-away copies, removed after each build).
Stdlib only: it runs with Debian's python3 before any virtualenv exists.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import aptsources  # a sibling script, not an installed module

SUITE = "bookworm"
VARIANT = "buildd"
# A chroot older than this is brought up to date (apt-get update, dist-upgrade)
# before the next build: the archive moves on (security, point releases).
MAX_AGE_DAYS = 7
# The build runs as this unprivileged user: debian/control says
# Rules-Requires-Root: no, and a test that needs root must not pass by accident.
BUILD_USER = "builder"
# Bump when create_base() makes the chroot differently: the cached one is rebuilt.
CHROOT_RECIPE = 1
SYSTEM_PATH = "/usr/sbin:/usr/bin:/sbin:/bin"
# Raised by every step's timeout; generous for a 2-CPU machine shared by others.
DEBOOTSTRAP_TIMEOUT = 1200
APT_TIMEOUT = 900
BUILD_TIMEOUT = 1800


class CleanroomError(Exception):
    """A step failed; the message says which and where its log is."""


T0 = time.monotonic()


def log(msg: str) -> None:
    print(f"cleanroom [{time.monotonic() - T0:4.0f} s]: {msg}", flush=True)


def env(**extra: str) -> dict[str, str]:
    out = {
        "PATH": SYSTEM_PATH,
        "LC_ALL": "C.UTF-8",
        "DEBIAN_FRONTEND": "noninteractive",
        "HOME": "/root",
    }
    out.update(extra)
    return out


def run(argv: Sequence[str | Path], *, logfile: Path, timeout: float, what: str) -> None:
    """Runs argv with its output appended to logfile; raises CleanroomError on failure."""
    args = [str(a) for a in argv]
    with logfile.open("a", encoding="utf-8") as fh:
        fh.write(f"\n$ {' '.join(args)}\n")
        fh.flush()
        try:
            proc = subprocess.run(
                args,
                stdin=subprocess.DEVNULL,
                stdout=fh,
                stderr=subprocess.STDOUT,
                env=env(),
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise CleanroomError(f"{what}: timed out after {timeout:.0f} s (log {logfile})") from exc
        except OSError as exc:
            raise CleanroomError(f"{what}: cannot run {args[0]}: {exc}") from exc
    if proc.returncode != 0:
        raise CleanroomError(f"{what} failed (rc {proc.returncode}); log {logfile}")


def tail(path: Path, lines: int) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return f"({path} unreadable: {exc})"
    return "\n".join(text.splitlines()[-lines:])


class Cache:
    def __init__(self, top: Path, suite: str) -> None:
        self.top = top
        self.suite = suite
        self.base = top / f"buildd-{suite}"
        self.keyfile = top / f"buildd-{suite}.json"
        self.debs = top / "debs"
        self.runs = top / "runs"
        self.logs = top / "logs"

    @contextlib.contextmanager
    def lock(self) -> Iterator[None]:
        """One build at a time per cache: refresh and copy must not overlap."""
        self.top.mkdir(parents=True, exist_ok=True)
        with (self.top / "lock").open("w") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            yield

    def stored(self) -> dict[str, object] | None:
        try:
            data = json.loads(self.keyfile.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if isinstance(data, dict) else None


def chroot_key(suite: str, lines: Sequence[str]) -> dict[str, object]:
    """What the chroot is made of: a change rebuilds it from scratch."""
    return {"suite": suite, "variant": VARIANT, "sources": list(lines), "recipe": CHROOT_RECIPE}


@contextlib.contextmanager
def mounted(root: Path, debs: Path | None) -> Iterator[None]:
    """proc, sysfs, /dev (bind) and, when given, the shared .deb cache inside root.

    As schroot and sbuild give a build: some tests read the build machine
    itself (kfdguard check on this host), as a user's machine would be read."""
    done: list[Path] = []
    try:
        for target, argv in (
            (root / "proc", ["mount", "-t", "proc", "proc"]),
            (root / "sys", ["mount", "-t", "sysfs", "-o", "ro,nosuid,nodev,noexec", "sysfs"]),
            (root / "dev", ["mount", "--bind", "/dev"]),
            (root / "dev/pts", ["mount", "--bind", "/dev/pts"]),
        ):
            subprocess.run([*argv, str(target)], check=True, timeout=30, env=env())
            done.append(target)
        if debs is not None:
            target = root / "var/cache/apt/archives"
            target.mkdir(parents=True, exist_ok=True)
            subprocess.run(["mount", "--bind", str(debs), str(target)], check=True, timeout=30, env=env())
            done.append(target)
        yield
    except subprocess.CalledProcessError as exc:
        raise CleanroomError(f"mount failed inside {root}: {exc}") from exc
    finally:
        for target in reversed(done):
            subprocess.run(["umount", "-l", str(target)], check=False, timeout=30, env=env())


def in_chroot(root: Path, *argv: str) -> list[str]:
    return ["chroot", str(root), *argv]


def apt(root: Path, *args: str) -> list[str]:
    # Recommends are not build dependencies (buildds do the same).
    return in_chroot(root, "apt-get", "-q", "-y", "-o", "APT::Install-Recommends=false", *args)


def create_base(cache: Cache, lines: Sequence[str], key: dict[str, object], logfile: Path) -> None:
    mirror = lines[0].split()[1]
    work = cache.top / f"buildd-{cache.suite}.new"
    if work.exists():
        shutil.rmtree(work)
    cache.debs.mkdir(parents=True, exist_ok=True)
    t0 = time.monotonic()
    log(f"creating the {VARIANT} chroot for {cache.suite} from {mirror} (log {logfile})")
    run(
        [
            "debootstrap",
            f"--variant={VARIANT}",
            f"--cache-dir={cache.debs}",
            cache.suite,
            work,
            mirror,
        ],
        logfile=logfile,
        timeout=DEBOOTSTRAP_TIMEOUT,
        what="debootstrap",
    )
    (work / "etc/apt/sources.list").write_text("\n".join(lines) + "\n", encoding="utf-8")
    # The throw-away copies need no documentation; a smaller tree copies faster.
    (work / "etc/dpkg/dpkg.cfg.d/01-nodoc").write_text(
        "path-exclude /usr/share/doc/*\npath-include /usr/share/doc/*/copyright\n"
        "path-exclude /usr/share/man/*\npath-exclude /usr/share/locale/*\n",
        encoding="utf-8",
    )
    run(
        in_chroot(work, "useradd", "--create-home", "--home-dir", f"/home/{BUILD_USER}", BUILD_USER),
        logfile=logfile,
        timeout=60,
        what="useradd",
    )
    with mounted(work, cache.debs):
        upgrade(work, logfile)
    if cache.base.exists():
        shutil.rmtree(cache.base)
    work.rename(cache.base)
    write_key(cache, key)
    log(f"chroot ready in {time.monotonic() - t0:.0f} s: {cache.base}")


def upgrade(root: Path, logfile: Path) -> None:
    run(apt(root, "update"), logfile=logfile, timeout=APT_TIMEOUT, what="apt-get update")
    run(apt(root, "dist-upgrade"), logfile=logfile, timeout=APT_TIMEOUT, what="apt-get dist-upgrade")


def write_key(cache: Cache, key: dict[str, object]) -> None:
    data = dict(key, refreshed=int(time.time()))
    cache.keyfile.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")


def ensure_base(cache: Cache, max_age_days: float) -> None:
    """Creates the chroot when missing or made differently, refreshes it when old."""
    lines = aptsources.chroot_lines(cache.suite, aptsources.read_sources())
    key = chroot_key(cache.suite, lines)
    stored = cache.stored()
    cache.logs.mkdir(parents=True, exist_ok=True)
    logfile = cache.logs / "chroot.log"
    if stored is None or not cache.base.is_dir() or {k: stored.get(k) for k in key} != key:
        why = "missing" if stored is None or not cache.base.is_dir() else "made differently"
        log(f"chroot {why}")
        logfile.write_text("", encoding="utf-8")
        create_base(cache, lines, key, logfile)
        return
    refreshed = stored.get("refreshed")
    age = time.time() - refreshed if isinstance(refreshed, int) else float("inf")
    if age > max_age_days * 86400:
        log(f"chroot is {age / 86400:.1f} days old: apt-get update and dist-upgrade (log {logfile})")
        with mounted(cache.base, cache.debs):
            upgrade(cache.base, logfile)
        write_key(cache, key)


@contextlib.contextmanager
def throwaway(cache: Cache) -> Iterator[Path]:
    """A writable copy of the chroot, gone afterwards: overlayfs, else cp -a."""
    cache.runs.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix="run-", dir=cache.runs))
    root = work / "root"
    overlay = False
    try:
        for d in ("upper", "work", "root"):
            (work / d).mkdir()
        opts = f"lowerdir={cache.base},upperdir={work / 'upper'},workdir={work / 'work'}"
        proc = subprocess.run(
            ["mount", "-t", "overlay", "overlay", "-o", opts, str(root)],
            capture_output=True,
            text=True,
            timeout=30,
            env=env(),
            check=False,
        )
        overlay = proc.returncode == 0
        if not overlay:
            log(f"overlayfs unavailable ({proc.stderr.strip()}): copying the chroot")
            root.rmdir()
            subprocess.run(["cp", "-a", str(cache.base), str(root)], check=True, timeout=600, env=env())
        yield root
    finally:
        if overlay:
            subprocess.run(["umount", "-l", str(root)], check=False, timeout=60, env=env())
        if not any(str(work) in line for line in Path("/proc/self/mounts").read_text().splitlines()):
            shutil.rmtree(work, ignore_errors=True)
        else:
            log(f"left {work} in place: something is still mounted inside it")


def build(cache: Cache, src: Path, out: Path, max_age_days: float, *, nocheck: bool = False) -> Path:
    """Builds the package from src (a copy of the tree) into out; returns the log."""
    out.mkdir(parents=True, exist_ok=True)
    logfile = out.resolve() / "build.log"
    logfile.write_text("", encoding="utf-8")
    with cache.lock():
        ensure_base(cache, max_age_days)
        with throwaway(cache) as root, mounted(root, cache.debs):
            pkgdir = Path("/build") / src.resolve().name
            target = root / pkgdir.relative_to("/")
            target.parent.mkdir(parents=True)
            shutil.copytree(src, target, symlinks=True)
            log(f"throw-away chroot ready at {root}, source copied to {pkgdir}")
            t0 = time.monotonic()
            try:
                run(apt(root, "build-dep", str(pkgdir)), logfile=logfile, timeout=APT_TIMEOUT, what="apt-get build-dep")
            except CleanroomError:
                # The lists may name .debs the archive has replaced since (security updates).
                log("apt-get build-dep failed: apt-get update and one more try")
                run(apt(root, "update"), logfile=logfile, timeout=APT_TIMEOUT, what="apt-get update")
                run(apt(root, "build-dep", str(pkgdir)), logfile=logfile, timeout=APT_TIMEOUT, what="apt-get build-dep")
            log(f"Build-Depends installed in {time.monotonic() - t0:.0f} s")
            run(
                in_chroot(root, "chown", "-R", f"{BUILD_USER}:{BUILD_USER}", str(pkgdir.parent)),
                logfile=logfile,
                timeout=120,
                what="chown",
            )
            t0 = time.monotonic()
            # unshare --net: a build that reaches for the network fails here as on a buildd.
            script = f"cd {pkgdir} && exec dpkg-buildpackage -us -uc"
            argv = ["unshare", "--net", "chroot", f"--userspec={BUILD_USER}:{BUILD_USER}", str(root)]
            argv += ["env", "-i", f"PATH={SYSTEM_PATH}", "LC_ALL=C.UTF-8", f"HOME=/home/{BUILD_USER}"]
            if nocheck:
                argv += ["DEB_BUILD_OPTIONS=nocheck", "DEB_BUILD_PROFILES=nocheck"]
            argv += ["sh", "-c", script]
            run(argv, logfile=logfile, timeout=BUILD_TIMEOUT, what="dpkg-buildpackage")
            log(f"dpkg-buildpackage took {time.monotonic() - t0:.0f} s")
            for artefact in sorted(target.parent.iterdir()):
                if artefact.is_file():
                    shutil.copy2(artefact, out / artefact.name)
            log("artefacts copied; removing the throw-away chroot")
    return logfile


def cmd_build(args: argparse.Namespace, cache: Cache) -> int:
    src = Path(args.src)
    if not (src / "debian/control").is_file():
        raise CleanroomError(f"{src}: no debian/control")
    t0 = time.monotonic()
    try:
        build(cache, src, Path(args.out), args.max_age_days, nocheck=args.nocheck)
    except CleanroomError:
        print(tail(Path(args.out) / "build.log", 60), file=sys.stderr)
        raise
    log(f"built in {time.monotonic() - t0:.0f} s: {', '.join(sorted(p.name for p in Path(args.out).glob('*.deb')))}")
    return 0


def cmd_refresh(args: argparse.Namespace, cache: Cache) -> int:
    with cache.lock():
        ensure_base(cache, 0 if args.now else args.max_age_days)
    return 0


def cmd_info(_args: argparse.Namespace, cache: Cache) -> int:
    print(json.dumps({"chroot": str(cache.base), "exists": cache.base.is_dir(), "key": cache.stored()}, indent=1))
    return 0


def cmd_clean(_args: argparse.Namespace, cache: Cache) -> int:
    with cache.lock():
        for path in (cache.base, cache.runs, cache.top / f"buildd-{cache.suite}.new"):
            if path.exists():
                shutil.rmtree(path)
        cache.keyfile.unlink(missing_ok=True)
    log(f"removed the chroot under {cache.top} (the .deb cache {cache.debs} stays)")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="cleanroom.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--cache", default=os.environ.get("KFDGUARD_BUILDD_CACHE", "/var/cache/kfdguard"))
    parser.add_argument("--suite", default=SUITE)
    parser.add_argument("--max-age-days", type=float, default=MAX_AGE_DAYS)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("build", help="build the package from --src into --out")
    p.add_argument("--src", required=True, help="a copy of the source tree (its name becomes /build/NAME)")
    p.add_argument("--out", required=True)
    p.add_argument("--nocheck", action="store_true", help="DEB_BUILD_OPTIONS=nocheck: no tests (an old release)")
    p = sub.add_parser("refresh", help="create the chroot, or bring it up to date when old")
    p.add_argument("--now", action="store_true", help="update it even if it is recent")
    sub.add_parser("info", help="where the chroot is and what it is made of")
    sub.add_parser("clean", help="remove the chroot (not the .deb cache)")
    args = parser.parse_args(argv)
    if os.geteuid() != 0 and args.command != "info":
        print("cleanroom: needs root (debootstrap, chroot, mount)", file=sys.stderr)
        return 2
    cache = Cache(Path(args.cache), args.suite)
    commands = {"build": cmd_build, "refresh": cmd_refresh, "info": cmd_info, "clean": cmd_clean}
    try:
        return commands[args.command](args, cache)
    except (CleanroomError, aptsources.AptSourcesError) as exc:
        print(f"cleanroom: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
