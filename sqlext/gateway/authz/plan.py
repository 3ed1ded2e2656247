"""What a Spark statement does, read from its Spark plans without running it.

The statement is parsed with the session's own Spark parser (``sessionState.sqlParser().parsePlan``)
and, unless the parsed plan already holds something only admins may run, analyzed with
``sessionState.executePlan(plan, CommandExecutionMode.SKIP).analyzed()``: Spark's analyzer resolves
relations, views, functions and commands but executes no command in that mode. Two things are never
analyzed for a user, because analysis itself would act: SQL scripts (``BEGIN ... END``, which Spark
runs while analyzing) and ``format.`path``` relations (resolving one lists the path and may read its
files to infer a schema); the parsed plan is enough to deny both.

Both trees are walked whole: children, inner children (subqueries, CTE definitions) and every
expression. Each node gives :class:`~sqlext.gateway.authz.access.Access` facts: commands by their
class (``ScriptTransformation``, ``AddJarsCommand``, ``LoadData``, ...), locations from table specs
and catalog tables, tables read from the analyzed relations (views expanded, so reading a view needs
SELECT on what it reads too), tables written or altered from the parsed command and its target.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sqlext.gateway.authz.access import Access, Action
from sqlext.gateway.authz.settings import FILE_PROVIDERS, AuthorizationSettings
from sqlext.table import TableIdentifier

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

#: How deep a plan or expression tree is followed (deeper: the statement is refused, never skipped).
MAX_DEPTH = 500

SCRIPT_NODES = frozenset({"ScriptTransformation", "HiveScriptTransformation"})
RESOURCE_NODES = {"AddJarsCommand": "ADD JAR", "AddFilesCommand": "ADD FILE", "AddArchivesCommand": "ADD ARCHIVE"}
FUNCTION_NODES = frozenset(
    {
        "CreateFunction",
        "CreateFunctionCommand",
        "CreateUserDefinedFunction",
        "CreateSQLFunctionCommand",
        "DropFunction",
        "DropFunctionCommand",
        "RefreshFunction",
        "RefreshFunctionCommand",
    }
)
DYNAMIC_NODES = frozenset(
    {"CompoundBody", "UnresolvedExecuteImmediate", "ExecuteImmediateQuery", "ExecuteImmediateCommand"}
)
PATH_READ_NODES = frozenset({"LoadData", "LoadDataCommand"})
PATH_WRITE_NODES = frozenset({"InsertIntoDir", "InsertIntoDataSourceDirCommand", "InsertIntoHiveDirCommand"})
REFLECTION_EXPRESSIONS = frozenset({"CallMethodViaReflection", "TryReflect"})
HIVE_FUNCTION_WRAPPERS = frozenset({"HiveGenericUDF", "HiveSimpleUDF", "HiveGenericUDTF", "HiveUDAFFunction"})
TABLE_TARGETS = frozenset({"UnresolvedTable", "UnresolvedTableOrView", "UnresolvedView"})
CREATING = frozenset({"CreateTable", "CreateTableAsSelect", "CreateView", "CreateTableLike"})
REPLACING = frozenset({"ReplaceTable", "ReplaceTableAsSelect"})
DROPPING = frozenset({"DropTable", "DropView"})
WITH_TABLE_SPEC = CREATING | REPLACING
#: Commands on a table that only read it (SELECT is enough); any other command on a table needs ownership.
READING_COMMANDS = frozenset(
    {
        "DescribeRelation",
        "DescribeColumn",
        "ShowCreateTable",
        "ShowColumns",
        "ShowTableProperties",
        "ShowPartitions",
        "ShowTableExtended",
        "RefreshTable",
        "CacheTable",
        "UncacheTable",
        "CreateTableLike",
    }
)
LOCATION_NODES = frozenset(
    {"SetTableLocation", "SetNamespaceLocation", "CreateTableLike", "AlterTableSetLocationCommand"}
)
V2_RELATIONS = frozenset({"DataSourceV2Relation", "DataSourceV2ScanRelation"})
ANALYZED_TABLE_COMMANDS = frozenset(
    {
        "CreateTableCommand",
        "CreateDataSourceTableCommand",
        "CreateDataSourceTableAsSelectCommand",
        "CreateHiveTableAsSelectCommand",
        "OptimizedCreateHiveTableAsSelectCommand",
        "CreateTableLikeCommand",
    }
)


def _name(obj: Any) -> str:
    return str(obj.getClass().getSimpleName())


def _items(seq: Any) -> Iterator[Any]:
    iterator = seq.iterator()
    while iterator.hasNext():
        yield iterator.next()


def _option(value: Any) -> Any:
    """A Scala Option's value (None for None), or the value itself when it is no Option."""
    if value is None or not hasattr(value, "isDefined"):
        return value
    return value.get() if value.isDefined() else None


def _call(obj: Any, method: str) -> Any:
    """``obj.method()`` or None when the node has no such field (a newer or older Spark)."""
    from py4j.protocol import Py4JError

    try:
        return getattr(obj, method)()
    except Py4JError:
        return None


def _map_get(mapping: Any, key: str) -> str | None:
    if mapping is None:
        return None
    value = _option(_call_with(mapping, "get", key))
    return None if value is None else str(value)


def _call_with(obj: Any, method: str, *args: Any) -> Any:
    from py4j.protocol import Py4JError

    try:
        return getattr(obj, method)(*args)
    except Py4JError:
        return None


class PlanTooDeepError(Exception):
    """A plan deeper than :data:`MAX_DEPTH` (refused rather than half-inspected)."""


@dataclass
class SparkStatementInspector:
    """Reads the accesses of Spark statements on one Spark session (its catalog, its temporary views)."""

    spark: SparkSession
    settings: AuthorizationSettings

    @property
    def _state(self) -> Any:
        return self.spark._jsparkSession.sessionState()

    def parse(self, sql: str) -> Any:
        """Spark's parsed plan of ``sql`` (Spark's ParseException for a statement it cannot parse)."""
        return self._state.sqlParser().parsePlan(sql)

    def analyze(self, parsed: Any) -> Any:
        """The analyzed plan, commands not executed."""
        jvm: Any = self.spark._jvm
        skip = jvm.org.apache.spark.sql.execution.CommandExecutionMode.SKIP()
        return self._state.executePlan(parsed, skip).analyzed()

    def accesses(self, sql: str, analyze: bool = True) -> list[Access]:
        """What ``sql`` reads, writes, calls and runs. With ``analyze`` False (or when the parsed plan
        already holds an admin-only action) only the parsed plan is read."""
        parsed = self.parse(sql)
        found = self.parsed_accesses(parsed)
        if analyze and not any(access.action in _STOP_BEFORE_ANALYSIS for access in found):
            found += self.analyzed_accesses(self.analyze(parsed))
        return list(dict.fromkeys(found))

    # -- parsed plan -----------------------------------------------------------------------------

    def parsed_accesses(self, plan: Any) -> list[Access]:
        found: list[Access] = []
        for node, name in _nodes(plan):
            found += self._parsed_node(node, name)
            for expression, expression_name in _expressions(node):
                if expression_name == "UnresolvedFunction":
                    function = ".".join(_items(expression.nameParts())).lower()
                    if function.rsplit(".", 1)[-1] in ("reflect", "java_method", "try_reflect"):
                        found.append(Access(Action.REFLECTION, function))
        return found

    def _parsed_node(self, node: Any, name: str) -> list[Access]:
        found: list[Access] = []
        if name in SCRIPT_NODES:
            found.append(Access(Action.SCRIPT, "TRANSFORM ... USING"))
        elif name in RESOURCE_NODES:
            found.append(Access(Action.ADD_RESOURCE, RESOURCE_NODES[name]))
        elif name in FUNCTION_NODES:
            found.append(Access(Action.FUNCTION, self._function_name(node, name)))
        elif name in DYNAMIC_NODES:
            found.append(Access(Action.DYNAMIC_SQL, "EXECUTE IMMEDIATE" if "Execute" in name else "SQL script"))
        elif name in PATH_READ_NODES:
            found.append(Access(Action.PATH_READ, f"LOAD DATA INPATH {_call(node, 'path')}"))
        elif name in PATH_WRITE_NODES:
            storage = _call(node, "storage")
            location = _option(_call(storage, "locationUri")) if storage is not None else None
            found.append(Access(Action.PATH_WRITE, f"INSERT OVERWRITE DIRECTORY {location or ''}".strip()))
        elif name == "SetCommand":
            found += self._setting(_option(_call(node, "kv")))
        elif name == "ResetCommand":
            key = _option(_call(node, "config"))
            if key is not None and self.settings.setting_denied(str(key)):
                found.append(Access(Action.SETTING, str(key)))
        elif name == "UnresolvedRelation":
            found += self._relation_by_path(node)
        elif name == "CreateTempViewUsing":
            found += self._temp_view_using(node)
        elif name == "InsertIntoStatement":
            table = self._table(_call(node, "table"))
            if table is not None:
                found.append(Access(Action.OWNERSHIP if _call(node, "overwrite") else Action.INSERT, table=table))
        found += self._locations(node, name)
        found += self._targets(node, name)
        return found

    def _function_name(self, node: Any, name: str) -> str:
        identifier = _call(node, "identifier")
        if identifier is not None and _call(identifier, "funcName") is not None:
            return str(identifier.funcName())
        for child in _items(node.children()):
            parts = _call(child, "nameParts")
            if parts is not None:
                return ".".join(_items(parts))
        return name

    def _setting(self, key_value: Any) -> list[Access]:
        if key_value is None:
            return []
        key = str(key_value._1())
        return [Access(Action.SETTING, key)] if self.settings.setting_denied(key) else []

    def _relation_by_path(self, node: Any) -> list[Access]:
        """``format.`path```: Spark's ResolveSQLOnFile reads the path for a two-part name whose first
        part names a data source (a short name or a class)."""
        parts = list(_items(node.multipartIdentifier()))
        if len(parts) != 2 or not self._runs_sql_on_files() or not self._is_data_source(parts[0]):
            return []
        return [Access(Action.PATH_READ, f"{parts[0]}.`{parts[1]}`")]

    def _runs_sql_on_files(self) -> bool:
        return str(self.spark.conf.get("spark.sql.runSQLOnFiles", "true")).lower() == "true"

    def _is_data_source(self, name: str) -> bool:
        from py4j.protocol import Py4JError

        jvm: Any = self.spark._jvm
        try:
            jvm.org.apache.spark.sql.execution.datasources.DataSource.lookupDataSource(name, self._state.conf())
        except Py4JError:
            return False
        return True

    def _temp_view_using(self, node: Any) -> list[Access]:
        options = _call(node, "options")
        provider = str(_call(node, "provider") or "")
        path = _map_get(options, "path") or _map_get(options, "paths")
        if path is not None:
            return [Access(Action.PATH_READ, f"{provider}.`{path}`")]
        if provider.lower() not in FILE_PROVIDERS:
            return [Access(Action.DATA_SOURCE, provider)]
        return []

    def _locations(self, node: Any, name: str) -> list[Access]:
        """Every location a parsed command gives a table, partition or database."""
        found: list[Access] = []
        locations: list[str | None] = []
        if name in WITH_TABLE_SPEC:
            spec = _call(node, "tableSpec")
            if spec is not None:
                locations.append(_option(_call(spec, "location")))
                options = _call(spec, "optionExpression")
                for pair in _items(_call(options, "options")) if options is not None else ():
                    if str(pair._1()).lower() in ("path", "paths"):
                        locations.append(str(pair._2().toString()))
                provider = _option(_call(spec, "provider"))
                if provider is not None and str(provider).lower() not in FILE_PROVIDERS:
                    found.append(Access(Action.DATA_SOURCE, str(provider)))
        if name in LOCATION_NODES:
            locations.append(_option(_call(node, "location")))
        if name == "AddPartitions":
            locations += [_option(_call(part, "location")) for part in _items(node.parts())]
        if name in ("CreateNamespace", "SetNamespaceProperties"):
            locations.append(_map_get(_call(node, "properties"), "location"))
        return found + [Access(Action.LOCATION, str(location).strip("'\"")) for location in locations if location]

    def _targets(self, node: Any, name: str) -> list[Access]:
        """The tables a command creates, drops, alters or reads by name."""
        found: list[Access] = []
        for child in _items(node.children()):
            child_name = _name(child)
            if child_name in TABLE_TARGETS:
                table = self._table(child)
                if table is not None:
                    action = Action.SELECT if name in READING_COMMANDS else Action.OWNERSHIP
                    found.append(Access(action, table=table))
            elif child_name == "UnresolvedIdentifier":
                table = self._table(child, parts_method="nameParts")
                if table is None:
                    continue
                if name in CREATING:
                    found.append(Access(Action.CREATE, table=table))
                    if name == "CreateView" and _call(node, "replace"):
                        found.append(Access(Action.OWNERSHIP, table=table))
                elif name in REPLACING:
                    found += [Access(Action.CREATE, table=table), Access(Action.OWNERSHIP, table=table)]
                elif name in DROPPING:
                    found.append(Access(Action.OWNERSHIP, table=table))
            elif child_name == "UnresolvedNamespace" and name == "DropNamespace":
                parts = list(_items(child.multipartIdentifier()))
                found.append(Access(Action.OWNERSHIP, "database " + ".".join(parts)))
        return found

    def _table(self, node: Any, parts_method: str = "multipartIdentifier") -> TableIdentifier | None:
        """The metastore table a parsed name means; None for a temporary view or another catalog."""
        if node is None:
            return None
        raw = _call(node, parts_method)
        if raw is None:
            return None
        parts = [str(part) for part in _items(raw)]
        catalog = self._state.catalog()
        if len(parts) == 1:
            if _option(catalog.getTempView(parts[0])) is not None:
                return None
            return TableIdentifier(str(catalog.getCurrentDatabase()).lower(), parts[0].lower())
        if len(parts) == 3 and parts[0].lower() == "spark_catalog":
            parts = parts[1:]
        if len(parts) != 2 or parts[0].lower() == "global_temp":
            return None
        return TableIdentifier(parts[0].lower(), parts[1].lower())

    # -- analyzed plan ---------------------------------------------------------------------------

    def analyzed_accesses(self, plan: Any) -> list[Access]:
        found: list[Access] = []
        for node, name in _nodes(plan):
            if name in SCRIPT_NODES:
                found.append(Access(Action.SCRIPT, "TRANSFORM ... USING"))
            elif name in PATH_READ_NODES:
                found.append(Access(Action.PATH_READ, f"LOAD DATA INPATH {_call(node, 'path')}"))
            elif name in PATH_WRITE_NODES:
                found.append(Access(Action.PATH_WRITE, "INSERT OVERWRITE DIRECTORY"))
            elif name == "LogicalRelation":
                found += self._logical_relation(node)
            elif name == "HiveTableRelation":
                found.append(Access(Action.SELECT, table=_catalog_table(node.tableMeta())))
            elif name == "View" and not node.isTempView():
                found.append(Access(Action.SELECT, table=_catalog_table(node.desc())))
            elif (
                name in ("DataSourceV2Relation", "DataSourceV2ScanRelation")
                and _option(_call(node, "identifier")) is None
            ):
                found.append(Access(Action.PATH_READ, str(_call(node, "name") or name)))
            elif name in ANALYZED_TABLE_COMMANDS:
                table = _call(node, "table") or _call(node, "tableDesc")
                storage = _call(table, "storage") if table is not None else None
                location = _option(_call(storage, "locationUri")) if storage is not None else None
                if location is not None:
                    found.append(Access(Action.LOCATION, str(location.toString())))
            elif name == "InsertIntoHadoopFsRelationCommand" and _option(node.catalogTable()) is None:
                found.append(Access(Action.PATH_WRITE, str(node.outputPath().toString())))
            for expression, expression_name in _expressions(node):
                if expression_name in REFLECTION_EXPRESSIONS:
                    found.append(Access(Action.REFLECTION, "reflect/java_method"))
                elif expression_name in HIVE_FUNCTION_WRAPPERS:
                    function_class = str(expression.funcWrapper().functionClassName())
                    if "Reflect" in function_class:
                        found.append(Access(Action.REFLECTION, function_class))
        return found

    def _logical_relation(self, node: Any) -> list[Access]:
        table = _option(node.catalogTable())
        if table is not None:
            return [Access(Action.SELECT, table=_catalog_table(table))]
        relation = node.relation()
        if _name(relation) == "HadoopFsRelation":
            paths = [str(path.toString()) for path in _items(relation.location().rootPaths())]
            return [Access(Action.PATH_READ, ", ".join(paths))]
        return [Access(Action.DATA_SOURCE, _name(relation))]


#: Actions after which the plan is not analyzed (analysis would act, or needs not be paid for).
_STOP_BEFORE_ANALYSIS = frozenset({Action.DYNAMIC_SQL, Action.PATH_READ})


def _catalog_table(table: Any) -> TableIdentifier:
    identifier = table.identifier()
    database = _option(identifier.database()) or "default"
    return TableIdentifier(str(database).lower(), str(identifier.table()).lower())


def _nodes(plan: Any) -> Iterator[tuple[Any, str]]:
    """Every node of a plan: children and inner children (subqueries, CTE definitions), depth first."""
    stack = [(plan, 0)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise PlanTooDeepError(f"plan deeper than {MAX_DEPTH}")
        yield node, _name(node)
        for child in _items(node.children()):
            stack.append((child, depth + 1))
        for inner in _items(node.innerChildren()):
            if _call(inner, "children") is not None and _call(inner, "innerChildren") is not None:
                stack.append((inner, depth + 1))


def _expressions(node: Any) -> Iterator[tuple[Any, str]]:
    """Every expression of a plan node, nested ones included."""
    stack = [(expression, 0) for expression in _items(node.expressions())]
    while stack:
        expression, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise PlanTooDeepError(f"expression deeper than {MAX_DEPTH}")
        yield expression, _name(expression)
        for child in _items(expression.children()):
            stack.append((child, depth + 1))
