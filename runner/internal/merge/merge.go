// Package merge puts the result folders of a sharded run (runner FILE --shard I/N, one folder
// per shard) back together into one result folder that reads as a run of the whole plan on one
// machine. It reads the shard folders and writes the merged one through package results, and
// re-expands the experiment copy of a manifest to name the configs of a shard that no folder
// holds.
package merge

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/results"
)

// Options are the choices of Folders.
type Options struct {
	// Partial merges what the complete shards hold when a shard is missing or did not
	// complete: the merged folder's status is then incomplete and its manifest lists the
	// configs it lacks. Without it such a set of shards is refused.
	Partial bool
}

// Report says what Folders wrote.
type Report struct {
	Dir      string
	Status   results.Status // complete, or incomplete for a partial merge that lacks configs
	Shards   int            // shard folders whose rows the merged folder holds
	Configs  int            // configs in the merged folder
	Requests int            // request rows in the merged folder
	// Missing lists the configs the merged folder lacks, as its manifest's
	// merged.missing_configs does; empty for a complete merge.
	Missing []string
	// Notes says what the merge noticed that a reader should know, one sentence each: shards
	// that ran on different kinds of machine or with different runner builds.
	Notes []string
}

// ErrBadOut is the error, wrapped, of a merge whose output folder cannot be used: it exists
// and is not empty (a merge writes a new folder and never overwrites one), or it lies inside a
// shard folder (a merge never changes one).
var ErrBadOut = errors.New("cannot hold the merged folder")

// Error reports why a set of shard folders cannot be merged: one problem per folder or
// missing shard, each naming the folder or the shard and what is wrong with it.
type Error struct {
	Problems []error
}

func (e *Error) Error() string { return errors.Join(e.Problems...).Error() }

// Unwrap returns the problems.
func (e *Error) Unwrap() []error { return e.Problems }

// shard is one shard folder given to Folders.
type shard struct {
	dir  string
	r    *results.Reader
	man  *results.Manifest
	host string
}

func (s *shard) index() int { return s.man.Shard.Index }
func (s *shard) name() string {
	return fmt.Sprintf("shard %d of %d", s.man.Shard.Index, s.man.Shard.Count)
}

// Folders writes a new result folder at out from the folders of the shards of one sharded run
// (runner FILE --shard I/N), which reads as one run of the whole plan would: every config and
// request exactly once, configs in plan order, the rows of requests.csv, events.csv,
// outputs.jsonl and errors.jsonl config by config in plan order and by seq within one,
// summary.csv and load.csv computed from the merged rows by Summarize and SummarizeLoad,
// servers.csv with each boot's shard and host, telemetry.csv concatenated in shard order
// where a shard has one, logs/ copied (a log whose name another shard's already took goes to
// logs/shard-<index>/), and each shard's discarded/ kept as discarded/shard-<index>/.
//
// The manifest records the shards in merged (fingerprint, count, each shard's index, folder,
// host, status and machine). Its experiment copy and runner are those of the lowest shard
// merged; its machine is that shard's too, without a hostname when the shards ran on more
// than one host; its start is the earliest start of the shards merged and its end the latest
// end. It records no command, process or resume: the shards' folders keep theirs. Nothing in
// the merged folder depends on when or where Folders runs, so merging the same folders twice
// gives the same bytes; the shard folders are only read.
//
// Folders refuses, with an *Error that names each folder and what is wrong, a folder that is
// not a shard's (or is a merged one), shards of different experiment files or plans, a shard
// given twice, and a shard still running. A shard index that no folder holds, or a shard that
// is not complete, is refused the same way with its configs listed, unless opt.Partial is set:
// then the complete shards are merged, into a folder whose status is incomplete, and the
// configs of the others are listed as missing. An out that exists and is not empty, or that
// lies inside a shard folder, is refused with an error wrapping ErrBadOut. The folder is written beside out under a temporary name
// and renamed into place, so a merge that fails leaves nothing at out.
func Folders(out string, dirs []string, opt Options) (*Report, error) {
	if len(dirs) == 0 {
		return nil, errors.New("no shard folders given")
	}
	if err := checkMergeOut(out, dirs); err != nil {
		return nil, err
	}
	shards, hard := readShards(dirs)
	var cov coverage
	if len(shards) > 0 {
		hard = append(hard, checkShardConfigs(shards)...)
		cov = checkCoverage(shards)
	}
	switch {
	case len(hard) > 0 && !opt.Partial:
		// A shard index that no folder holds is left out: it may be that of a folder refused
		// above.
		return nil, &Error{Problems: append(hard, cov.unfinished...)}
	case len(hard) > 0:
		return nil, &Error{Problems: hard}
	case !opt.Partial && (len(cov.unfinished) > 0 || cov.absent != nil):
		problems := cov.unfinished
		if cov.absent != nil {
			problems = append(problems, cov.absent)
		}
		return nil, &Error{Problems: problems}
	}
	return writeMerged(out, shards, cov)
}

// checkMergeOut refuses an out that exists and is not an empty folder, and one inside a shard
// folder, which the merge would change.
func checkMergeOut(out string, dirs []string) error {
	st, err := os.Stat(out)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("%s %w: it is a file", out, ErrBadOut)
	case err == nil:
		entries, err := os.ReadDir(out)
		if err != nil {
			return err
		}
		if len(entries) > 0 {
			return fmt.Errorf("%s %w: it exists and is not empty, and a merge writes a new folder", out, ErrBadOut)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return err
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		absDir, err := filepath.Abs(d)
		if err != nil {
			return err
		}
		if rel, err := filepath.Rel(absDir, absOut); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("%s %w: it is inside the shard folder %s, which a merge never changes", out, ErrBadOut, d)
		}
	}
	return nil
}

// readShards opens every folder and checks that each is a finished or stopped shard of the
// same plan, given once. It returns the shards that passed, in index order, and the problems
// of the others.
func readShards(dirs []string) ([]*shard, []error) {
	var problems []error
	var shards []*shard
	byIndex := map[int]*shard{}
	for _, dir := range dirs {
		r, err := results.Open(dir)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		m := r.Manifest()
		s := &shard{dir: dir, r: r, man: m}
		switch {
		case m.Merged != nil:
			problems = append(problems, fmt.Errorf("%s: a merged folder, not a shard folder: merge the shard folders it was made from", dir))
			continue
		case m.Shard == nil:
			problems = append(problems, fmt.Errorf("%s: not a shard folder: its manifest has no shard (the run was not started with --shard)", dir))
			continue
		case m.Shard.Count < 1 || m.Shard.Index < 0 || m.Shard.Index >= m.Shard.Count:
			problems = append(problems, fmt.Errorf("%s: shard index %d of %d is out of range", dir, m.Shard.Index, m.Shard.Count))
			continue
		case r.Status() == results.StatusRunning:
			problems = append(problems, fmt.Errorf("%s: %s is still running (pid %d on %s): merge it once it has finished",
				dir, s.name(), m.Process.PID, cmp.Or(m.Process.Host, "this host")))
			continue
		}
		s.host = cmp.Or(m.Shard.Host, m.Machine.Hostname, m.Process.Host)
		if len(shards) > 0 {
			ref := shards[0]
			rm := ref.man
			switch {
			case m.Experiment.SHA256 != rm.Experiment.SHA256:
				problems = append(problems, fmt.Errorf("%s: a shard of another experiment file (%s, sha256 %s; %s is of %s, sha256 %s)",
					dir, m.Experiment.Name, short(m.Experiment.SHA256), ref.dir, rm.Experiment.Name, short(rm.Experiment.SHA256)))
				continue
			case m.Shard.Count != rm.Shard.Count:
				problems = append(problems, fmt.Errorf("%s: %s, but %s is a shard of %d: the folders split the experiment in different ways",
					dir, s.name(), ref.dir, rm.Shard.Count))
				continue
			case m.Shard.Fingerprint != rm.Shard.Fingerprint:
				problems = append(problems, fmt.Errorf("%s: plan fingerprint %s differs from %s's %s: the folders split different plans",
					dir, short(m.Shard.Fingerprint), ref.dir, short(rm.Shard.Fingerprint)))
				continue
			}
		}
		if other := byIndex[m.Shard.Index]; other != nil {
			problems = append(problems, fmt.Errorf("%s: %s is given twice (also %s)", dir, s.name(), other.dir))
			continue
		}
		byIndex[m.Shard.Index] = s
		shards = append(shards, s)
	}
	slices.SortStableFunc(shards, func(a, b *shard) int { return cmp.Compare(a.index(), b.index()) })
	return shards, problems
}

// checkShardConfigs refuses a shard that holds configs an earlier shard holds too, by id or
// by plan position: one problem per pair of shards.
func checkShardConfigs(shards []*shard) []error {
	var problems []error
	byID, byIndex := map[string]*shard{}, map[int]*shard{}
	for _, s := range shards {
		var others []*shard
		shared := map[*shard][]string{}
		for _, c := range s.man.Configs {
			o := cmp.Or(byID[c.ID], byIndex[c.Index])
			if o == nil {
				byID[c.ID], byIndex[c.Index] = s, s
				continue
			}
			if shared[o] == nil {
				others = append(others, o)
			}
			shared[o] = append(shared[o], c.ID)
		}
		for _, o := range others {
			problems = append(problems, fmt.Errorf("%s: %s holds configs that %s (%s) holds too: %s; each config belongs to one shard",
				s.dir, s.name(), o.name(), o.dir, strings.Join(shared[o], ", ")))
		}
	}
	return problems
}

// short shortens a digest for a message, as the results package does.
func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}
