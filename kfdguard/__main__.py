"""``python3 -m kfdguard``, and the units' entry: ``python3 -I -c "from kfdguard.__main__ import run; run()"``.

The units on the boot path do not use ``-m``: runpy and what it imports (importlib.util, contextlib)
cost 23 M instructions by themselves, 84 % of a bare interpreter's start (callgrind, Python 3.11);
the oneshot imports much of that anyway, and saves 4 M of its 165 M (2.5 %). ``ENTRY`` in
service/starter.py is that command line, held against the units by
tests/service/test_privsep_service.py.
"""

import sys


def run() -> None:
    """The command line in sys.argv[1:]; leaves the process with its exit status."""
    code = None
    if sys.argv[1:2] in (["enforce"], ["fallback"]) and "--record" in sys.argv:
        # The privileged oneshots' command lines (kfdguard-enforce.service, kfdguard-fallback@.service)
        # are on the boot path: they skip argparse and the full command line (kfdguard/app/oneshot.py).
        import gc

        # The process lives for one pass and leaves by os._exit below: reference counting frees what
        # it drops, and the cycle collector's passes over the objects of the ~130 modules as they were
        # imported were 5 % of its instructions (callgrind). A pass's few cycles go with the process.
        gc.disable()
        from kfdguard.app.oneshot import main as oneshot_main

        code = oneshot_main(sys.argv[1:])
        if code is None:
            gc.enable()  # not a oneshot's command line: the full CLI, which may run for long
        if code is not None:
            # The display manager waits for this process to exit, and tearing down the interpreter (its
            # ~130 modules) costs a tenth of the pass. Every file the pass wrote is closed and fsynced
            # (files.atomic_write), and kfdguard registers no atexit handler: flush and leave.
            import os

            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)
    if code is None:
        from kfdguard.cli import main

        code = main()
    raise SystemExit(code)


if __name__ == "__main__":
    run()
