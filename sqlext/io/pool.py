"""Thread pools for many small I/O-bound steps (listings, footer reads, moves), a task per chunk of items.

The steps wait on the file system, which releases the GIL, so a few threads overlap them. A partition commit
lists and reads footers for every partition it commits; at 10,000 partitions, a task per partition cost seconds
of submitting and waiting in the driver (profiled) for steps of about a millisecond each.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

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
    size = max(1, -(-len(items) // (IO_THREADS * CHUNKS_PER_THREAD)))
    chunks = [items[start : start + size] for start in range(0, len(items), size)]
    return [result for chunk in pool.map(lambda chunk: [step(item) for item in chunk], chunks) for result in chunk]
