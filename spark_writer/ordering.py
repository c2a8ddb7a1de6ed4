"""The core's ordering rule as Spark expressions (``hudi_duck.core.merge.ordering.EngineOrdering``).

Spark already orders integers, decimals, dates, timestamps, booleans and
strings (UTF-8 bytes) as Hudi's Java values compare; nulls go lowest, and for
floats ``-0.0`` is put below ``0.0`` (Spark treats them as equal).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from hudi_duck.core.errors import UnsupportedFeatureError, WriteError
from hudi_duck.core.merge.ordering import EngineOrdering, engine_ordering


def rule_for(df: DataFrame, field_name: str) -> EngineOrdering:
    """The ordering rule of a (possibly nested) column of ``df``."""
    from pyspark.sql.pandas.types import to_arrow_type

    data_type = df.select(F.col(field_name)).schema.fields[0].dataType
    try:
        try:
            arrow_type = to_arrow_type(data_type, timezone="UTC")
        except TypeError:  # Spark < 4: no time zone argument
            arrow_type = to_arrow_type(data_type)
    except Exception:  # a type Arrow has no counterpart for
        arrow_type = None
    try:
        if arrow_type is None:
            raise UnsupportedFeatureError(
                f"ordering field {field_name!r} has type {data_type.simpleString()}, which Hudi cannot order "
                "records by (Comparable values only: numbers, strings, dates, timestamps, booleans, decimals)"
            )
        return engine_ordering(field_name, arrow_type)
    except UnsupportedFeatureError as exc:
        raise WriteError(f"{exc} (hoodie.datasource.write.precombine.field)") from exc


def _positive_zero(column: Column) -> Column:
    """True for 0.0, False for -0.0, null otherwise."""
    return F.when(column == 0, ~column.cast("string").startswith("-"))


def order_desc(column: Column, rule: EngineOrdering) -> list[Column]:
    """Sort keys putting the greatest ordering value first, nulls last."""
    keys = [column.desc_nulls_last()]
    if rule.zero_sign:
        keys.append(_positive_zero(column).desc_nulls_last())
    return keys


def greater(left: Column, right: Column, rule: EngineOrdering) -> Column:
    """``left.compareTo(right) > 0`` with nulls lowest (never null itself)."""
    strictly = left > right
    if rule.zero_sign:
        strictly = strictly | ((left == 0) & (right == 0) & _positive_zero(left) & ~_positive_zero(right))
    return left.isNotNull() & (right.isNull() | F.coalesce(strictly, F.lit(False)))
