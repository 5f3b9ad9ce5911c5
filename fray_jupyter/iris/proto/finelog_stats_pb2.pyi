from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ColumnType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    COLUMN_TYPE_UNKNOWN: _ClassVar[ColumnType]
    COLUMN_TYPE_STRING: _ClassVar[ColumnType]
    COLUMN_TYPE_INT64: _ClassVar[ColumnType]
    COLUMN_TYPE_FLOAT64: _ClassVar[ColumnType]
    COLUMN_TYPE_BOOL: _ClassVar[ColumnType]
    COLUMN_TYPE_TIMESTAMP_MS: _ClassVar[ColumnType]
    COLUMN_TYPE_BYTES: _ClassVar[ColumnType]
    COLUMN_TYPE_INT32: _ClassVar[ColumnType]
    COLUMN_TYPE_MAP: _ClassVar[ColumnType]
    COLUMN_TYPE_FLOAT64_LIST: _ClassVar[ColumnType]
    COLUMN_TYPE_INT64_LIST: _ClassVar[ColumnType]

class L0Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    L0_MODE_UNSPECIFIED: _ClassVar[L0Mode]
    L0_MODE_LEGACY_LOCAL: _ClassVar[L0Mode]
    L0_MODE_OBJECT_STORE: _ClassVar[L0Mode]

class MigrationPhase(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    MIGRATION_PHASE_UNSPECIFIED: _ClassVar[MigrationPhase]
    MIGRATION_PHASE_DUAL_WRITE: _ClassVar[MigrationPhase]
    MIGRATION_PHASE_BACKFILL: _ClassVar[MigrationPhase]
    MIGRATION_PHASE_VERIFY: _ClassVar[MigrationPhase]
    MIGRATION_PHASE_ACTIVATED: _ClassVar[MigrationPhase]
    MIGRATION_PHASE_OBSERVING: _ClassVar[MigrationPhase]
    MIGRATION_PHASE_RETIRED: _ClassVar[MigrationPhase]
COLUMN_TYPE_UNKNOWN: ColumnType
COLUMN_TYPE_STRING: ColumnType
COLUMN_TYPE_INT64: ColumnType
COLUMN_TYPE_FLOAT64: ColumnType
COLUMN_TYPE_BOOL: ColumnType
COLUMN_TYPE_TIMESTAMP_MS: ColumnType
COLUMN_TYPE_BYTES: ColumnType
COLUMN_TYPE_INT32: ColumnType
COLUMN_TYPE_MAP: ColumnType
COLUMN_TYPE_FLOAT64_LIST: ColumnType
COLUMN_TYPE_INT64_LIST: ColumnType
L0_MODE_UNSPECIFIED: L0Mode
L0_MODE_LEGACY_LOCAL: L0Mode
L0_MODE_OBJECT_STORE: L0Mode
MIGRATION_PHASE_UNSPECIFIED: MigrationPhase
MIGRATION_PHASE_DUAL_WRITE: MigrationPhase
MIGRATION_PHASE_BACKFILL: MigrationPhase
MIGRATION_PHASE_VERIFY: MigrationPhase
MIGRATION_PHASE_ACTIVATED: MigrationPhase
MIGRATION_PHASE_OBSERVING: MigrationPhase
MIGRATION_PHASE_RETIRED: MigrationPhase

class ColumnIndex(_message.Message):
    __slots__ = ("trigram", "exact_values", "value_counts")
    TRIGRAM_FIELD_NUMBER: _ClassVar[int]
    EXACT_VALUES_FIELD_NUMBER: _ClassVar[int]
    VALUE_COUNTS_FIELD_NUMBER: _ClassVar[int]
    trigram: bool
    exact_values: _containers.RepeatedScalarFieldContainer[str]
    value_counts: bool
    def __init__(self, trigram: _Optional[bool] = ..., exact_values: _Optional[_Iterable[str]] = ..., value_counts: _Optional[bool] = ...) -> None: ...

class Column(_message.Message):
    __slots__ = ("name", "type", "nullable", "index")
    NAME_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    NULLABLE_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    name: str
    type: ColumnType
    nullable: bool
    index: ColumnIndex
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[ColumnType, str]] = ..., nullable: _Optional[bool] = ..., index: _Optional[_Union[ColumnIndex, _Mapping]] = ...) -> None: ...

class CoveringProjection(_message.Message):
    __slots__ = ("name", "predicate_column", "predicate_values", "columns")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PREDICATE_COLUMN_FIELD_NUMBER: _ClassVar[int]
    PREDICATE_VALUES_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    name: str
    predicate_column: str
    predicate_values: _containers.RepeatedScalarFieldContainer[str]
    columns: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., predicate_column: _Optional[str] = ..., predicate_values: _Optional[_Iterable[str]] = ..., columns: _Optional[_Iterable[str]] = ...) -> None: ...

class GroupedExtrema(_message.Message):
    __slots__ = ("filter_column", "group_json_column", "group_json_key", "extrema_column")
    FILTER_COLUMN_FIELD_NUMBER: _ClassVar[int]
    GROUP_JSON_COLUMN_FIELD_NUMBER: _ClassVar[int]
    GROUP_JSON_KEY_FIELD_NUMBER: _ClassVar[int]
    EXTREMA_COLUMN_FIELD_NUMBER: _ClassVar[int]
    filter_column: str
    group_json_column: str
    group_json_key: str
    extrema_column: str
    def __init__(self, filter_column: _Optional[str] = ..., group_json_column: _Optional[str] = ..., group_json_key: _Optional[str] = ..., extrema_column: _Optional[str] = ...) -> None: ...

class Schema(_message.Message):
    __slots__ = ("columns", "key_column", "projections", "grouped_extrema", "sort_columns", "max_row_group_rows")
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    KEY_COLUMN_FIELD_NUMBER: _ClassVar[int]
    PROJECTIONS_FIELD_NUMBER: _ClassVar[int]
    GROUPED_EXTREMA_FIELD_NUMBER: _ClassVar[int]
    SORT_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    MAX_ROW_GROUP_ROWS_FIELD_NUMBER: _ClassVar[int]
    columns: _containers.RepeatedCompositeFieldContainer[Column]
    key_column: str
    projections: _containers.RepeatedCompositeFieldContainer[CoveringProjection]
    grouped_extrema: _containers.RepeatedCompositeFieldContainer[GroupedExtrema]
    sort_columns: _containers.RepeatedScalarFieldContainer[str]
    max_row_group_rows: int
    def __init__(self, columns: _Optional[_Iterable[_Union[Column, _Mapping]]] = ..., key_column: _Optional[str] = ..., projections: _Optional[_Iterable[_Union[CoveringProjection, _Mapping]]] = ..., grouped_extrema: _Optional[_Iterable[_Union[GroupedExtrema, _Mapping]]] = ..., sort_columns: _Optional[_Iterable[str]] = ..., max_row_group_rows: _Optional[int] = ...) -> None: ...

class StoragePolicy(_message.Message):
    __slots__ = ("max_segments", "max_bytes", "max_age_seconds")
    MAX_SEGMENTS_FIELD_NUMBER: _ClassVar[int]
    MAX_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_AGE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    max_segments: int
    max_bytes: int
    max_age_seconds: int
    def __init__(self, max_segments: _Optional[int] = ..., max_bytes: _Optional[int] = ..., max_age_seconds: _Optional[int] = ...) -> None: ...

class IdentityTransform(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class BucketTransform(_message.Message):
    __slots__ = ("buckets",)
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    buckets: int
    def __init__(self, buckets: _Optional[int] = ...) -> None: ...

class PartitionField(_message.Message):
    __slots__ = ("source_column", "name", "identity", "bucket")
    SOURCE_COLUMN_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    IDENTITY_FIELD_NUMBER: _ClassVar[int]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    source_column: str
    name: str
    identity: IdentityTransform
    bucket: BucketTransform
    def __init__(self, source_column: _Optional[str] = ..., name: _Optional[str] = ..., identity: _Optional[_Union[IdentityTransform, _Mapping]] = ..., bucket: _Optional[_Union[BucketTransform, _Mapping]] = ...) -> None: ...

class PartitionSpec(_message.Message):
    __slots__ = ("spec_id", "fields")
    SPEC_ID_FIELD_NUMBER: _ClassVar[int]
    FIELDS_FIELD_NUMBER: _ClassVar[int]
    spec_id: int
    fields: _containers.RepeatedCompositeFieldContainer[PartitionField]
    def __init__(self, spec_id: _Optional[int] = ..., fields: _Optional[_Iterable[_Union[PartitionField, _Mapping]]] = ...) -> None: ...

class SourceLayout(_message.Message):
    __slots__ = ("partition", "sort_columns", "max_row_group_rows", "target_object_bytes")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    SORT_COLUMNS_FIELD_NUMBER: _ClassVar[int]
    MAX_ROW_GROUP_ROWS_FIELD_NUMBER: _ClassVar[int]
    TARGET_OBJECT_BYTES_FIELD_NUMBER: _ClassVar[int]
    partition: PartitionSpec
    sort_columns: _containers.RepeatedScalarFieldContainer[str]
    max_row_group_rows: int
    target_object_bytes: int
    def __init__(self, partition: _Optional[_Union[PartitionSpec, _Mapping]] = ..., sort_columns: _Optional[_Iterable[str]] = ..., max_row_group_rows: _Optional[int] = ..., target_object_bytes: _Optional[int] = ...) -> None: ...

class ColumnArtifactPolicy(_message.Message):
    __slots__ = ("column", "index")
    COLUMN_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    column: str
    index: ColumnIndex
    def __init__(self, column: _Optional[str] = ..., index: _Optional[_Union[ColumnIndex, _Mapping]] = ...) -> None: ...

class ArtifactPolicy(_message.Message):
    __slots__ = ("revision", "indexes", "projections", "grouped_extrema")
    REVISION_FIELD_NUMBER: _ClassVar[int]
    INDEXES_FIELD_NUMBER: _ClassVar[int]
    PROJECTIONS_FIELD_NUMBER: _ClassVar[int]
    GROUPED_EXTREMA_FIELD_NUMBER: _ClassVar[int]
    revision: int
    indexes: _containers.RepeatedCompositeFieldContainer[ColumnArtifactPolicy]
    projections: _containers.RepeatedCompositeFieldContainer[CoveringProjection]
    grouped_extrema: _containers.RepeatedCompositeFieldContainer[GroupedExtrema]
    def __init__(self, revision: _Optional[int] = ..., indexes: _Optional[_Iterable[_Union[ColumnArtifactPolicy, _Mapping]]] = ..., projections: _Optional[_Iterable[_Union[CoveringProjection, _Mapping]]] = ..., grouped_extrema: _Optional[_Iterable[_Union[GroupedExtrema, _Mapping]]] = ...) -> None: ...

class RemoteRetentionPolicy(_message.Message):
    __slots__ = ("retain_forever",)
    RETAIN_FOREVER_FIELD_NUMBER: _ClassVar[int]
    retain_forever: bool
    def __init__(self, retain_forever: _Optional[bool] = ...) -> None: ...

class OperatingPolicy(_message.Message):
    __slots__ = ("l0_mode", "local_cache", "remote_retention", "max_buffer_bytes", "max_flush_age_ms", "max_query_time_ms", "rollback_window_ms")
    L0_MODE_FIELD_NUMBER: _ClassVar[int]
    LOCAL_CACHE_FIELD_NUMBER: _ClassVar[int]
    REMOTE_RETENTION_FIELD_NUMBER: _ClassVar[int]
    MAX_BUFFER_BYTES_FIELD_NUMBER: _ClassVar[int]
    MAX_FLUSH_AGE_MS_FIELD_NUMBER: _ClassVar[int]
    MAX_QUERY_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    ROLLBACK_WINDOW_MS_FIELD_NUMBER: _ClassVar[int]
    l0_mode: L0Mode
    local_cache: StoragePolicy
    remote_retention: RemoteRetentionPolicy
    max_buffer_bytes: int
    max_flush_age_ms: int
    max_query_time_ms: int
    rollback_window_ms: int
    def __init__(self, l0_mode: _Optional[_Union[L0Mode, str]] = ..., local_cache: _Optional[_Union[StoragePolicy, _Mapping]] = ..., remote_retention: _Optional[_Union[RemoteRetentionPolicy, _Mapping]] = ..., max_buffer_bytes: _Optional[int] = ..., max_flush_age_ms: _Optional[int] = ..., max_query_time_ms: _Optional[int] = ..., rollback_window_ms: _Optional[int] = ...) -> None: ...

class TableSpec(_message.Message):
    __slots__ = ("version", "logical_schema", "source_layout", "artifact_policy", "operating_policy")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    LOGICAL_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    SOURCE_LAYOUT_FIELD_NUMBER: _ClassVar[int]
    ARTIFACT_POLICY_FIELD_NUMBER: _ClassVar[int]
    OPERATING_POLICY_FIELD_NUMBER: _ClassVar[int]
    version: int
    logical_schema: Schema
    source_layout: SourceLayout
    artifact_policy: ArtifactPolicy
    operating_policy: OperatingPolicy
    def __init__(self, version: _Optional[int] = ..., logical_schema: _Optional[_Union[Schema, _Mapping]] = ..., source_layout: _Optional[_Union[SourceLayout, _Mapping]] = ..., artifact_policy: _Optional[_Union[ArtifactPolicy, _Mapping]] = ..., operating_policy: _Optional[_Union[OperatingPolicy, _Mapping]] = ...) -> None: ...

class RegisterTableRequest(_message.Message):
    __slots__ = ("namespace", "schema", "storage_policy", "table_spec")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    STORAGE_POLICY_FIELD_NUMBER: _ClassVar[int]
    TABLE_SPEC_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    schema: Schema
    storage_policy: StoragePolicy
    table_spec: TableSpec
    def __init__(self, namespace: _Optional[str] = ..., schema: _Optional[_Union[Schema, _Mapping]] = ..., storage_policy: _Optional[_Union[StoragePolicy, _Mapping]] = ..., table_spec: _Optional[_Union[TableSpec, _Mapping]] = ...) -> None: ...

class RegisterTableResponse(_message.Message):
    __slots__ = ("effective_schema", "effective_policy", "active_table_spec_version", "desired_table_spec_version", "transition_phase")
    EFFECTIVE_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    EFFECTIVE_POLICY_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_TABLE_SPEC_VERSION_FIELD_NUMBER: _ClassVar[int]
    DESIRED_TABLE_SPEC_VERSION_FIELD_NUMBER: _ClassVar[int]
    TRANSITION_PHASE_FIELD_NUMBER: _ClassVar[int]
    effective_schema: Schema
    effective_policy: StoragePolicy
    active_table_spec_version: int
    desired_table_spec_version: int
    transition_phase: MigrationPhase
    def __init__(self, effective_schema: _Optional[_Union[Schema, _Mapping]] = ..., effective_policy: _Optional[_Union[StoragePolicy, _Mapping]] = ..., active_table_spec_version: _Optional[int] = ..., desired_table_spec_version: _Optional[int] = ..., transition_phase: _Optional[_Union[MigrationPhase, str]] = ...) -> None: ...

class WriteRowsRequest(_message.Message):
    __slots__ = ("namespace", "arrow_ipc")
    NAMESPACE_FIELD_NUMBER: _ClassVar[int]
    ARROW_IPC_FIELD_NUMBER: _ClassVar[int]
    namespace: str
    arrow_ipc: bytes
    def __init__(self, namespace: _Optional[str] = ..., arrow_ipc: _Optional[bytes] = ...) -> None: ...

class WriteRowsResponse(_message.Message):
    __slots__ = ("rows_written",)
    ROWS_WRITTEN_FIELD_NUMBER: _ClassVar[int]
    rows_written: int
    def __init__(self, rows_written: _Optional[int] = ...) -> None: ...

class QueryRequest(_message.Message):
    __slots__ = ("sql",)
    SQL_FIELD_NUMBER: _ClassVar[int]
    sql: str
    def __init__(self, sql: _Optional[str] = ...) -> None: ...

class QueryResponse(_message.Message):
    __slots__ = ("arrow_ipc", "row_count")
    ARROW_IPC_FIELD_NUMBER: _ClassVar[int]
    ROW_COUNT_FIELD_NUMBER: _ClassVar[int]
    arrow_ipc: bytes
    row_count: int
    def __init__(self, arrow_ipc: _Optional[bytes] = ..., row_count: _Optional[int] = ...) -> None: ...
