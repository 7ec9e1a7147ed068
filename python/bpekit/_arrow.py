"""Arrow string columns for the native reader: Parquet files and Hugging Face datasets.

Each source is ``("arrow", name, batches)``; a batch is ``(data, offsets, row_group,
first_row[, bad])`` as the native API takes it: the column's UTF-8 data buffer and its
offsets as a numpy view, both zero-copy (the array's ``.offset`` is applied to the
offsets, not by copying), document ``i`` being ``data[offsets[i]:offsets[i + 1]]``.
Nulls never reach the core as text: ``bad_records="error"`` raises naming the row,
``"skip"`` cuts the batch around them (still zero-copy, so rows keep their numbers) and
hands their rows to the core as ``bad``, which counts them with every other bad record
(so a column of nulls only is a run that read nothing, an error).

A Parquet file is read one row group at a time, in batches of about ``BATCH_BYTES`` of
text, and only its text column: memory does not grow with the file. A dataset is read
through ``with_format("arrow").iter(...)``, which honours its ``select`` and ``shuffle``
indices and an ``IterableDataset``'s lazy ``map``; only the needed column is selected.

>>> import pyarrow as pa
>>> arr = pa.array(["ab", None, "cde", "f"])
>>> batches = string_batches(arr, "x", None, 0, "text", "skip")
>>> [(bytes(d), o.tolist(), row, *bad) for d, o, _, row, *bad in batches]
[(b'abcdef', [0, 2], 0, [(1, "field 'text' is null")]), (b'abcdef', [2, 5, 6], 2, [])]
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import pyarrow as pa

__all__ = ["dataset_source", "parquet_source", "string_batches"]

# (data, offsets, row_group, first_row), and (row, why) of rows without text when any.
Batch = tuple[Any, ...]
Source = tuple[str, str, Iterator[Any]]

# Text per batch handed to the core: large enough that the per-batch cost (a Python
# call, a buffer export) is lost in the work, small enough that the workers share a
# row group's batches evenly: a 2-thread count of en.parquet (row groups of ~50 MB)
# took 0.36 s in 16 MB batches, 0.29 s in 4 MB ones (plain text: 0.195 s).
BATCH_BYTES = 4 << 20
# Rows per batch of a dataset, whose documents' sizes are not known up front: 4,096
# documents of C4's ~2 KB are 8 MB.
DATASET_BATCH_ROWS = 4096


def _pyarrow(what: str) -> Any:
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError:
        raise ImportError(
            f"{what}: reading Parquet needs pyarrow, which is not installed: pip install 'bpekit[parquet]'"
        ) from None
    return pyarrow


def _where(name: str, row_group: int | None, row: int) -> str:
    return f"{name}: row {row}" if row_group is None else f"{name}: row group {row_group}, row {row}"


def _string_array(arr: pa.Array, name: str, field: str) -> pa.Array:
    """``arr`` as a string or large_string array; string_view and dictionary-encoded strings
    are cast (a copy: their bytes are not one buffer); any other type is an error."""
    import pyarrow as pa

    t = arr.type
    if _is_utf8(t):
        return arr
    if pa.types.is_dictionary(t) and _is_utf8(t.value_type):
        return arr.dictionary_decode()
    if getattr(pa.types, "is_string_view", lambda _: False)(t):  # pyarrow 16 and later
        return arr.cast(pa.large_string())
    if pa.types.is_null(t):  # a column of nulls only, as pyarrow infers one
        return pa.nulls(len(arr), pa.string())
    raise ValueError(f"{name}: column {field!r} holds {t}, not strings; cast it to string first")


def _is_utf8(t: pa.DataType) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(t) or pa.types.is_large_string(t))


def _is_string32(t: pa.DataType) -> bool:
    import pyarrow as pa

    return bool(pa.types.is_string(t))


def _batch(arr: pa.Array, start: int, stop: int, row_group: int | None, first_row: int) -> Batch:
    """Rows ``start:stop`` of a string array, zero-copy."""
    _, offsets, data = arr.buffers()[:3]
    dtype = np.int32 if _is_string32(arr.type) else np.int64  # large_string: 64-bit offsets
    itemsize = np.dtype(dtype).itemsize
    view = np.frombuffer(offsets, dtype=dtype, count=stop - start + 1, offset=(arr.offset + start) * itemsize)
    # A pyarrow Buffer exports signed chars ("b"); the core reads unsigned bytes ("B").
    text = memoryview(data).cast("B") if data is not None else b""
    return (text, view, row_group, first_row + start)


def string_batches(
    arr: pa.Array,
    name: str,
    row_group: int | None,
    first_row: int,
    field: str,
    bad_records: str,
) -> Iterator[Batch]:
    """The batches of one string array, whose row 0 is row ``first_row`` of ``name``
    (within ``row_group`` when one is given); nulls raised, or skipped: the first batch
    lists them for the core to count."""
    arr = _string_array(arr, name, field)
    n = len(arr)
    if n == 0:
        return
    if arr.null_count == 0:
        yield _batch(arr, 0, n, row_group, first_row)
        return
    nulls = np.flatnonzero(~arr.is_valid().to_numpy(zero_copy_only=False))
    why = f"field {field!r} is null"
    if bad_records == "error":
        raise ValueError(f"{_where(name, row_group, first_row + int(nulls[0]))}: {why}")
    bad = [(first_row + i, why) for i in nulls.tolist()]
    start = 0
    for i in nulls.tolist():
        if i > start:
            yield (*_batch(arr, start, i, row_group, first_row), bad)
            bad = []
        start = i + 1
    if start < n:
        yield (*_batch(arr, start, n, row_group, first_row), bad)
    elif bad:  # nulls to the end, none of them counted yet: a batch of no documents
        yield (b"", np.zeros(1, dtype=np.int64), row_group, first_row + n, bad)


def _leaf(arr: pa.Array, parts: list[str], name: str, field: str) -> pa.Array:
    """The child at ``parts`` of a (struct) array; a null parent makes a null child."""
    import pyarrow as pa
    import pyarrow.compute as pc

    for part in parts:
        index = arr.type.get_field_index(part) if pa.types.is_struct(arr.type) else -1
        if index < 0:
            raise ValueError(f"{name}: no column {field!r}: {part!r} is not a field of {arr.type}")
        arr = pc.struct_field(arr, [index])
    return arr


def _leaf_paths(schema_fields: Any, prefix: str = "") -> list[str]:
    """The dotted paths of every column, struct children included: ``id, meta.body``."""
    import pyarrow as pa

    paths: list[str] = []
    for f in schema_fields:
        if pa.types.is_struct(f.type):
            paths.extend(_leaf_paths(list(f.type), f"{prefix}{f.name}."))
        else:
            paths.append(f"{prefix}{f.name}")
    return paths


def _check_column(schema: pa.Schema, field: str, name: str) -> None:
    """Refuses a schema without the column ``field`` (a dotted path), naming the columns it has."""
    import pyarrow as pa

    fields: Any = schema
    t = None
    for part in field.split("."):
        index = fields.get_field_index(part) if fields is not None else -1
        if index < 0:
            if "." in field and schema.get_field_index(field) >= 0:
                raise ValueError(
                    f"{name}: text_field {field!r} is read as a path of nested fields "
                    f"({' -> '.join(field.split('.'))}), and this file has a column named "
                    f"{field!r} with the dots in its name; rename that column"
                )
            have = ", ".join(_leaf_paths(list(schema))) or "none"
            raise ValueError(f"{name}: no column {field!r} (its columns: {have}); pass text_field=")
        t = fields.field(index).type
        fields = t if pa.types.is_struct(t) else None


# --- Parquet -----------------------------------------------------------------------------


def _open_parquet(path: Path | str) -> Any:
    """What ``pq.ParquetFile`` opens: a local path, or a store's object (a URL) opened
    for ranged reads, so that only the footer and the column's pages are fetched."""
    if isinstance(path, str):
        from bpekit import _stores

        if _stores.is_url(path) and _stores.local_path(path) is None:
            return _stores.open_random(path)
    return path


def parquet_source(
    path: Path | str, field: str, bad_records: str, row_groups: tuple[int, int] | None = None
) -> Source:
    """``("arrow", path, batches)`` for a Parquet file (its row groups ``row_groups[0]``
    to ``row_groups[1]`` only, when given: a unit of a distributed job). Its footer is
    read now, so that a file that is not Parquet, or has no column ``field``, is an
    error before any work; its rows are read as the core pulls them."""
    name = str(path)
    pa = _pyarrow(name)
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(_open_parquet(path)) as pf:
            metadata = pf.metadata
            schema = pf.schema_arrow
    except pa.ArrowException as e:
        raise ValueError(f"{name}: not a valid Parquet file ({e})") from None
    _check_column(schema, field, name)
    groups = range(*(row_groups or (0, metadata.num_row_groups)))
    if groups.stop > metadata.num_row_groups:
        raise ValueError(
            f"{name}: holds {metadata.num_row_groups} row groups, not the row groups "
            f"{groups.start}..{groups.stop} planned to be read (it changed since the run was planned)"
        )
    return ("arrow", name, _parquet_batches(path, metadata, field, bad_records, groups))


def _rows_per_batch(metadata: Any, group: int, column: str) -> int:
    """Rows of about ``BATCH_BYTES`` of text, from the row group's column sizes."""
    rg = metadata.row_group(group)
    size = sum(
        rg.column(i).total_uncompressed_size
        for i in range(rg.num_columns)
        if rg.column(i).path_in_schema == column or rg.column(i).path_in_schema.startswith(column + ".")
    )
    per_row = max(size // max(rg.num_rows, 1), 1)
    return int(min(max(BATCH_BYTES // per_row, 64), 1 << 20))


def _parquet_batches(
    path: Path | str, metadata: Any, field: str, bad_records: str, groups: range
) -> Iterator[Batch]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    name = str(path)
    top, *rest = field.split(".")
    group = -1
    try:
        with pq.ParquetFile(_open_parquet(path), metadata=metadata) as pf:
            for group in groups:
                first = 0
                rows = _rows_per_batch(metadata, group, field)
                for record_batch in pf.iter_batches(batch_size=rows, row_groups=[group], columns=[field]):
                    column = record_batch.column(record_batch.schema.get_field_index(top))
                    arr = _leaf(column, rest, name, field)
                    yield from string_batches(arr, name, group, first, field, bad_records)
                    first += len(column)
    except (pa.ArrowException, OSError) as e:
        if isinstance(e, FileNotFoundError | PermissionError):
            raise
        where = f"row group {group}" if group >= 0 else "its footer"
        raise ValueError(f"{name}: not a valid Parquet file: {where} cannot be read ({e})") from None


# --- Hugging Face datasets -----------------------------------------------------------------


def _column_path(item: Any) -> tuple[Any, str]:
    """A ``Column`` / ``IterableColumn`` (``ds["meta"]["body"]``) as its dataset and the
    dotted path of its field."""
    names = []
    while type(item).__name__ in ("Column", "IterableColumn"):
        names.append(item.column_name)
        item = item.source
    return item, ".".join(reversed(names))


def dataset_source(item: Any, field: str, bad_records: str) -> Source:
    """The source of a Hugging Face dataset (its column ``field``) or of a column of one.

    A dataset with a formatting transform (``set_transform``), whose output is not its
    stored columns, is read through that transform, in Python: ``("str", ...)``.
    """
    if type(item).__name__ in ("Column", "IterableColumn"):
        ds, field = _column_path(item)
    else:
        ds = item
    name = f"dataset {field!r} column"
    top = field.split(".")[0]
    columns = getattr(ds, "column_names", None)
    if columns is not None and top not in columns:
        raise ValueError(
            f"{name}: no column {top!r} (its columns: {', '.join(columns) or 'none'}); pass text_field="
        )
    fmt = getattr(ds, "format", None)
    if isinstance(fmt, dict) and fmt.get("type") == "custom":
        return ("str", name, _transformed_texts(ds, field))
    return ("arrow", name, _dataset_batches(ds, field, name, bad_records))


def _dataset_batches(ds: Any, field: str, name: str, bad_records: str) -> Iterator[Batch]:
    top, *rest = field.split(".")
    first = 0
    # Only the column read; an IterableDataset of unknown columns (from a generator)
    # cannot select one, and is checked batch by batch.
    view = ds if getattr(ds, "column_names", None) is None else ds.select_columns([top])
    for table in view.with_format("arrow").iter(batch_size=DATASET_BATCH_ROWS):
        if top not in table.column_names:
            have = ", ".join(table.column_names) or "none"
            raise ValueError(f"{name}: no column {top!r} (its columns: {have}); pass text_field=")
        for chunk in table.column(top).chunks:
            arr = _leaf(chunk, rest, name, field)
            yield from string_batches(arr, name, None, first, field, bad_records)
            first += len(chunk)


def _transformed_texts(ds: Any, field: str) -> Iterator[Any]:
    """The field's values, row by row, as the dataset's transform gives them."""
    parts = field.split(".")
    for row in ds:
        value = row
        for part in parts:
            value = value.get(part) if isinstance(value, dict) else None
        yield value
