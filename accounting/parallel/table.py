"""A result table streamed to a file row by row, so that an interrupted run keeps
every finished row and a resumed run can skip them.

Two formats, chosen by the file's extension: ``.csv`` (a header line, then one line
per row; floats written by ``repr``, so they read back bit for bit; an empty field
is a missing value) and ``.jsonl`` (JSON Lines: one JSON object per line; ±∞ as the
strings ``"inf"``/``"-inf"``, since JSON has no infinity). Every row is flushed as it
is written; a last line cut short by an interruption is dropped when the file is
resumed. When a run completes, the file is rewritten in task order (to a temporary
file in the same directory, then renamed, so that it is never half-written).

Where the file goes is checked before any work (``check_output``): a missing folder,
a folder that cannot be written (``/proc``), a directory or a device in place of the
file is a ValueError naming the path and the reason. Reading a file back for a resume
is as strict as reading any document: a line nested too deeply, a value that is not
of its column's type (``decode_value``), is refused naming the file and the line.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from accounting.serialization import check_writable_file, parse_json

__all__ = ["TableFile", "table_format", "check_output", "decode_value", "encode_json",
           "FORMATS"]

#: file extensions and their formats
FORMATS = {".csv": "csv", ".jsonl": "jsonl"}


def table_format(path: str | os.PathLike[str]) -> str:
    """``"csv"`` or ``"jsonl"`` from the extension of ``path``; a ValueError otherwise."""
    ext = os.path.splitext(str(path))[1].lower()
    if ext not in FORMATS:
        raise ValueError(f"output: {str(path)!r} must end in .csv or .jsonl (JSON Lines), "
                         f"got {ext or 'no extension'!r}")
    return FORMATS[ext]


def check_output(path: str | os.PathLike[str]) -> str:
    """The format of the output file ``path`` (``table_format``) once it is known the
    file can be written there: its folder exists and takes a new file (tried, with a
    temporary file removed at once: the final rewrite needs one there too), and
    ``path`` is a regular file if it exists (never a directory, a FIFO that would
    block, or a device that the final rewrite would replace). A ValueError naming
    ``path`` and the reason otherwise."""
    fmt = table_format(path)
    check_writable_file(path, "output", "a .csv or .jsonl file")
    return fmt


#: how a number is written by ``repr`` (and ±∞, NaN), and an integer: nothing else
#: (no spaces or underscores, which ``float`` and ``int`` would also take)
_FLOAT_TEXT = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|[+-]?inf|nan")
_INT_TEXT = re.compile(r"[+-]?[0-9]+")


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
    None are missing (None). Only what the table writes is read: a float is a JSON
    number or its text as ``repr`` writes it ("inf", "-inf" and "nan" included, for
    the caller to judge), an int has digits only, a str is a string; anything else
    (a boolean, a list, "1_0", " 1") is a ValueError saying what it got."""
    if value is None or value == "":
        return None
    if kind is str and isinstance(value, str):
        return value
    if kind is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str) and _FLOAT_TEXT.fullmatch(value):
            return float(value)
    if kind is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, str) and _INT_TEXT.fullmatch(value):
            return int(value)
    what = {float: "a number", int: "an integer", str: "a string"}[kind]
    raise ValueError(f"{value!r:.40} is not {what}")


class TableFile:
    """The output file of a run, with the given ``columns``.

    An existing non-empty file is refused unless ``resume`` (its complete rows are
    read into ``existing``, and the line each came from into ``lines`` — the header
    must name the same columns) or ``overwrite``. ``path`` is checked first
    (``check_output``).
    """

    def __init__(self, path: str | os.PathLike[str], columns: Sequence[str], *,
                 resume: bool = False, overwrite: bool = False) -> None:
        self.path, self.columns = str(path), list(columns)
        self.format = check_output(path)
        self.existing: list[dict[str, Any]] = []
        self.lines: list[int] = []
        exists = os.path.exists(self.path) and os.path.getsize(self.path) > 0
        if exists and not (resume or overwrite):
            raise ValueError(f"output: {self.path} exists; pass resume (--resume) to skip "
                             f"its finished rows, or overwrite (--overwrite)")
        keep = 0
        if exists and resume:
            keep = self._read()
        mode = "r+" if keep else "w"
        try:
            self._fh = open(self.path, mode, encoding="utf-8", newline="")
        except OSError as exc:
            raise ValueError(f"output: cannot write {self.path} "
                             f"({exc.strerror or type(exc).__name__})") from None
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
            reader = csv.reader(lines)
            header = next(reader, None)
            if header is None:
                return 0
            if header != self.columns:
                raise ValueError(f"output: {self.path} has the columns {','.join(header)}, "
                                 f"not those of this run ({','.join(self.columns)}); "
                                 f"cannot resume it")
            number = reader.line_num + 1
            for row in reader:
                if len(row) != len(self.columns):
                    raise ValueError(f"output: {self.path} line {number} has {len(row)} "
                                     f"fields, not {len(self.columns)}; cannot resume it")
                self.existing.append(dict(zip(self.columns, row)))
                self.lines.append(number)
                number = reader.line_num + 1
        else:
            for number, line in enumerate(lines, start=1):
                where = f"output: {self.path} line {number}"
                try:
                    row = parse_json(line, where)
                except ValueError as exc:
                    if str(exc).startswith(where):      # nested too deeply
                        raise ValueError(f"{exc}; cannot resume it") from None
                    raise ValueError(f"{where} is not JSON ({exc}); cannot resume "
                                     f"it") from None
                if not isinstance(row, dict) or list(row) != self.columns:
                    raise ValueError(f"output: {self.path} line {number} does not hold the "
                                     f"columns of this run ({','.join(self.columns)}); "
                                     f"cannot resume it")
                self.existing.append(row)
                self.lines.append(number)
        return keep

    def field(self, value: Any) -> Any:
        """``value`` as a row read back from this file holds it (a CSV field is its
        text; JSON Lines give back lists for tuples), to compare with a resumed row."""
        if self.format == "csv":
            return _csv_field(value)
        return json.loads(json.dumps(encode_json(value)))

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

    def rewrite(self, rows: Sequence[Mapping[str, Any] | None]) -> None:
        """Replace the file by ``rows`` (None entries skipped), atomically."""
        self.close()
        folder = os.path.dirname(os.path.abspath(self.path))
        try:
            fd, tmp = tempfile.mkstemp(prefix=".partial-", dir=folder)
        except OSError as exc:
            raise ValueError(f"output: cannot rewrite {self.path} in grid order "
                             f"({exc.strerror}); its rows are there as they finished") from None
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
                if self.format == "csv":
                    fh.write(self._csv_line(self.columns))
                for row in rows:
                    if row is not None:
                        fh.write(self._line(row))
            # mkstemp makes the file private (0600): keep the mode the file had
            os.chmod(tmp, stat.S_IMODE(os.stat(self.path).st_mode))
            os.replace(tmp, self.path)
        except BaseException:
            _remove_quietly(tmp)
            raise


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
