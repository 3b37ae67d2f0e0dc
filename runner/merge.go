package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/merge"
	"github.com/onelayerdown/runner/runner/internal/results"
)

const mergeSynopsis = "runner merge -o OUT SHARD_DIR... [--partial]"

const mergeDescription = `
Put the result folders of a sharded run (runner FILE --shard I/N, one folder per shard) back
together into one new result folder, OUT, that runner summary, diff and report read as a run of
the whole plan on one machine: every config and request exactly once, in plan order, the summary
and load points computed again from the merged rows, and servers.csv saying on which shard and
host each server ran. The shard folders are only read, and merging the same folders again gives
the same bytes.

The merge refuses folders that are not shards, shards of different experiment files or plans,
a shard given twice and a shard still running. A shard that no folder given holds, or one that
failed or was interrupted, is named with its configs, and the merge refused, unless --partial is
given: then OUT holds the complete shards, its status is incomplete, and its manifest lists the
missing configs. OUT must not exist, or be an empty folder outside the shard folders.

Exit status: 0 merged (with --partial, also when OUT is incomplete), 1 the shard folders cannot
be merged, 2 a usage error or an OUT that cannot be used.`

// cmdMerge merges the result folders of a sharded run into one.
func cmdMerge(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("merge", mergeSynopsis, mergeDescription, stderr)
	out := fs.String("o", "", "the new result folder to write (required)")
	partial := fs.Bool("partial", false, "merge the complete shards when some are missing or did not complete; the folder says incomplete")
	dirs, helped, err := flagsAndFiles(fs, args)
	if helped || err != nil {
		return err
	}
	if *out == "" {
		return usageError("-o OUT is required (usage: %s)", mergeSynopsis)
	}
	if len(dirs) == 0 {
		return usageError("want the shard folders to merge (usage: %s)", mergeSynopsis)
	}
	rep, err := merge.Folders(*out, dirs, merge.Options{Partial: *partial})
	var bad *merge.Error
	switch {
	case errors.Is(err, merge.ErrBadOut):
		return &exitError{code: 2, err: err}
	case errors.As(err, &bad):
		// Each problem is a line of its own, after the command's name.
		return &exitError{code: 1, err: errorLines(bad.Problems)}
	case err != nil:
		return &exitError{code: 1, err: err}
	}
	for _, n := range rep.Notes {
		warnf(stderr, "merge: %s", n)
	}
	if rep.Status == results.StatusIncomplete {
		missing := "unknown configs"
		if len(rep.Missing) > 0 {
			missing = strings.Join(rep.Missing, ", ")
		}
		warnf(stderr, "merge: %s is incomplete: it lacks %s", rep.Dir, missing)
	}
	_, err = fmt.Fprintf(stdout, "%s: %s, %d shards merged, %d configs, %d requests\n",
		rep.Dir, rep.Status, rep.Shards, rep.Configs, rep.Requests)
	return err
}
