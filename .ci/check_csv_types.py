#!/usr/bin/env python3
"""Load a result folder with pandas and check that every column gets the type the format says.

Usage: check_csv_types.py ROOT

ROOT holds columns.json (written by the results package's TestSyntheticFolder with -synth ROOT):
the folder to check, relative to ROOT, and for each CSV file its columns in order with their
kind (int, float, bool, string, timestamp). The files are read with pandas' default inference,
as an analyst would read them, and each column must come out as its kind says:

  int        int64, or float64 when the column has missing cells and every value is whole
  float      float64
  bool       bool, or object holding only True and False when the column has missing cells
  string     object
  timestamp  object that pandas.to_datetime(utc=True) parses completely, to the nanosecond

It also checks the naming rules: *_ms columns are floats, *_time columns timestamps, every file
has schema_version 1 in every row, and the JSON Lines files load with their fields.
"""

import json
import os
import re
import sys

import pandas as pd

TIMESTAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$")


def fail(msg):
    print("check_csv_types: " + msg, file=sys.stderr)
    sys.exit(1)


def check_column(name, kind, col, problems):
    present = col.dropna()
    if present.empty:
        problems.append(f"{name}: no value in any row, so its type cannot be checked")
        return
    dtype = str(col.dtype)
    if kind == "int":
        if dtype == "int64":
            return
        if dtype == "float64" and col.isna().any() and (present == present.round()).all():
            return
        problems.append(f"{name}: int column loaded as {dtype}")
    elif kind == "float":
        if dtype != "float64":
            problems.append(f"{name}: float column loaded as {dtype}")
    elif kind == "bool":
        if dtype == "bool":
            return
        # An optional bool (empty where unknown) loads as object holding True, False and NaN:
        # pandas has no nullable bool by default inference, as it has no nullable int.
        if dtype == "object" and col.isna().any() and present.map(lambda v: isinstance(v, bool)).all():
            return
        problems.append(f"{name}: bool column loaded as {dtype}")
    elif kind == "string":
        if dtype != "object":
            problems.append(f"{name}: string column loaded as {dtype}")
    elif kind == "timestamp":
        if dtype != "object":
            problems.append(f"{name}: timestamp column loaded as {dtype} before parsing")
            return
        parsed = pd.to_datetime(present, utc=True, errors="coerce")
        if str(parsed.dtype) != "datetime64[ns, UTC]" or parsed.isna().any():
            problems.append(f"{name}: timestamps do not all parse as UTC datetimes")
            return
        for text, ts in zip(present, parsed):
            if not TIMESTAMP.match(text):
                problems.append(f"{name}: {text} is not RFC 3339 UTC with nine fractional digits")
                return
            if int(text[-10:-1]) != ts.microsecond * 1000 + ts.nanosecond:
                problems.append(f"{name}: {text} loses its nanoseconds ({ts})")
                return
    else:
        problems.append(f"{name}: unknown kind {kind}")


def main():
    if len(sys.argv) != 2:
        fail("usage: check_csv_types.py ROOT (the directory holding columns.json)")
    root = sys.argv[1]
    with open(os.path.join(root, "columns.json")) as f:
        spec = json.load(f)
    folder = os.path.join(root, spec["folder"])
    problems = []
    checked = 0
    for file, columns in sorted(spec["files"].items()):
        df = pd.read_csv(os.path.join(folder, file))
        names = [c["Name"] for c in columns]
        if list(df.columns) != names:
            problems.append(f"{file}: header {list(df.columns)} is not {names}")
            continue
        if not (df["schema_version"] == 1).all():
            problems.append(f"{file}: schema_version is not 1 in every row")
        for c in columns:
            name, kind = c["Name"], c["Kind"]
            if name.endswith("_ms") and kind != "float":
                problems.append(f"{file}: {name} ends in _ms but is declared {kind}")
            if name.endswith("_time") and kind != "timestamp":
                problems.append(f"{file}: {name} ends in _time but is declared {kind}")
            check_column(f"{file}: {name}", kind, df[name], problems)
            checked += 1
        print(f"{file}: {len(df)} rows, {len(columns)} columns")
    for file, fields in (("outputs.jsonl", ["schema_version", "request_id", "config_id", "seq", "text"]),
                         ("errors.jsonl", ["schema_version", "request_id", "config_id", "seq", "error_class", "error"])):
        df = pd.read_json(os.path.join(folder, file), lines=True)
        if list(df.columns) != fields:
            problems.append(f"{file}: fields {list(df.columns)} are not {fields}")
        elif str(df["seq"].dtype) != "int64" or not (df["schema_version"] == 1).all():
            problems.append(f"{file}: seq is {df['seq'].dtype}, or schema_version is not 1 throughout")
        print(f"{file}: {len(df)} rows")
    if problems:
        fail("pandas %s loads columns with the wrong types:\n  " % pd.__version__ + "\n  ".join(problems))
    print(f"check_csv_types: {checked} columns of {len(spec['files'])} CSV files load with their types (pandas {pd.__version__})")


if __name__ == "__main__":
    main()
