"""The one Hive Metastore client of sqlext: connect, retry transport errors with backoff, close.

Every other module reaches the HMS through :class:`MetastoreClient`; nothing else opens sockets to it.
It calls Thrift methods that HMS 2.3, 3.1 and 4.0.1 all serve (checked by running each against each:
``get_table_req``, never ``get_table``, which Hive 4.0.1 answers with "Invalid method name";
``add_partitions_req``; ``alter_partitions_with_environment_context``; ``alter_table_with_environment_context``;
``get_partitions_by_names``; ``get_partition_names``), so one code path serves the embedded 2.3 server and
a production 4.x one. Where a call has another form (:data:`ALTERNATIVES`), the client does not assume
which one a server has from its version: :meth:`MetastoreClient.call_served` tries the forms in order, once
per client, and keeps the first the server serves.

Retries cover the transport only (refused connection, reset socket, timeout). Errors the HMS answers
with (``NoSuchObjectException``, ``AlreadyExistsException``, ``MetaException``) are the caller's to
handle and are never retried. A call retried after a transport error may have been applied once
already, so callers make their calls idempotent (``ifNotExists``, alter-or-create).

A metastore that is down when a statement or a query starts is waited for: each call retries until the
deadline (``spark.sqlext.metastore.retry.deadline``, default 60 s), logging every retry with the URI, then
raises :class:`MetastoreUnavailableError` naming the URI, the call and what to do. A client whose policy has
``refused_first_connect_fails`` (a session's catalog when no deadline is configured) does not wait when its
first connection is refused by every URI: nothing listens there (a wrong URI, a metastore not started), and a
minute of retries would only delay that error.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, TypeVar
from urllib.parse import urlparse

from hmsclient import hmsclient
from hmsclient.genthrift.hive_metastore import ttypes
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException
from thrift.transport import TTransport
from thrift.transport.TTransport import TTransportException

from sqlext import listeners
from sqlext.catalog.metastore import kerberos, tls
from sqlext.errors import ConfigError, MetastoreError, MetastoreUnavailableError

if TYPE_CHECKING:
    from sqlext.config import SqlextConfig

log = logging.getLogger(__name__)
# thrift logs every refused connection at ERROR; this module reports transport failures itself.
logging.getLogger("thrift.transport.TSocket").setLevel(logging.CRITICAL)

T = TypeVar("T")

#: Partitions sent per ``add_partitions_req`` / ``alter_partitions`` call.
PARTITION_BATCH = 100
#: Connections a batched call's chunks are spread over (the first is the client's own). The metastore serves
#: each connection on a thread of its own, and its time per chunk is mostly waiting on its database: on the
#: embedded Derby HMS 4 connections registered about 1.9x the partitions per second of one (bench/README.md).
PARALLEL_CALLS = 4

#: Calls whose forms differ between metastore versions: the forms, in the order tried.
ALTERNATIVES: dict[str, tuple[str, ...]] = {
    "get_table": ("get_table_req", "get_table"),
    "alter_partitions": ("alter_partitions_with_environment_context", "alter_partitions"),
    "alter_table_cascade": ("alter_table_with_environment_context", "alter_table_with_cascade"),
}

_TRANSPORT_ERRORS = (TTransportException, OSError, EOFError, socket.timeout)

#: What to do when the metastore does not answer (ends the error's message).
UNAVAILABLE_HINT = (
    "Start it or make it reachable (for sqlext's embedded metastore: 'sqlext metastore status' / 'start'), "
    "check that spark.sqlext.metastore.uris names it, and set spark.sqlext.metastore.retry.deadline to "
    "wait longer for it. A metastore that closes each connection at once ('TSocket read 0 bytes') may take "
    f"Kerberos logins only: set {kerberos.SASL_ENABLED}=true and {kerberos.SERVER_PRINCIPAL}, or TLS clients only "
    f"(metastore.use.SSL): set {tls.USE_SSL}=true and {tls.TRUSTSTORE_PATH} (docs/secured-cluster.md)."
)

#: What to do when nothing listens at the metastore's URI (ends the error's message).
REFUSED_HINT = (
    "Start it (for sqlext's embedded metastore: 'sqlext metastore start'), check that "
    "spark.sqlext.metastore.uris names it, or set spark.sqlext.metastore.retry.deadline (e.g. '60 s') to wait "
    "for one that is still starting."
)


@dataclass(frozen=True)
class RetryPolicy:
    """How long and how often to retry a call that failed in the transport."""

    deadline_s: float = 60.0
    initial_backoff_s: float = 0.2
    max_backoff_s: float = 5.0
    socket_timeout_s: float = 60.0
    #: Fail at once when nothing listens at any URI (connection refused) before the client ever connected;
    #: transport errors after it connected once are retried as any others.
    refused_first_connect_fails: bool = False

    @classmethod
    def configured(cls, config: SqlextConfig) -> RetryPolicy:
        """How a client of the configured metastore (a session's catalog, a ``sqlext`` command) retries: up to
        ``spark.sqlext.metastore.retry.deadline``; without one, a metastore that refuses the first connection
        (nothing listens at the URI) is an error at once rather than after a minute."""
        return cls(deadline_s=config.retry_deadline_s, refused_first_connect_fails=not config.retry_deadline_configured)

    def backoffs(self) -> Iterator[float]:
        """Exponential backoff delays, capped at ``max_backoff_s``."""
        delay = self.initial_backoff_s
        while True:
            yield delay
            delay = min(delay * 2, self.max_backoff_s)


@dataclass(frozen=True)
class MetastoreAddress:
    """One ``thrift://host:port`` endpoint."""

    host: str
    port: int

    @property
    def uri(self) -> str:
        return f"thrift://{self.host}:{self.port}"


def parse_uris(uris: str) -> list[MetastoreAddress]:
    """Parse Hive's ``hive.metastore.uris`` form: comma-separated ``thrift://host:port`` entries."""
    addresses = []
    for raw in uris.split(","):
        entry = raw.strip()
        if not entry:
            continue
        parsed = urlparse(entry)
        if parsed.scheme != "thrift" or not parsed.hostname or not parsed.port:
            raise ConfigError(
                f"Invalid metastore URI '{entry}': expected thrift://host:port "
                "(comma-separated for several metastores).",
                option="spark.sqlext.metastore.uris",
                value=uris,
            )
        addresses.append(MetastoreAddress(parsed.hostname, parsed.port))
    if not addresses:
        raise ConfigError("No metastore URI given: expected thrift://host:port.", value=uris)
    return addresses


class MetastoreClient:
    """A retrying connection to a Hive Metastore. Use as a context manager, or call :meth:`close`."""

    def __init__(
        self,
        uris: str,
        retry: RetryPolicy | None = None,
        auth: kerberos.MetastoreAuth | None = None,
        tls_settings: tls.MetastoreTls | None = None,
    ) -> None:
        self.addresses = parse_uris(uris)
        self.retry = retry or RetryPolicy()
        #: SASL GSSAPI or none; by default the process's (:func:`kerberos.configure`, done by the session).
        self.auth = auth or kerberos.current()
        #: TLS or none; by default the process's (:func:`tls.configure`, done by the session).
        self.tls = tls_settings or tls.current()
        self._client: Any = None
        self._next_address = 0
        #: Further connections for the chunks of batched calls (see PARALLEL_CALLS), opened when first needed.
        self._lanes: list[MetastoreClient] = []
        #: The form of each call in ALTERNATIVES the server served, once probed.
        self.served: dict[str, str] = {}
        self._connected_once = False

    @property
    def uri(self) -> str:
        """The URIs this client was given, as given."""
        return ",".join(address.uri for address in self.addresses)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        """Close the connections, if open. The client reconnects on its next call."""
        if self._client is not None:
            with contextlib.suppress(*_TRANSPORT_ERRORS):
                self._client.close()
            self._client = None
        for lane in self._lanes:
            lane.close()

    def _connect(self) -> Any:
        address = self.addresses[self._next_address % len(self.addresses)]
        self._next_address += 1
        sock = self.tls.socket(address.host, address.port)
        sock.setTimeout(self.retry.socket_timeout_s * 1000)
        # The C codec (thrift's fastbinary), byte for byte the pure-Python protocol's encoding: encoding 10,000
        # partitions took 0.3 s of the driver's CPU in Python, 0.025 s in C (and decoding likewise).
        transport = (
            kerberos.transport(self.auth, address.host, sock) if self.auth.sasl else TTransport.TBufferedTransport(sock)
        )
        protocol = TBinaryProtocol.TBinaryProtocolAccelerated(transport)
        client = hmsclient.HMSClient(iprot=protocol)
        client.open()
        return client

    def call(self, method: str, *args: Any) -> Any:
        """Call a Thrift method by name, reconnecting and retrying on transport errors until the
        retry deadline, then raising :class:`MetastoreUnavailableError`."""
        deadline = time.monotonic() + self.retry.deadline_s
        backoffs = self.retry.backoffs()
        attempt = 0
        while True:
            attempt += 1
            began = time.monotonic()
            try:
                if self._client is None:
                    self._client = self._connect()
                    self._connected_once = True
                result = getattr(self._client, method)(*args)
            except _TRANSPORT_ERRORS as exc:
                _report(method, "error", began)
                self.close()
                refused_tls = tls.failure(exc)
                if refused_tls is not None:  # the same certificate or protocol next time: not retried
                    raise tls.explain(refused_tls, self.uri) from None
                if self._nothing_listens(exc, attempt):
                    raise MetastoreUnavailableError(
                        f"Nothing listens at {self.uri}: the connection to the Hive Metastore was refused "
                        f"({exc}). {REFUSED_HINT}",
                        option="spark.sqlext.metastore.uris",
                        value=self.uri,
                    ) from exc
                delay = next(backoffs)
                if time.monotonic() + delay > deadline:
                    raise MetastoreUnavailableError(
                        f"Hive Metastore at {self.uri} did not answer '{method}' within "
                        f"{self.retry.deadline_s:g} s ({attempt} attempts; last error: {exc}). {UNAVAILABLE_HINT}",
                        option="spark.sqlext.metastore.uris",
                        value=self.uri,
                    ) from exc
                log.warning(
                    "Hive Metastore at %s unreachable for %s (attempt %d: %s); retrying in %.1f s",
                    self.uri,
                    method,
                    attempt,
                    exc,
                    delay,
                )
                time.sleep(delay)
            except Exception:
                _report(method, "exception", began)
                raise
            else:
                _report(method, "ok", began)
                return result

    def _nothing_listens(self, exc: BaseException, attempt: int) -> bool:
        """Whether a first connection was refused by every URI, under a policy that fails on that at once."""
        if not self.retry.refused_first_connect_fails or self._connected_once or attempt < len(self.addresses):
            return False
        refused = exc if isinstance(exc, ConnectionRefusedError) else getattr(exc, "inner", None)
        return isinstance(refused, ConnectionRefusedError)

    def call_served(self, call: str, forms: dict[str, tuple[Any, ...]]) -> Any:
        """Call the first of ``forms`` (method -> arguments, in order) the server serves, remembering which
        for the next calls; a method the server lacks answers "Invalid method name" (UNKNOWN_METHOD)."""
        known = self.served.get(call)
        if known is not None:
            return self.call(known, *forms[known])
        for method, args in forms.items():
            try:
                result = self.call(method, *args)
            except TApplicationException as exc:
                if exc.type != TApplicationException.UNKNOWN_METHOD:
                    raise
                log.info("Hive Metastore at %s does not serve %s; trying the next form", self.uri, method)
                continue
            self.served[call] = method
            return result
        raise MetastoreError(f"Hive Metastore at {self.uri} serves none of {', '.join(forms)} for '{call}'.")

    # -- databases -------------------------------------------------------------------------------

    def get_all_databases(self) -> list[str]:
        return list(self.call("get_all_databases"))

    def get_database(self, name: str) -> ttypes.Database | None:
        """The database, or None when the HMS has none of that name."""
        try:
            return self.call("get_database", name)
        except ttypes.NoSuchObjectException:
            return None

    def create_database(
        self, name: str, location: str | None = None, description: str = "", if_not_exists: bool = True
    ) -> bool:
        """Create a database; return False when it existed (and ``if_not_exists`` was set)."""
        database = ttypes.Database(name=name, description=description, locationUri=location, parameters={})
        try:
            self.call("create_database", database)
        except ttypes.AlreadyExistsException:
            if not if_not_exists:
                raise
            return False
        return True

    def drop_database(self, name: str, cascade: bool = False) -> None:
        self.call("drop_database", name, False, cascade)

    # -- tables ----------------------------------------------------------------------------------

    def get_all_tables(self, database: str) -> list[str]:
        return list(self.call("get_all_tables", database))

    def get_table(self, database: str, name: str) -> ttypes.Table | None:
        """The table, or None when it does not exist (``get_table_req``, else ``get_table``)."""
        request = ttypes.GetTableRequest(dbName=database, tblName=name)
        forms = {"get_table_req": (request,), "get_table": (database, name)}
        try:
            found = self.call_served("get_table", {m: forms[m] for m in ALTERNATIVES["get_table"]})
        except ttypes.NoSuchObjectException:
            return None
        return found.table if isinstance(found, ttypes.GetTableResult) else found

    def create_table(self, table: ttypes.Table) -> None:
        self.call("create_table", table)

    def alter_table(self, database: str, name: str, table: ttypes.Table) -> None:
        self.call("alter_table", database, name, table)

    def alter_table_cascade(self, database: str, name: str, table: ttypes.Table) -> None:
        """Replace a table and give every partition its columns, as Hive's ``ALTER TABLE ... CASCADE``: the
        metastore alters the table and each partition's column list in one transaction (all or nothing), and
        recomputes no statistics. Partitions keep the rest of their descriptor (location, SerDe)."""
        context = ttypes.EnvironmentContext(properties={"CASCADE": "true", "DO_NOT_UPDATE_STATS": "true"})
        forms = {
            "alter_table_with_environment_context": (database, name, table, context),
            "alter_table_with_cascade": (database, name, table, True),
        }
        self.call_served("alter_table_cascade", {m: forms[m] for m in ALTERNATIVES["alter_table_cascade"]})

    def drop_table(self, database: str, name: str, delete_data: bool = False) -> bool:
        """Drop a table; return False when it did not exist."""
        try:
            self.call("drop_table", database, name, delete_data)
        except ttypes.NoSuchObjectException:
            return False
        return True

    # -- partitions ------------------------------------------------------------------------------

    def get_partition_names(self, database: str, table: str) -> list[str]:
        """Partition names (``k1=v1/k2=v2``, escaped as Hive escapes paths)."""
        return list(self.call("get_partition_names", database, table, -1))

    def get_partitions_by_names(self, database: str, table: str, names: Sequence[str]) -> list[ttypes.Partition]:
        """The partitions of those names that exist (missing names are left out)."""
        return self._chunked(
            names, lambda client, chunk: client.call("get_partitions_by_names", database, table, chunk)
        )

    def add_partitions(
        self, database: str, table: str, partitions: Sequence[ttypes.Partition], need_result: bool = False
    ) -> list[ttypes.Partition]:
        """Add partitions, skipping those that exist, in batched calls (``add_partitions_req``); with
        ``need_result``, return the partitions this call added (not those that existed).

        With ``need_result``, each batch is first added as a whole without asking for the result: the HMS
        adds all of it, or, when one partition exists, none (one transaction), and only then is the batch
        sent again skipping those that exist, with the result. A result is every added partition in full,
        which the HMS writes and this client decodes (profiled: a sixth of a 2,000-partition backfill)
        where the caller needs only which were added, and most partitions a commit adds are new.
        """

        def request(client: MetastoreClient, chunk: list[ttypes.Partition], if_not_exists: bool, result: bool) -> Any:
            return client.call(
                "add_partitions_req",
                ttypes.AddPartitionsRequest(
                    dbName=database, tblName=table, parts=chunk, ifNotExists=if_not_exists, needResult=result
                ),
            )

        def add(client: MetastoreClient, chunk: list[ttypes.Partition]) -> list[Any]:
            if not need_result:
                request(client, chunk, if_not_exists=True, result=False)
                return []
            try:
                request(client, chunk, if_not_exists=False, result=False)
            except ttypes.AlreadyExistsException:
                response = request(client, chunk, if_not_exists=True, result=True)
                return list(response.partitions or []) if response is not None else []
            return chunk

        return self._chunked(partitions, add)

    def alter_partitions(self, database: str, table: str, partitions: Sequence[ttypes.Partition]) -> None:
        """Replace the stored descriptors and parameters of existing partitions, in batched calls.

        The statistics sent are kept as sent: without ``DO_NOT_UPDATE_STATS`` the HMS recomputes
        numFiles/totalSize by listing each partition directory itself.
        """
        context = ttypes.EnvironmentContext(properties={"DO_NOT_UPDATE_STATS": "true"})

        def alter(client: MetastoreClient, chunk: list[ttypes.Partition]) -> list[Any]:
            forms = {
                "alter_partitions_with_environment_context": (database, table, chunk, context),
                # Without the context, a server that lacks the call keeps the statistics only if told by its
                # own settings (hive.stats.autogather=false in sqlext's hive-site.xml).
                "alter_partitions": (database, table, chunk),
            }
            client.call_served("alter_partitions", forms)
            return []

        self._chunked(partitions, alter, probing="alter_partitions")

    def _chunked(
        self, items: Sequence[T], call: Callable[[MetastoreClient, list[T]], list[Any]], probing: str = ""
    ) -> list[Any]:
        """``call`` on each chunk of ``PARTITION_BATCH`` items over up to ``PARALLEL_CALLS`` connections; the
        results in the items' order. While this client has not learnt which form of the call ``probing`` (a key
        of :data:`ALTERNATIVES`) the server serves, the first chunk goes alone through this client, which learns
        it, and the others after it. A failed call stops the chunks not yet sent and is raised once the calls
        under way ended, so it leaves undone what the same failure leaves when chunks go one by one."""
        chunks = [list(items[start : start + PARTITION_BATCH]) for start in range(0, len(items), PARTITION_BATCH)]
        if not chunks:
            return []
        results: list[list[Any]] = [[] for _ in chunks]
        first = 0
        if probing and probing not in self.served:
            results[0], first = list(call(self, chunks[0])), 1
        if len(chunks) - first == 1:
            results[first] = list(call(self, chunks[first]))
        elif len(chunks) - first > 1:
            self._in_parallel(chunks, first, call, results)
        return [result for chunk_results in results for result in chunk_results]

    def _in_parallel(
        self,
        chunks: list[list[T]],
        first: int,
        call: Callable[[MetastoreClient, list[T]], list[Any]],
        results: list[list[Any]],
    ) -> None:
        """``call`` on ``chunks[first:]`` over up to ``PARALLEL_CALLS`` connections, into ``results``."""
        queue = iter(range(first, len(chunks)))
        lock = threading.Lock()
        failed = threading.Event()

        def run(lane: MetastoreClient) -> None:
            while not failed.is_set():
                with lock:
                    index = next(queue, None)
                if index is None:
                    return
                try:
                    results[index] = list(call(lane, chunks[index]))
                except BaseException:
                    failed.set()
                    raise

        lanes = [self, *self._open_lanes(min(PARALLEL_CALLS, len(chunks) - first) - 1)]
        with ThreadPoolExecutor(len(lanes), thread_name_prefix="sqlext-metastore") as pool:
            futures = [pool.submit(run, lane) for lane in lanes]
        for future in futures:
            future.result()

    def _open_lanes(self, count: int) -> list[MetastoreClient]:
        self._lanes.extend(
            MetastoreClient(self.uri, self.retry, self.auth, self.tls) for _ in range(count - len(self._lanes))
        )
        for lane in self._lanes:
            lane.served = self.served
        return self._lanes[:count]

    def drop_partition(self, database: str, table: str, values: Sequence[str], delete_data: bool = False) -> bool:
        """Drop one partition by its values; return False when it did not exist."""
        try:
            return bool(self.call("drop_partition", database, table, list(values), delete_data))
        except ttypes.NoSuchObjectException:
            return False


def _report(method: str, outcome: str, began: float) -> None:
    if listeners.listening():
        listeners.report_metastore_call(method, outcome, time.monotonic() - began)
