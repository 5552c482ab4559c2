"""Validate a router-training upload with polars before anything is queued (imported lazily: polars is heavy).

Rules (each failure is a 400 whose code and message name the column and, where there is one, the row; row 1 is
the first data row under the header):
- the file must be UTF-8 (a BOM is fine): INVALID_ENCODING names the first bad row;
- it must parse as CSV with a header: EMPTY_DATASET, INVALID_CSV, DUPLICATE_COLUMN;
- the prompt column must exist (MISSING_COLUMN) and hold text on every row (EMPTY_PROMPT);
- every model in llm_providers needs `<provider>/<model>/score` and `<provider>/<model>/response`
  (MISSING_MODEL_COLUMN); a `.../score` or `.../response` column of a model not in llm_providers is refused
  (UNEXPECTED_MODEL_COLUMN), because its scores would be silently ignored. Other extra columns (ids, a `domain`
  or `category` label, ...) are allowed and ignored: modelSelect never sees them, so the router cannot use them;
- scores must be present (MISSING_SCORE) and finite numbers (INVALID_SCORE) within +-1e9 (SCORE_OUT_OF_RANGE):
  training rescales them with the table's min and max, and a span beyond float64's range (1e308 next to -1e308)
  would turn every quality into NaN. Accuracies, ratings, percentages, Elo, latencies in ms and costs all fit
  with room to spare, and 1e9 keeps float64's precision at 1e-7 across the span. Responses may be empty (they are
  kept for notebooks, the router does not read them);
- lines with every field empty are skipped; then at least 25 rows (INSUFFICIENT_SAMPLES) and at most 10,000
  (TOO_MANY_ROWS). The byte limit (413) and the parse time limit (408) are enforced by the caller;
- hostile shapes are bounded before polars parses anything: at most 1,000 columns (TOO_MANY_COLUMNS, checked on
  the header alone), column names of at most 1,000 characters (COLUMN_NAME_TOO_LONG) and at most 500,000
  characters in a kept cell (CELL_TOO_LARGE, about the largest context window in the catalogue);
- line endings may be CRLF, LF or CR alone (Excel's "CSV (Macintosh)"); the prompt column must not be one of the
  models' score or response columns (INVALID_PROMPT_COLUMN).
Cells are stored as text and never evaluated: a spreadsheet formula such as `=HYPERLINK(...)` is a prompt like
any other. Nothing in the service exports uploads as CSV again; an export would have to escape leading `=+-@`.
"""

from __future__ import annotations

import csv
import io
from collections import Counter
from dataclasses import dataclass

import polars as pl

from api.errors import ValidationFailed

MIN_ROWS = 25
MAX_ROWS = 10_000
MAX_COLUMNS = 1_000
MAX_CELL_CHARS = 500_000
MAX_COLUMN_NAME_CHARS = 1_000
MODEL_SUFFIXES = ("/score", "/response")
MAX_ABS_SCORE = 1e9


@dataclass(frozen=True)
class ModelColumns:
    key: str  # provider/model as named in llm_providers (the CSV's column prefix)
    score: str
    response: str


@dataclass(frozen=True)
class ValidDataset:
    frame: pl.DataFrame  # prompt, then per model score (Float64) and response (Utf8) columns, as uploaded
    prompt_column: str
    models: list[ModelColumns]

    @property
    def rows(self) -> int:
        return self.frame.height


def fail(code: str, message: str, **details: object) -> ValidationFailed:
    return ValidationFailed(message, code=code, details=details or None)


def _decode(raw: bytes) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        row = raw[: exc.start].count(b"\n")  # line 0 is the header
        raise fail("INVALID_ENCODING", f"dataset_file is not UTF-8: byte {exc.start} (row {row}) cannot be "
                   "decoded; save the CSV as UTF-8", byte_offset=exc.start, row=row) from None


def _header(text: str) -> list[str]:
    """The first record, read by the csv module (quotes respected) before polars sees anything."""
    try:
        return next(csv.reader(io.StringIO(text)), [])
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise fail("COLUMN_NAME_TOO_LONG", f"a column name of dataset_file is longer than "
                       f"{csv.field_size_limit():,} characters; column names may have at most "
                       f"{MAX_COLUMN_NAME_CHARS:,}", maximum=MAX_COLUMN_NAME_CHARS) from None
        raise fail("INVALID_CSV", f"dataset_file's header is not readable CSV: {exc}") from None


def _parse(text: str) -> pl.DataFrame:
    if not text.strip():
        raise fail("EMPTY_DATASET", "dataset_file is empty")
    # One line ending for csv and polars alike; a CR inside a quoted cell becomes a newline there, which it meant.
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    names = _header(text)
    long_name = next((n for n in names if len(n) > MAX_COLUMN_NAME_CHARS), None)
    if long_name is not None:
        raise fail("COLUMN_NAME_TOO_LONG", f"a column name of dataset_file has {len(long_name):,} characters; "
                   f"at most {MAX_COLUMN_NAME_CHARS:,} are accepted", maximum=MAX_COLUMN_NAME_CHARS,
                   column=long_name)
    if len(names) > MAX_COLUMNS:
        raise fail("TOO_MANY_COLUMNS", f"dataset_file has {len(names):,} columns; at most {MAX_COLUMNS:,} are "
                   "accepted", columns=len(names), maximum=MAX_COLUMNS)
    dupes = sorted(name for name, count in Counter(names).items() if count > 1)
    if dupes:
        raise fail("DUPLICATE_COLUMN", f"column {dupes[0]!r} appears more than once", columns=dupes)
    try:
        frame = pl.read_csv(io.StringIO(text), infer_schema=False)
    except pl.exceptions.PolarsError as exc:  # any parse failure is the file's, never a 500
        raise _unreadable(str(exc), text) from None
    return frame


def _unreadable(message: str, text: str) -> ValidationFailed:
    # polars explains itself after "Original error:"; keep that part, on one line, bounded.
    reason = " ".join(ln.strip(" `") for ln in message.split("Original error:")[-1].splitlines() if ln.strip(" `"))
    return fail("INVALID_CSV", f"dataset_file is not a readable CSV: {reason[:300] or 'unreadable'}")


def _rows_where(mask: pl.Series, index: pl.Series) -> list[int]:
    return [int(i) + 1 for i in index.filter(mask).head(5).to_list()]


def validate(raw: bytes, prompt_column: str, model_keys: list[str]) -> ValidDataset:
    frame = _parse(_decode(raw))
    columns = frame.columns
    if prompt_column not in columns:
        raise fail("MISSING_COLUMN", f"prompt_column {prompt_column!r} is not a column of dataset_file "
                   f"(columns: {', '.join(columns[:20])})", column=prompt_column)
    models = [ModelColumns(k, f"{k}/score", f"{k}/response") for k in model_keys]
    wanted = {c for m in models for c in (m.score, m.response)}
    if prompt_column in wanted:
        raise fail("INVALID_PROMPT_COLUMN", f"prompt_column {prompt_column!r} is a model's score or response column;"
                   " name the column that holds the prompts", column=prompt_column)
    for m in models:
        missing = [c for c in (m.score, m.response) if c not in columns]
        if missing:
            raise fail("MISSING_MODEL_COLUMN", f"model {m.key!r} is in llm_providers but dataset_file has no "
                       f"column {missing[0]!r}", model=m.key, columns=missing)
    extra = [c for c in columns if c.endswith(MODEL_SUFFIXES) and c not in wanted and c != prompt_column]
    if extra:
        raise fail("UNEXPECTED_MODEL_COLUMN", f"column {extra[0]!r} names a model that is not in llm_providers; "
                   "add the model to llm_providers or drop the column", columns=extra)

    keep = [prompt_column] + [c for m in models for c in (m.score, m.response)]
    frame = frame.select(keep).with_row_index("_row")
    blank = pl.all_horizontal([pl.col(c).is_null() | (pl.col(c).str.strip_chars() == "") for c in keep])
    frame = frame.filter(~blank)

    for column in keep:
        too_long = frame[column].str.len_chars() > MAX_CELL_CHARS
        if too_long.any():
            rows = _rows_where(too_long, frame["_row"])
            raise fail("CELL_TOO_LARGE", f"column {column!r} holds more than {MAX_CELL_CHARS:,} characters on row "
                       f"{rows[0]}", column=column, rows=rows, maximum=MAX_CELL_CHARS)

    prompts = frame[prompt_column]
    empty = prompts.is_null() | (prompts.str.strip_chars() == "")
    if empty.any():
        rows = _rows_where(empty, frame["_row"])
        raise fail("EMPTY_PROMPT", f"column {prompt_column!r} is empty on row {rows[0]}"
                   + (f" (and {int(empty.sum()) - 1} more)" if empty.sum() > 1 else ""), column=prompt_column,
                   rows=rows)
    for m in models:
        text = frame[m.score].str.strip_chars()
        missing = text.is_null() | (text == "")
        if missing.any():
            rows = _rows_where(missing, frame["_row"])
            raise fail("MISSING_SCORE", f"column {m.score!r} has no score on row {rows[0]}", column=m.score,
                       rows=rows)
        values = text.cast(pl.Float64, strict=False)
        bad = values.is_null() | values.is_nan() | values.is_infinite()
        if bad.any():
            rows = _rows_where(bad, frame["_row"])
            raise fail("INVALID_SCORE", f"column {m.score!r} holds {text.filter(bad)[0]!r} on row {rows[0]}, "
                       "not a finite number", column=m.score, rows=rows)
        outside = values.abs() > MAX_ABS_SCORE
        if outside.any():
            rows = _rows_where(outside, frame["_row"])
            raise fail("SCORE_OUT_OF_RANGE", f"column {m.score!r} holds {text.filter(outside)[0]!r} on row {rows[0]}, "
                       f"outside the accepted range -1e9 to 1e9; rescale the scores (any linear scale works: "
                       "training rescales them to 0..1)", column=m.score, rows=rows, minimum=-MAX_ABS_SCORE,
                       maximum=MAX_ABS_SCORE)
        frame = frame.with_columns(values.alias(m.score), pl.col(m.response).fill_null(""))
    if frame.height < MIN_ROWS:
        raise fail("INSUFFICIENT_SAMPLES", f"dataset_file has {frame.height} usable rows; at least {MIN_ROWS} are "
                   "needed (50 to 100 or more work best)", rows=frame.height, minimum=MIN_ROWS)
    if frame.height > MAX_ROWS:
        raise fail("TOO_MANY_ROWS", f"dataset_file has {frame.height:,} rows; at most {MAX_ROWS:,} are accepted per "
                   "training job", rows=frame.height, maximum=MAX_ROWS)
    return ValidDataset(frame.drop("_row"), prompt_column, models)
