"""The watermark that follows a micro-batch's own rows, known while the batch commits.

Flink's committer decides at checkpoint N with the watermark that followed the rows of checkpoint N. Spark
runs batch N with the watermark computed from the batches before it (``batchWatermarkMs`` in the offset
log) and computes the next one after the batch, from the max event time each ``EventTimeWatermarkExec``
of the batch's plan saw (an accumulator). The rows of a ``foreachBatch`` batch are that plan's RDD, so once
the sink has written them the accumulator holds the batch's max event time: the watermark Spark will give
batch N+1 is ``max(batchWatermarkMs, max event time - delay)``, and partitions it passes can be committed
by batch N itself, as Flink commits them.

Only a plan with one watermark operator is read (Spark combines several with
``spark.sql.streaming.multipleWatermarkPolicy`` and state this module cannot see); with none, or several,
the answer is None and the batch commits with the watermark Spark ran it with. The value is recorded in
the batch's commit-log entry before anything moves, so a replayed batch decides as the first run did.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("sqlext.commit")

_WATERMARK_OPERATOR = "EventTimeWatermarkExec"


def batch_end_watermark(spark: Any, query_name: str) -> int | None:
    """The watermark after the rows of the running batch of the active streaming query ``query_name``
    (epoch ms; the batch's rows must have been computed), or None when it cannot be known here."""
    try:
        execution = _last_execution(spark, query_name)
        if execution is None:
            return None
        operators = _watermark_operators(execution.executedPlan())
        if len(operators) != 1:
            return None
        [operator] = operators
        stats = operator.eventTimeStats().value()
        if int(stats.count()) <= 0:
            return None
        return int(stats.max()) - int(operator.delayMs())
    except Exception as exc:  # never fail a batch over it: the batch then commits one batch later
        log.debug("%s: the batch's own max event time could not be read: %s", query_name, exc)
        return None


def _last_execution(spark: Any, query_name: str) -> Any:
    for wrapper in spark._jsparkSession.streams().active():
        if wrapper.name() == query_name:
            return wrapper.streamingQuery().lastExecution()
    return None


def _watermark_operators(plan: Any) -> list[Any]:
    found = []
    stack = [plan]
    while stack:
        node = stack.pop()
        if node.getClass().getSimpleName() == _WATERMARK_OPERATOR:
            found.append(node)
        children = node.children()
        stack.extend(children.apply(index) for index in range(children.size()))
    return found
