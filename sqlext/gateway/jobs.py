"""The streaming inserts started through the gateway, listed and stopped from any session.

Each session of the gateway is a Spark session of its own, and Spark lists a streaming query only in
the session that started it. A client that disconnects leaves its inserts running; the next client
must still see and stop them. So the gateway keeps the jobs itself, for all sessions, and answers
Flink's ``SHOW JOBS`` and ``STOP JOB '<id>'`` from here. A job is listed from the moment its INSERT
returns until the gateway stops, with Flink's states: RUNNING (also while a bounded insert commits its
last partitions), FINISHED (a bounded insert that read all its input and committed it), FAILED,
CANCELED (stopped with ``STOP JOB``). Each row also shows the job's checkpoint and whose it is (see
:mod:`sqlext.jobs.checkpoint`): what runs again when the same insert is started again.

Each job records its owner, the user whose session started it. ``SHOW JOBS`` lists, and ``STOP JOB``
stops, the user's own jobs; users in ``spark.sqlext.gateway.admins`` see and stop all. Another user's
job is answered as one that does not exist, so its id tells nothing; but the owner of the table a job
writes into sees and stops it too (see docs/authorization.md).
"""

from __future__ import annotations

import logging
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from TCLIService import ttypes

from sqlext.errors import SqlextError
from sqlext.gateway.results import ResultColumn, ResultSet
from sqlext.sql.parser import parse_statement
from sqlext.sql.statements import ShowJobs, StopJob

if TYPE_CHECKING:
    from sqlext.connectors.filesystem.sink import RunningInsert

log = logging.getLogger("sqlext.gateway")
#: How long STOP JOB waits for a stopped insert to close its committer.
STOP_WAIT_S = 60.0

#: Statements the registry answers (read by sqlext's parser once this cheap test matched).
JOB_STATEMENT = re.compile(r"^\s*(SHOW\s+JOBS|STOP\s+JOB)\b", re.IGNORECASE)
T = ttypes.TTypeId
COLUMNS = (
    ResultColumn("job_id", T.STRING_TYPE),
    ResultColumn("job_name", T.STRING_TYPE),
    ResultColumn("status", T.STRING_TYPE),
    ResultColumn("start_time", T.TIMESTAMP_TYPE),
    ResultColumn("checkpoint", T.STRING_TYPE),
    ResultColumn("identity", T.STRING_TYPE),
)


class JobStatus(StrEnum):
    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    CANCELED = "CANCELED"


@dataclass
class Job:
    """One streaming insert: its Spark query and, for the filesystem sink, the insert that commits its
    partitions (which goes on after the query ended, to commit the last ones)."""

    job_id: str
    job_name: str
    started: datetime
    query: Any | None
    insert: RunningInsert | None = None
    canceled: bool = False
    owner: str = ""
    #: The table it writes into, ``db.table`` (whose owner may also stop it).
    table: str = ""

    @property
    def status(self) -> JobStatus:
        if self.query is not None and self.query.isActive:
            return JobStatus.RUNNING
        if self.insert is not None and not self.insert.finished.is_set():
            return JobStatus.RUNNING  # the query ended; its last partitions are being committed
        if self.canceled:
            return JobStatus.CANCELED
        query_failed = self.query is not None and self.query.exception() is not None
        if query_failed or (self.insert is not None and self.insert.error is not None):
            return JobStatus.FAILED
        return JobStatus.FINISHED

    def stop(self) -> None:
        """Stop the query. Not an end of input: partitions still pending stay pending, and are
        committed when the same insert runs again."""
        self.canceled = True
        if self.insert is not None:
            self.insert.stop()
            self.insert.finished.wait(STOP_WAIT_S)
        elif self.query is not None:
            self.query.stop()


class JobRegistry:
    """The gateway's jobs, by id (an insert started again under the same name replaces its entry);
    ``admins`` see and stop every user's jobs."""

    def __init__(self, admins: frozenset[str] = frozenset()) -> None:
        self.admins = admins
        self._jobs: dict[str, Job] = {}
        self._lock = threading.Lock()

    def record(self, spark: Any, job_id: str, job_name: str, owner: str, table: str = "") -> Job:
        """Keep the job an INSERT on ``spark`` (a Spark session) of ``owner`` into ``table`` just started."""
        from sqlext.connectors.filesystem.sink import running_insert

        insert = running_insert(job_id)
        # Spark lists only active queries: another sink's bounded insert may have ended already (FINISHED).
        query = insert.query if insert is not None else spark.streams.get(job_id)
        job = Job(job_id, job_name, datetime.now(), query, insert, owner=owner, table=table)
        with self._lock:
            self._jobs[job_id] = job
        log.info("job %s (%s) started by %s", job_id, job_name, owner)
        return job

    def jobs(self, user: str | None = None, owns: Callable[[str], bool] | None = None) -> list[Job]:
        """The jobs ``user`` may see (all for an admin, or with no user given), oldest first: their own,
        and those writing into a table ``owns`` says is theirs."""
        with self._lock:
            jobs = sorted(self._jobs.values(), key=lambda job: job.started)
        if user is None or user in self.admins:
            return jobs
        return [job for job in jobs if job.owner == user or (owns is not None and job.table and owns(job.table))]

    def show(self, user: str | None = None, owns: Callable[[str], bool] | None = None) -> ResultSet:
        from sqlext.jobs.checkpoint import started_checkpoint

        rows = []
        for job in self.jobs(user, owns):
            prepared = started_checkpoint(job.job_id)
            checkpoint, identity = (prepared.location, prepared.identity.describe()) if prepared else (None, None)
            started = job.started.isoformat(" ", "milliseconds")
            rows.append((job.job_id, job.job_name, str(job.status), started, checkpoint, identity))
        return ResultSet(COLUMNS, rows)

    def stop(self, job_id: str, user: str | None = None, owns: Callable[[str], bool] | None = None) -> None:
        """Stop a running job ``user`` may see (Spark finishes the batch being committed first)."""
        job = next((job for job in self.jobs(user, owns) if job.job_id == job_id), None)
        if job is None:
            raise SqlextError(f"No job with id '{job_id}' was started through this gateway; SHOW JOBS lists them.")
        status = job.status
        if status is not JobStatus.RUNNING:
            raise SqlextError(f"Job '{job_id}' ({job.job_name}) is not running: it is {status}.")
        job.stop()
        log.info("job %s (%s) of %s stopped by %s", job_id, job.job_name, job.owner, user or "the gateway")

    def stop_all(self) -> None:
        """Stop every running job (when the gateway stops)."""
        for job in self.jobs():
            if job.status is JobStatus.RUNNING:
                self.stop(job.job_id)

    def execute(self, statement: str, user: str, owns: Callable[[str], bool] | None = None) -> ResultSet | None:
        """Answer SHOW JOBS or STOP JOB for ``user`` (who also sees the jobs writing tables ``owns`` says
        are theirs); None for any other statement."""
        if not JOB_STATEMENT.match(statement):
            return None
        parsed = parse_statement(statement)
        if isinstance(parsed, ShowJobs):
            return self.show(user, owns)
        if isinstance(parsed, StopJob):
            self.stop(parsed.job_id, user, owns)
            return ResultSet([ResultColumn("result", T.STRING_TYPE)], [("OK",)])
        return None
