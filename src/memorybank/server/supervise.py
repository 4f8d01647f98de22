"""Workers of ``memorybank serve --workers N`` end with their master.

uvicorn's master binds the socket and spawns the workers, which inherit it. A
master killed with SIGKILL cannot stop them: they would keep accepting
connections on the port, with nobody to restart or stop them (a supervisor such
as systemd sees the service gone, a new master fails to bind, a load balancer
still finds the port open). So ``memorybank serve`` records its pid in
``$MEMORYBANK_SERVE_MASTER_PID`` and each worker, as it builds its app, asks to
be sent SIGTERM when its parent dies: ``prctl(PR_SET_PDEATHSIG)`` on Linux, a
thread watching the parent pid (every 0.5 s) elsewhere. SIGTERM is uvicorn's
graceful stop: the worker closes the listening socket at once and lets the
requests it has in flight finish.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

__all__ = ["MASTER_PID_ENV", "exit_with_master"]

MASTER_PID_ENV = "MEMORYBANK_SERVE_MASTER_PID"
_PR_SET_PDEATHSIG = 1
_WATCH_SECONDS = 0.5


def exit_with_master() -> None:
    """In a worker process of ``memorybank serve``: SIGTERM when the master dies.

    Does nothing outside ``serve`` (no ``$MEMORYBANK_SERVE_MASTER_PID``) and in
    the master itself (one worker: uvicorn serves in the master's process).
    """
    raw = os.environ.get(MASTER_PID_ENV)
    if not raw or not raw.isdigit() or int(raw) == os.getpid():
        return
    master = int(raw)
    if not _death_signal(signal.SIGTERM):
        threading.Thread(target=_watch, args=(master,), name="master-watch", daemon=True).start()
    if os.getppid() != master:  # the master died before the request took effect
        os.kill(os.getpid(), signal.SIGTERM)


def _death_signal(sig: signal.Signals) -> bool:
    """Ask the kernel for ``sig`` on the parent's death (Linux); whether it took."""
    if sys.platform != "linux":
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def _watch(master: int) -> None:
    while os.getppid() == master:
        threading.Event().wait(_WATCH_SECONDS)
    os.kill(os.getpid(), signal.SIGTERM)
