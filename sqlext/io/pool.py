"""Thread pools for many small I/O-bound steps (listings, footer reads, moves), a task per chunk of items.

The steps wait on the file system, which releases the GIL, so a few threads overlap them. A partition commit
lists and reads footers for every partition it commits; at 10,000 partitions, a task per partition cost seconds
of submitting and waiting in the driver (profiled) for steps of about a millisecond each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Generic, TypeVar

T = TypeVar("T")
R = TypeVar("R")

#: Threads of an I/O pool.
IO_THREADS = 8
#: Chunks per thread: enough that a slow chunk (a large partition) does not leave the other threads idle.
CHUNKS_PER_THREAD = 4


def io_pool(name: str) -> ThreadPoolExecutor:
    """A pool of ``IO_THREADS`` threads named ``name-N``."""
    return ThreadPoolExecutor(IO_THREADS, thread_name_prefix=name)


def map_in_chunks(pool: ThreadPoolExecutor, step: Callable[[T], R], items: Sequence[T]) -> list[R]:
    """``step`` on every item on an :func:`io_pool`, the results in the items' order. Up to ``IO_THREADS``
    items go one per task (as parallel as a task per item); more go in ``CHUNKS_PER_THREAD`` chunks per
    thread."""
    chunks = pool.map(lambda chunk: [step(item) for item in chunk], _chunks(items))
    return [result for chunk in chunks for result in chunk]


def submit_in_chunks(pool: ThreadPoolExecutor, step: Callable[[T], R], items: Sequence[T]) -> InFlight[R]:
    """:func:`map_in_chunks` started, not waited for: the caller does other work while the pool runs the steps,
    then asks for the results (or cancels them)."""
    return InFlight([pool.submit(lambda chunk: [step(item) for item in chunk], chunk) for chunk in _chunks(items)])


class InFlight(Generic[R]):
    """The results of :func:`submit_in_chunks`, in the items' order, once its steps ended."""

    def __init__(self, futures: list[Future[list[R]]]) -> None:
        self._futures = futures

    def results(self) -> list[R]:
        """The results; a failed step's error is raised once every step under way ended, the others not started
        being cancelled."""
        results: list[R] = []
        for future in self._futures:
            try:
                results.extend(future.result())
            except BaseException:
                self.cancel()
                raise
        return results

    def cancel(self) -> None:
        """Cancel the steps not started, and wait for those under way to end (their results are dropped)."""
        for future in self._futures:
            future.cancel()
        wait(self._futures)


def _chunks(items: Sequence[T]) -> list[Sequence[T]]:
    size = max(1, -(-len(items) // (IO_THREADS * CHUNKS_PER_THREAD)))
    return [items[start : start + size] for start in range(0, len(items), size)]
