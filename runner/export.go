package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	"github.com/onelayerdown/runner/runner/internal/export"
	"github.com/onelayerdown/runner/runner/internal/results"
)

const exportDescription = `
Write each CSV file of a result folder as a Parquet file with explicit column types, the types
of the tables that write the CSV files (the folder's datapackage.json lists them): integers as
INT64, decimals as DOUBLE, booleans as BOOLEAN, timestamps as TIMESTAMP(NANOS, UTC), text as
STRING holding the cell's text as in the CSV. A column that can be empty is optional and an
empty cell is null, so a column that is empty in every row (tokens_from_ids on an engine that
never reports token ids) is still an integer column.

The files go to RESULT_DIR/parquet/ unless -o names another folder: requests.csv becomes
requests.parquet, and so on. The CSV files are never changed; an earlier export's files of the
same names are replaced. An interrupted folder exports what it holds: its torn last line and
its missing summary.csv are skipped, with a note.`

// cmdExport converts a result folder's CSV files to another format.
func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	const synopsis = "runner export parquet RESULT_DIR [-o OUT_DIR]"
	fs := newFlagSet("export", synopsis, exportDescription, stderr)
	out := fs.String("o", "", "the folder to write the Parquet files to (default RESULT_DIR/"+export.ParquetDir+")")
	operands, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if len(operands) != 2 || operands[0] != "parquet" {
		return usageError("export: want a format and one result folder (usage: %s)", synopsis)
	}
	dir := operands[1]
	if _, err := results.Open(dir); err != nil {
		return &exitError{code: 2, err: fmt.Errorf("export: %w", err)}
	}
	if *out == "" {
		*out = filepath.Join(dir, export.ParquetDir)
	}
	rep, err := export.Parquet(dir, *out)
	if err != nil {
		return &exitError{code: 1, err: fmt.Errorf("export: %w", err)}
	}
	for _, n := range rep.Notes {
		warnf(stderr, "export: %s: %s", dir, n)
	}
	for _, f := range rep.Files {
		if _, err := fmt.Fprintf(stdout, "%s: %d rows, %d columns\n", f.Path, f.Rows, f.Columns); err != nil {
			return err
		}
	}
	return nil
}
