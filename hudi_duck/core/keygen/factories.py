"""Which key generator a table (hoodie.properties) or a write (datasource options) uses."""

from __future__ import annotations

from typing import Any, Mapping

import pyarrow as pa

from ..config.table_config import Keys, TableConfig
from ..errors import InvalidTableConfigError, KeyGeneratorError
from .generators import (
    CLASS_NAMES,
    COMPLEX,
    CUSTOM,
    GLOBAL_DELETE,
    NON_PARTITION,
    SIMPLE,
    TIMESTAMP,
    ComplexKeyGenerator,
    CustomKeyGenerator,
    GlobalDeleteKeyGenerator,
    KeyGenerator,
    NonpartitionedKeyGenerator,
    SimpleKeyGenerator,
    TimestampBasedKeyGenerator,
    WriteOptions,
    kind_of_name,
    parse_custom_spec,
)
from .timestamp import TimestampConfig

__all__ = ["key_generator_from_table_config", "key_generator_from_write_options"]


def _split_fields(value: str | None) -> list[str]:
    if value is None:
        return []
    return [part.strip() for part in value.split(",") if part.strip()]


def _infer_kind(record_key_fields: list[str], partition_specs: list[str]) -> str:
    """Hudi's ``inferKeyGeneratorType`` (plus newer Hudi's CUSTOM for ``field:TYPE``)."""
    if any(":" in spec for spec in partition_specs):
        return CUSTOM
    if not partition_specs:
        return NON_PARTITION
    if len(partition_specs) == 1 and len(record_key_fields) <= 1:
        return SIMPLE
    return COMPLEX


def _build(
    kind: str,
    record_key_fields: list[str],
    partition_specs: list[str],
    timestamp: TimestampConfig | None,
    *,
    lenient: bool,
    complex_single_field_prefixed: bool,
    **common: Any,
) -> KeyGenerator:
    if kind == SIMPLE:
        return SimpleKeyGenerator(record_key_fields, partition_specs, **common)
    if kind == COMPLEX:
        return ComplexKeyGenerator(
            record_key_fields, partition_specs, single_field_prefixed=complex_single_field_prefixed, **common
        )
    if kind == NON_PARTITION:
        return NonpartitionedKeyGenerator(record_key_fields, partition_specs, **common)
    if kind == GLOBAL_DELETE:
        return GlobalDeleteKeyGenerator(record_key_fields, partition_specs, **common)
    if kind == TIMESTAMP:
        return TimestampBasedKeyGenerator(record_key_fields, partition_specs, timestamp, **common)
    return CustomKeyGenerator(record_key_fields, partition_specs, timestamp, allow_untyped=lenient, **common)


def key_generator_from_table_config(
    config: TableConfig,
    *,
    complex_single_field_prefixed: bool | None = None,
    consistent_logical_timestamp: bool = False,
    jvm_timezone: str = "UTC",
) -> KeyGenerator:
    """The key generator a table was written with (v6 class names, v8+ type names).

    ``complex_single_field_prefixed`` None picks by table version: v8 tables come
    from Hudi 1.0.x, which writes bare values; otherwise the 0.14.0 ``field:value``
    form. Missing timestamp configs do not fail here (see TimestampBasedKeyGenerator).
    """
    try:
        record_key_fields = config.record_key_fields
        specs = config.partition_fields_spec
        if config.key_generator_class:
            kind = kind_of_name(config.key_generator_class, Keys.KEY_GENERATOR_CLASS)
        elif config.key_generator_type:
            kind = kind_of_name(config.key_generator_type, Keys.KEY_GENERATOR_TYPE)
        else:
            kind = _infer_kind(record_key_fields, specs)
        if kind == SIMPLE and not specs:
            kind = NON_PARTITION
        if kind in (SIMPLE, COMPLEX, TIMESTAMP):
            specs = [spec.split(":", 1)[0] for spec in specs]
        timestamp = None
        if kind in (TIMESTAMP, CUSTOM):
            try:
                timestamp = TimestampConfig.from_properties(config.props, infer_type=True)
            except KeyGeneratorError:
                timestamp = None
        if complex_single_field_prefixed is None:
            complex_single_field_prefixed = config.version != 8
        return _build(
            kind,
            record_key_fields,
            specs,
            timestamp,
            lenient=True,
            complex_single_field_prefixed=complex_single_field_prefixed,
            hive_style=config.hive_style_partitioning,
            url_encode=config.url_encode_partitioning,
            consistent_logical_timestamp=consistent_logical_timestamp,
            jvm_timezone=jvm_timezone,
        )
    except KeyGeneratorError as exc:
        raise InvalidTableConfigError(f"{config.source or 'hoodie.properties'}: {exc}") from exc


def _bool_option(options: Mapping[str, str], key: str, default: bool) -> bool:
    value = options.get(key)
    if value is None or str(value).strip() == "":
        return default
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise KeyGeneratorError(f"{key}={value!r} is not a boolean (true/false)")
    return text == "true"


def key_generator_from_write_options(
    options: Mapping[str, str],
    schema: pa.Schema | None = None,
    *,
    complex_single_field_prefixed: bool = True,
    jvm_timezone: str = "UTC",
) -> KeyGenerator:
    """The key generator for a write, from Hudi datasource options.

    Infers the class as Hudi does when none is given; rejects options that
    contradict each other (naming the option). With ``schema`` every configured
    field must exist with a usable type.
    """
    raw_rk = options.get(WriteOptions.RECORDKEY_FIELD)
    record_key_fields = _split_fields(raw_rk)
    specs = _split_fields(options.get(WriteOptions.PARTITIONPATH_FIELD))
    class_option = (options.get(WriteOptions.KEYGENERATOR_CLASS) or "").strip()
    type_option = (options.get(WriteOptions.KEYGENERATOR_TYPE) or "").strip()
    kind_from_class = kind_of_name(class_option, WriteOptions.KEYGENERATOR_CLASS) if class_option else None
    kind_from_type = kind_of_name(type_option, WriteOptions.KEYGENERATOR_TYPE) if type_option else None
    if kind_from_class and kind_from_type and kind_from_class != kind_from_type:
        raise KeyGeneratorError(
            f"{WriteOptions.KEYGENERATOR_CLASS}={class_option} contradicts "
            f"{WriteOptions.KEYGENERATOR_TYPE}={type_option}"
        )
    kind = kind_from_class or kind_from_type or _infer_kind(record_key_fields, specs)
    if kind == SIMPLE and not specs:
        kind = NON_PARTITION  # Hudi switches a partition-less SimpleKeyGenerator
    if kind != CUSTOM and any(":" in spec for spec in specs):
        raise KeyGeneratorError(
            f"{WriteOptions.PARTITIONPATH_FIELD}={','.join(specs)} uses field:TYPE, which only "
            f"CustomKeyGenerator understands (key generator is {CLASS_NAMES[kind]})"
        )
    if kind == NON_PARTITION and specs:
        raise KeyGeneratorError(
            f"{WriteOptions.PARTITIONPATH_FIELD}={','.join(specs)} contradicts the non-partitioned key generator "
            f"({WriteOptions.KEYGENERATOR_CLASS}={class_option or type_option})"
        )
    if kind == GLOBAL_DELETE and not record_key_fields:
        raise KeyGeneratorError(f"GlobalDeleteKeyGenerator needs {WriteOptions.RECORDKEY_FIELD}")
    timestamp = None
    needs_timestamp = kind == TIMESTAMP or (
        kind == CUSTOM and any(parse_custom_spec(s, False).kind == TIMESTAMP for s in specs)
    )
    if needs_timestamp:
        timestamp = TimestampConfig.from_properties(options)
    generator = _build(
        kind,
        record_key_fields,
        specs,
        timestamp,
        lenient=False,
        complex_single_field_prefixed=complex_single_field_prefixed,
        hive_style=_bool_option(options, WriteOptions.HIVE_STYLE_PARTITIONING, False),
        url_encode=_bool_option(options, WriteOptions.URL_ENCODE_PARTITIONING, False),
        consistent_logical_timestamp=_bool_option(options, WriteOptions.CONSISTENT_LOGICAL_TIMESTAMP, False),
        jvm_timezone=jvm_timezone,
    )
    if schema is not None:
        generator.validate_schema(schema)
    return generator
