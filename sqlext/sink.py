"""What the insert path hands a connector's sink, and what a sink must do with it."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from pyspark.sql import DataFrame
    from pyspark.sql.streaming import StreamingQuery


@dataclass(frozen=True)
class InsertPlan:
    """One ``INSERT INTO``: how its rows are to be written.

    ``query_name`` is the insert's stable identity across restarts (Flink's ``pipeline.name``; by
    default derived from the sink table) and names its checkpoint directory ``checkpoint_location``.
    """

    query_name: str
    checkpoint_location: str
    static_partitions: Mapping[str, str] = field(default_factory=dict)
    overwrite: bool = False
    trigger_interval: str | None = None
    available_now: bool = False
    #: Turns each micro-batch of the streamed rows into the rows to write (a lookup join's per-batch query,
    #: see :mod:`sqlext.jobs.lookup_join`); only for sinks whose ``runs_batch_rows`` is true.
    batch_rows: Callable[[DataFrame], DataFrame] | None = None
    #: Whether the commit reads written files for partition statistics that need them (``numRows``: footers,
    #: the lines of csv and json files); Flink's ``table.exec.hive.sink.statistic-auto-gather.enable``.
    gather_statistics: bool = True


class TableSink(ABC):
    """A sink built by a connector factory for one table."""

    #: Whether :meth:`start_stream` applies ``plan.batch_rows`` to each micro-batch.
    runs_batch_rows: ClassVar[bool] = False

    @abstractmethod
    def start_stream(self, rows: DataFrame, plan: InsertPlan) -> StreamingQuery:
        """Start a streaming query writing ``rows`` (a streaming DataFrame) and return it at once."""

    @abstractmethod
    def write_batch(self, rows: DataFrame, plan: InsertPlan) -> None:
        """Write ``rows`` (a bounded DataFrame) completely before returning."""
