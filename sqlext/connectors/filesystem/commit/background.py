"""The background committer of a running streaming insert: one thread that runs its batches' moves and
partition commits (steps 3-4 of :mod:`.committer`) one at a time, in the order they are handed in, while
Spark writes the next batch.

At most one piece of work is outstanding: handing in the next waits for the previous one, which is the
stream's back-pressure (a ``foreachBatch`` that waits, never a queue that grows). A failure is kept: every
later wait raises it again, so nothing is committed after a batch whose commit failed, and the insert
fails with that batch's own error.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait

log = logging.getLogger("sqlext.commit")


class BackgroundCommits:
    """One insert's background committer thread (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._executor = ThreadPoolExecutor(1, thread_name_prefix=f"sqlext-commit-{name}")
        self._outstanding: Future[object] | None = None
        self._failure: BaseException | None = None

    def submit(self, work: Callable[[], object], what: str) -> None:
        """Hand in ``work`` (``what`` names it in the log), once the work handed in before has finished;
        raise that work's failure instead if it failed."""
        self.wait()
        self._outstanding = self._executor.submit(self._run, work, what)

    def _run(self, work: Callable[[], object], what: str) -> object:
        try:
            return work()
        except BaseException as exc:
            # Said at once: the insert itself fails only at its next batch, its stop or its end of input.
            log.error("%s: %s failed; the insert fails with this error at its next batch: %s", self.name, what, exc)
            raise

    def wait(self, timeout_s: float | None = None) -> bool:
        """Wait for the outstanding work; raise the failure of any work handed in so far (each time it is
        asked); False when it is still running after ``timeout_s``."""
        if not self.idle(timeout_s):
            return False
        if self._failure is not None:
            raise self._failure
        return True

    def idle(self, timeout_s: float | None = None) -> bool:
        """Wait for the outstanding work, without raising its failure; False after ``timeout_s``."""
        outstanding = self._outstanding
        if outstanding is None:
            return True
        done, _ = wait([outstanding], timeout_s)
        if not done:
            return False
        failure = outstanding.exception()
        if failure is not None and self._failure is None:
            self._failure = failure
        return True

    @property
    def failed(self) -> bool:
        """Whether work handed in has failed (known without waiting)."""
        outstanding = self._outstanding
        return self._failure is not None or (
            outstanding is not None and outstanding.done() and outstanding.exception() is not None
        )

    def close(self) -> None:
        """Wait for the outstanding work (without raising), then end the thread."""
        self.idle()
        self._executor.shutdown(wait=True)
