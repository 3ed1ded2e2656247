"""Whether a Spark data type holds a kind of value at any depth: in arrays, map values and struct fields (map
keys are left out: the json writers that ask write them as text)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql.types import DataType


def holds(data_type: DataType, leaf: Callable[[DataType], bool]) -> bool:
    """Whether ``data_type`` is, or holds at any depth but a map's key, a type ``leaf`` accepts."""
    from pyspark.sql.types import ArrayType, MapType, StructType

    if leaf(data_type):
        return True
    if isinstance(data_type, ArrayType):
        return holds(data_type.elementType, leaf)
    if isinstance(data_type, MapType):
        return holds(data_type.valueType, leaf)
    if isinstance(data_type, StructType):
        return any(holds(field.dataType, leaf) for field in data_type.fields)
    return False
