"""A result table streamed to a file row by row, so that an interrupted run keeps
every finished row and a resumed run can skip them.

Two formats, chosen by the file's extension: ``.csv`` (a header line, then one line
per row; floats written by ``repr``, so they read back bit for bit; an empty field
is a missing value) and ``.jsonl`` (JSON Lines: one JSON object per line; ±∞ as the
strings ``"inf"``/``"-inf"``, since JSON has no infinity). Every row is flushed as it
is written; a last line cut short by an interruption is dropped when the file is
resumed. When a run completes, the file is rewritten in task order (to a temporary
file in the same directory, then renamed, so that it is never half-written).
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import tempfile
from typing import Any, Iterable, Mapping, Optional, Sequence

__all__ = ["TableFile", "table_format", "decode_value", "encode_json", "FORMATS"]

#: file extensions and their formats
FORMATS = {".csv": "csv", ".jsonl": "jsonl"}


def table_format(path: "str | os.PathLike") -> str:
    """``"csv"`` or ``"jsonl"`` from the extension of ``path``; a ValueError otherwise."""
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in FORMATS:
        raise ValueError(f"output: {str(path)!r} must end in .csv or .jsonl (JSON Lines), "
                         f"got {ext or 'no extension'!r}")
    return FORMATS[ext]


def encode_json(value: Any) -> Any:
    """``value`` for JSON: non-finite floats as the strings "inf", "-inf", "nan"."""
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _csv_field(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return repr(value)
    return str(value)


def decode_value(value: Any, kind: type) -> Any:
    """A value read back from either format as ``kind`` (float, int or str); "" and
    None are missing (None)."""
    if value is None or value == "":
        return None
    if kind is float:
        return float(value)
    if kind is int:
        return int(value)
    return str(value)


class TableFile:
    """The output file of a run, with the given ``columns``.

    An existing non-empty file is refused unless ``resume`` (its complete rows are
    read into ``existing`` — the header must name the same columns) or ``overwrite``.
    """

    def __init__(self, path: "str | os.PathLike", columns: Sequence[str], *,
                 resume: bool = False, overwrite: bool = False) -> None:
        self.path, self.columns = str(path), list(columns)
        self.format = table_format(path)
        self.existing: list[dict] = []
        exists = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        if exists and os.path.isdir(self.path):
            raise ValueError(f"output: {self.path} is a directory")
        if exists and not (resume or overwrite):
            raise ValueError(f"output: {self.path} exists; pass resume (--resume) to skip "
                             f"its finished rows, or overwrite (--overwrite)")
        keep = 0
        if exists and resume:
            keep = self._read()
        mode = "r+" if keep else "w"
        self._fh = open(self.path, mode, encoding="utf-8", newline="")
        if keep:
            self._fh.seek(keep)
            self._fh.truncate()       # drop a last line cut short by an interruption
        else:
            self._write_header()

    def _read(self) -> int:
        with open(self.path, "rb") as fh:
            raw = fh.read()
        keep = raw.rfind(b"\n") + 1           # complete lines only
        try:
            text = raw[:keep].decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"output: {self.path} is not a UTF-8 text file (byte "
                             f"{exc.start}); cannot resume it") from None
        lines = text.splitlines()
        if self.format == "csv":
            rows = list(csv.reader(lines))
            if not rows:
                return 0
            if rows[0] != self.columns:
                raise ValueError(f"output: {self.path} has the columns {','.join(rows[0])}, "
                                 f"not those of this run ({','.join(self.columns)}); "
                                 f"cannot resume it")
            for number, row in enumerate(rows[1:], start=2):
                if len(row) != len(self.columns):
                    raise ValueError(f"output: {self.path} line {number} has {len(row)} "
                                     f"fields, not {len(self.columns)}; cannot resume it")
                self.existing.append(dict(zip(self.columns, row)))
        else:
            for number, line in enumerate(lines, start=1):
                try:
                    row = json.loads(line)
                except ValueError:
                    raise ValueError(f"output: {self.path} line {number} is not JSON; "
                                     f"cannot resume it") from None
                if not isinstance(row, dict) or list(row) != self.columns:
                    raise ValueError(f"output: {self.path} line {number} does not hold the "
                                     f"columns of this run ({','.join(self.columns)}); "
                                     f"cannot resume it")
                self.existing.append(row)
        return keep

    def _write_header(self) -> None:
        if self.format == "csv":
            self._fh.write(self._csv_line(self.columns))
            self._fh.flush()

    def _csv_line(self, fields: Iterable[Any]) -> str:
        buf = io.StringIO()
        csv.writer(buf, lineterminator="\n").writerow([_csv_field(v) for v in fields])
        return buf.getvalue()

    def _line(self, row: Mapping[str, Any]) -> str:
        if self.format == "csv":
            return self._csv_line(row.get(c) for c in self.columns)
        return json.dumps({c: encode_json(row.get(c)) for c in self.columns},
                          allow_nan=False) + "\n"

    def append(self, row: Mapping[str, Any]) -> None:
        """Write ``row`` and flush it to the operating system."""
        self._fh.write(self._line(row))
        self._fh.flush()

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def rewrite(self, rows: Sequence[Optional[Mapping[str, Any]]]) -> None:
        """Replace the file by ``rows`` (None entries skipped), atomically."""
        self.close()
        folder = os.path.dirname(os.path.abspath(self.path))
        fd, tmp = tempfile.mkstemp(prefix=".partial-", dir=folder)
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                if self.format == "csv":
                    fh.write(self._csv_line(self.columns))
                for row in rows:
                    if row is not None:
                        fh.write(self._line(row))
            os.replace(tmp, self.path)
        except BaseException:
            _remove_quietly(tmp)
            raise


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
