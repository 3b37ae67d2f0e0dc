#!/usr/bin/env python3
"""Load a result folder's CSV files in pandas with the types of its datapackage.json, and its
Parquet files (from `runner export parquet`) when pandas can read Parquet, and check that every
column gets the type the schema file says.

Usage: check_export_types.py RESULT_DIR [PARQUET_DIR]   (PARQUET_DIR: RESULT_DIR/parquet)

The schema file is a Frictionless tabular data package; its field types map to pandas dtypes:

  integer   Int64                  (nullable integer, even when every cell is empty)
  number    Float64
  boolean   boolean
  string    string
  datetime  datetime64[ns, UTC]    (read as text, then pandas.to_datetime(utc=True))

A field with constraints.required must have a value in every row. Timestamps must keep their
nanoseconds. Reading Parquet in pandas needs pyarrow or fastparquet, which Debian bookworm does
not package; without them the Parquet files are checked in DuckDB only (.ci/duckdb).
"""

import json
import os
import sys

import pandas as pd

DTYPE = {"integer": "Int64", "number": "Float64", "boolean": "boolean", "string": "string"}
WANT = dict(DTYPE, datetime="datetime64[ns, UTC]")


def fail(msg):
    print("check_export_types: " + msg, file=sys.stderr)
    sys.exit(1)


def parquet_engine():
    for name in ("pyarrow", "fastparquet"):
        try:
            __import__(name)
            return name
        except ImportError:
            pass
    return None


def load_csv(path, fields):
    dtype = {f["name"]: DTYPE.get(f["type"], "string") for f in fields}
    df = pd.read_csv(path, dtype=dtype, keep_default_na=False, na_values=[""])
    for f in fields:
        if f["type"] == "datetime":
            df[f["name"]] = pd.to_datetime(df[f["name"]], utc=True)
    return df


def check_frame(what, df, fields, problems, raw=None):
    names = [f["name"] for f in fields]
    if list(df.columns) != names:
        problems.append(f"{what}: columns {list(df.columns)}, schema {names}")
        return
    for f in fields:
        name, col = f["name"], df[f["name"]]
        want = WANT.get(f["type"])
        if want is None:
            problems.append(f"{what}: {name}: unknown schema type {f['type']}")
        elif str(col.dtype) != want:
            problems.append(f"{what}: {name}: loads as {col.dtype}, schema says {f['type']} ({want})")
        if f.get("constraints", {}).get("required") and col.isna().any():
            problems.append(f"{what}: {name}: {int(col.isna().sum())} missing values in a required column")
        if raw is not None and f["type"] == "datetime":
            # The nanoseconds of the text survive the load.
            for text, ts in zip(raw[name], col):
                if isinstance(text, str) and text and int(text[-10:-1]) != ts.microsecond * 1000 + ts.nanosecond:
                    problems.append(f"{what}: {name}: {text} loses its nanoseconds ({ts})")
                    break


def main():
    if len(sys.argv) not in (2, 3):
        fail("usage: check_export_types.py RESULT_DIR [PARQUET_DIR]")
    folder = sys.argv[1]
    pq_dir = sys.argv[2] if len(sys.argv) == 3 else os.path.join(folder, "parquet")
    schema_path = os.path.join(folder, "datapackage.json")
    if not os.path.exists(schema_path):
        fail(f"{schema_path}: no schema file in the folder")
    with open(schema_path) as f:
        pkg = json.load(f)
    engine = parquet_engine()
    problems, checked = [], 0
    for res in pkg["resources"]:
        fields = res["schema"]["fields"]
        path = os.path.join(folder, res["path"])
        try:
            df = load_csv(path, fields)
        except (ValueError, TypeError) as e:
            problems.append(f"{res['path']}: pandas cannot load it with the schema's types: {e}")
            continue
        raw = pd.read_csv(path, dtype=str, keep_default_na=False)
        check_frame(res["path"], df, fields, problems, raw)
        empty = [c for c in df.columns if len(df) and df[c].isna().all()]
        note = f"; typed though empty in every row: {', '.join(empty)}" if empty else ""
        if engine:
            pq_path = os.path.join(pq_dir, res["path"][: -len(".csv")] + ".parquet")
            pdf = pd.read_parquet(pq_path, engine=engine)
            for fld in fields:
                # Parquet carries the types itself; map its numpy dtypes onto the nullable ones.
                name = fld["name"]
                if fld["type"] == "datetime":
                    pdf[name] = pd.to_datetime(pdf[name], utc=True)
                else:
                    pdf[name] = pdf[name].astype(DTYPE[fld["type"]])
            check_frame(os.path.basename(pq_path), pdf, fields, problems)
            if not problems and not df.equals(pdf):
                problems.append(f"{res['path']}: the Parquet file holds other values than the CSV")
        checked += len(fields)
        print(f"{res['path']}: {len(df)} rows, {len(fields)} columns{note}")
    if problems:
        fail("pandas %s loads columns with the wrong types:\n  " % pd.__version__ + "\n  ".join(problems))
    pq = (f"and the Parquet files ({engine})" if engine else
          "(Parquet not read: pandas needs pyarrow or fastparquet, which are not installed; DuckDB checks it)")
    print(f"check_export_types: {checked} columns of {len(pkg['resources'])} CSV files load with the schema's types "
          f"in pandas {pd.__version__} {pq}")


if __name__ == "__main__":
    main()
