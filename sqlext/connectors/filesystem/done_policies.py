"""Commit policies that tell schedulers a partition is done (after Paimon's ``partition.mark-done-action``).

- ``done-partition`` (:class:`DonePartitionPolicy`): adds a second HMS partition whose last value carries
  ``.done`` (``dt=2026-01-01/hr=00.done``), empty, for schedulers that wait on a partition name;
- ``mark-event`` (:class:`MarkEventPolicy`): ``markPartitionForEvent(..., LOAD_DONE)``, so that the HMS's
  ``isPartitionMarkedForEvent`` answers true (Hive's own readiness signal);
- ``http-report`` (:class:`HttpReportPolicy`): POSTs a JSON document per committed partition.

All follow the idempotence contract of :mod:`.policies`: run again (a replay after a crash, a late-data
re-commit) they leave the same state. A report sent again carries the same ``id`` when it reports the same
commit (a replay), a new one for a new commit (late data), so receivers dedupe on ``id``.
"""

from __future__ import annotations

import copy
import hashlib
import json
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from hmsclient.genthrift.hive_metastore import ttypes

from sqlext.connectors.filesystem import options as fso
from sqlext.connectors.filesystem.policies import PartitionCommitContext, PartitionCommitPolicy, PolicyBuilder
from sqlext.errors import PolicyError
from sqlext.faults import fault_point
from sqlext.io.fs import join
from sqlext.io.records import RecordFormat

log = logging.getLogger("sqlext.commit")

#: What the done partition's last value ends with (Paimon's name).
DONE_SUFFIX = ".done"
#: Where the report policy remembers, per partition, the id of the partition's first reported commit.
REPORTED_DIR = "_sqlext/reported"
#: Version 1: ``id``, the first reported commit of the partition (markers written before versions were
#: recorded have no version).
REPORTED_FORMAT = RecordFormat("reported-commit marker", 1)
#: Backoff between report attempts: doubling from the first, at most the last.
FIRST_BACKOFF_S = 0.1
MAX_BACKOFF_S = 2.0
#: Answers worth retrying: the receiver is overloaded, restarting or timed out.
RETRIED_STATUS = frozenset({408, 425, 429, 500, 502, 503, 504})


def done_values(values: Sequence[str]) -> list[str]:
    """The values of a partition's done partition: the last one with ``.done`` appended."""
    return [*values[:-1], values[-1] + DONE_SUFFIX]


def is_done_partition(values: Sequence[str]) -> bool:
    """Whether an HMS partition is a done partition (its last value ends with ``.done``)."""
    return bool(values) and values[-1].endswith(DONE_SUFFIX)


def _require_metastore(context: PartitionCommitContext, kind: str) -> tuple[Any, ttypes.Table]:
    if context.metastore is None or context.hms_table is None:
        raise PolicyError(
            f"The '{kind}' commit policy needs the table in a metastore; {context.table.identifier} has none.",
            option=fso.COMMIT_POLICY_KIND.key,
            value=kind,
        )
    return context.metastore, context.hms_table


class DonePartitionPolicy(PartitionCommitPolicy):
    """Add the done partition of each committed partition to the HMS (once: a re-commit finds it there).

    It has no rows: its location is the directory ``<path>/k=v/.../last=<value>.done`` (created empty by the
    metastore) and its statistics say 0 files and 0 rows, so a query over the table reads nothing from it."""

    def commit_all(self, contexts: Sequence[PartitionCommitContext]) -> None:
        if not contexts:
            return
        metastore, hms_table = _require_metastore(contexts[0], fso.POLICY_DONE_PARTITION)
        database, table = hms_table.dbName, hms_table.tableName
        partitions = []
        for context in contexts:
            values = done_values(context.values)
            storage = copy.deepcopy(hms_table.sd)
            storage.location = context.path + DONE_SUFFIX
            parameters = {"numFiles": "0", "totalSize": "0", "numRows": "0", "sqlext.done-partition": "true"}
            partitions.append(
                ttypes.Partition(values=values, dbName=database, tableName=table, sd=storage, parameters=parameters)
            )
        added = metastore.add_partitions(database, table, partitions, need_result=True)
        log.info("done-partition: %s.%s: %d done partition(s) added", database, table, len(added))


class MarkEventPolicy(PartitionCommitPolicy):
    """Mark each committed partition ``LOAD_DONE`` in the HMS (``markPartitionForEvent``); marking again
    only records the event again."""

    def commit(self, context: PartitionCommitContext) -> None:
        metastore, hms_table = _require_metastore(context, fso.POLICY_MARK_EVENT)
        metastore.call(
            "markPartitionForEvent",
            hms_table.dbName,
            hms_table.tableName,
            context.spec,
            ttypes.PartitionEventType.LOAD_DONE,
        )


def report_id(table: str, query: str, partition: str, first_seen_ms: int | None, batch: int | None) -> str:
    """The id of the report of one commit of a partition: the same when the same commit is reported again
    (it depends only on what a replay recomputes: the table, the writing query, the partition and when its
    pending data was first written), a new one for a later commit."""
    text = f"{table}\n{query}\n{partition}\n{first_seen_ms if first_seen_ms is not None else f'batch {batch}'}"
    return hashlib.sha256(text.encode()).hexdigest()[:32]


class HttpReportPolicy(PartitionCommitPolicy):
    """POST a JSON report of each committed partition to ``url`` (see docs/partition-commit.md for the
    document). Retries with backoff for ``timeout``; past it the commit fails naming the URL, so the insert
    stops and its restart reports again."""

    def __init__(self, url: str, timeout: timedelta = timedelta(seconds=5), params: str | None = None) -> None:
        self.url = url
        self.timeout = timeout
        self.params = params

    def commit_all(self, contexts: Sequence[PartitionCommitContext]) -> None:
        for context in contexts:
            self.commit(context)
        if contexts:
            fault_point("after-report", contexts[0].batch)

    def commit(self, context: PartitionCommitContext) -> None:
        document = self.document(context)
        self._post(document, context)
        self._remember_first(context, document["id"])

    def document(self, context: PartitionCommitContext) -> dict[str, Any]:
        """The JSON document reporting this commit of the partition."""
        ident = context.table.identifier
        table = f"{ident.database}.{ident.name}"
        commit_id = report_id(table, context.query, context.relative_path, context.first_seen_ms, context.batch)
        first = self._first_id(context)
        return {
            "id": commit_id,
            "table": table,
            "partition": ",".join(f"{key}={value}" for key, value in zip(context.keys, context.values, strict=True)),
            "location": context.path,
            "query": context.query,
            "batch_id": context.batch,
            "commit_time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "rows": context.row_count,
            "files": len(context.files),
            "size": context.total_size,
            "late": first is not None and first != commit_id,
            "params": self.params,
        }

    # The id of the partition's first reported commit, kept beside the table: ``late`` is true for every
    # other commit, also when a replay reports a late commit again after a restart.
    @staticmethod
    def _marker(context: PartitionCommitContext) -> str:
        root = context.path[: len(context.path) - len(context.relative_path)].rstrip("/")
        return join(root, REPORTED_DIR, context.relative_path + ".json")

    def _first_id(self, context: PartitionCommitContext) -> str | None:
        try:
            return str(REPORTED_FORMAT.read(context.fs, self._marker(context))["id"])
        except FileNotFoundError:
            return None

    def _remember_first(self, context: PartitionCommitContext, commit_id: str) -> None:
        if self._first_id(context) is None:
            REPORTED_FORMAT.write(context.fs, self._marker(context), {"id": commit_id})

    def _post(self, document: dict[str, Any], context: PartitionCommitContext) -> None:
        body = json.dumps(document, sort_keys=True).encode()
        headers = {"Content-Type": "application/json", "Idempotency-Key": str(document["id"])}
        deadline = time.monotonic() + self.timeout.total_seconds()
        backoff = FIRST_BACKOFF_S
        attempts = 0
        while True:
            attempts += 1
            remaining = deadline - time.monotonic()
            request = urllib.request.Request(self.url, data=body, headers=headers, method="POST")
            try:
                with urllib.request.urlopen(request, timeout=max(remaining, 0.1)) as response:
                    response.read()
                return
            except urllib.error.HTTPError as exc:
                error: str = f"HTTP {exc.code} {exc.reason}"
                if exc.code not in RETRIED_STATUS:
                    raise self._failure(context, attempts, error) from exc
            except (urllib.error.URLError, OSError) as exc:
                error = str(getattr(exc, "reason", exc))
            if time.monotonic() + backoff > deadline:
                raise self._failure(context, attempts, error)
            log.warning("http-report: %s did not take the report of %s (%s); retrying", self.url, context.path, error)
            time.sleep(backoff)
            backoff = min(backoff * 2, MAX_BACKOFF_S)

    def _failure(self, context: PartitionCommitContext, attempts: int, error: str) -> PolicyError:
        return PolicyError(
            f"http-report: could not report partition '{context.relative_path}' of {context.table.identifier} to "
            f"{self.url} within {self.timeout.total_seconds():g} s ({attempts} attempt(s); last: {error}). The "
            "partition is in place but not marked committed; run the insert again once the receiver answers: it "
            "reports again, with the same id.",
            option=fso.HTTP_REPORT_URL.key,
            value=self.url,
        )


def _http_report(options: Any) -> PartitionCommitPolicy:
    url = options.get(fso.HTTP_REPORT_URL)
    if not url:
        fallbacks = ", ".join(repr(key) for key in fso.HTTP_REPORT_URL.fallback_keys)
        raise PolicyError(
            "sink.partition-commit.policy.kind includes 'http-report' but "
            f"'{fso.HTTP_REPORT_URL.key}' (or {fallbacks}) is not set.",
            option=fso.HTTP_REPORT_URL.key,
        )
    return HttpReportPolicy(url, options.get(fso.HTTP_REPORT_TIMEOUT), options.get(fso.HTTP_REPORT_PARAMS))


#: The kinds of ``sink.partition-commit.policy.kind`` this module builds.
MARK_DONE_POLICIES: dict[str, PolicyBuilder] = {
    fso.POLICY_DONE_PARTITION: lambda options: DonePartitionPolicy(),
    fso.POLICY_MARK_EVENT: lambda options: MarkEventPolicy(),
    fso.POLICY_HTTP_REPORT: _http_report,
}
