package results

import (
	"bufio"
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// MergeOptions are the choices of Merge.
type MergeOptions struct {
	// Partial merges what the complete shards hold when a shard is missing or did not
	// complete: the merged folder's status is then incomplete and its manifest lists the
	// configs it lacks. Without it such a set of shards is refused.
	Partial bool
}

// MergeReport says what Merge wrote.
type MergeReport struct {
	Dir      string
	Status   Status // complete, or incomplete for a partial merge that lacks configs
	Shards   int    // shard folders whose rows the merged folder holds
	Configs  int    // configs in the merged folder
	Requests int    // request rows in the merged folder
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

// MergeError reports why a set of shard folders cannot be merged: one problem per folder or
// missing shard, each naming the folder or the shard and what is wrong with it.
type MergeError struct {
	Problems []error
}

func (e *MergeError) Error() string { return errors.Join(e.Problems...).Error() }

// Unwrap returns the problems.
func (e *MergeError) Unwrap() []error { return e.Problems }

// mergeShard is one shard folder given to Merge.
type mergeShard struct {
	dir  string
	r    *Reader
	man  *Manifest
	host string
}

func (s *mergeShard) index() int { return s.man.Shard.Index }
func (s *mergeShard) name() string {
	return fmt.Sprintf("shard %d of %d", s.man.Shard.Index, s.man.Shard.Count)
}

// Merge writes a new result folder at out from the folders of the shards of one sharded run
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
// the merged folder depends on when or where Merge runs, so merging the same folders twice
// gives the same bytes; the shard folders are only read.
//
// Merge refuses, with a *MergeError that names each folder and what is wrong, a folder that is
// not a shard's (or is a merged one), shards of different experiment files or plans, a shard
// given twice, and a shard still running. A shard index that no folder holds, or a shard that
// is not complete, is refused the same way with its configs listed, unless opt.Partial is set:
// then the complete shards are merged, into a folder whose status is incomplete, and the
// configs of the others are listed as missing. An out that exists and is not empty, or that
// lies inside a shard folder, is refused with an error wrapping ErrBadOut. The folder is written beside out under a temporary name
// and renamed into place, so a merge that fails leaves nothing at out.
func Merge(out string, dirs []string, opt MergeOptions) (*MergeReport, error) {
	if len(dirs) == 0 {
		return nil, errors.New("results: merge: no shard folders given")
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
		return nil, &MergeError{Problems: append(hard, cov.unfinished...)}
	case len(hard) > 0:
		return nil, &MergeError{Problems: hard}
	case !opt.Partial && (len(cov.unfinished) > 0 || cov.absent != nil):
		problems := cov.unfinished
		if cov.absent != nil {
			problems = append(problems, cov.absent)
		}
		return nil, &MergeError{Problems: problems}
	}
	return writeMerged(out, shards, cov)
}

// checkMergeOut refuses an out that exists and is not an empty folder, and one inside a shard
// folder, which the merge would change.
func checkMergeOut(out string, dirs []string) error {
	st, err := os.Stat(out)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Errorf("results: merge: %s %w: it is a file", out, ErrBadOut)
	case err == nil:
		entries, err := os.ReadDir(out)
		if err != nil {
			return fmt.Errorf("results: merge: %w", err)
		}
		if len(entries) > 0 {
			return fmt.Errorf("results: merge: %s %w: it exists and is not empty, and a merge writes a new folder", out, ErrBadOut)
		}
	case !errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("results: merge: %w", err)
	}
	absOut, err := filepath.Abs(out)
	if err != nil {
		return fmt.Errorf("results: merge: %w", err)
	}
	for _, d := range dirs {
		absDir, err := filepath.Abs(d)
		if err != nil {
			return fmt.Errorf("results: merge: %w", err)
		}
		if rel, err := filepath.Rel(absDir, absOut); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return fmt.Errorf("results: merge: %s %w: it is inside the shard folder %s, which a merge never changes", out, ErrBadOut, d)
		}
	}
	return nil
}

// readShards opens every folder and checks that each is a finished or stopped shard of the
// same plan, given once. It returns the shards that passed, in index order, and the problems
// of the others.
func readShards(dirs []string) ([]*mergeShard, []error) {
	var problems []error
	var shards []*mergeShard
	byIndex := map[int]*mergeShard{}
	for _, dir := range dirs {
		r, err := Open(dir)
		if err != nil {
			problems = append(problems, err)
			continue
		}
		m := r.Manifest()
		s := &mergeShard{dir: dir, r: r, man: m}
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
		case r.Status() == StatusRunning:
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
	slices.SortStableFunc(shards, func(a, b *mergeShard) int { return cmp.Compare(a.index(), b.index()) })
	return shards, problems
}

// checkShardConfigs refuses a shard that holds configs an earlier shard holds too, by id or
// by plan position: one problem per pair of shards.
func checkShardConfigs(shards []*mergeShard) []error {
	var problems []error
	byID, byIndex := map[string]*mergeShard{}, map[int]*mergeShard{}
	for _, s := range shards {
		var others []*mergeShard
		shared := map[*mergeShard][]string{}
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

// missingConfig is a planned config that a merge lacks.
type missingConfig struct {
	index int
	id    string // the config's id; for one recomputed from a redacted copy, "#<index> <label>"
	label string
}

// coverage is what a set of shards holds of the plan.
type coverage struct {
	unfinished []error         // one problem per shard that did not complete
	absent     error           // the shard indexes that no folder holds; nil when there is none
	missing    []missingConfig // the configs of both, in plan order
	// unlisted says why the configs of the shard indexes that no folder holds are unknown;
	// empty when they are listed in missing.
	unlisted string
	complete []*mergeShard // the shards whose rows a merge takes
}

// checkCoverage finds the shards that did not complete and the shard indexes no folder holds,
// and the configs they leave out.
func checkCoverage(shards []*mergeShard) coverage {
	var cov coverage
	count := shards[0].man.Shard.Count
	given := map[int]bool{}
	known := map[int]bool{} // plan positions of the configs some folder holds
	for _, s := range shards {
		given[s.index()] = true
		for _, c := range s.man.Configs {
			known[c.Index] = true
		}
		if s.r.Status() != StatusComplete {
			var cs []missingConfig
			for _, c := range s.man.Configs {
				cs = append(cs, missingConfig{index: c.Index, id: c.ID, label: c.Label})
			}
			cov.unfinished = append(cov.unfinished, fmt.Errorf("%s: %s is %s, not complete; its configs: %s (finish it with --resume, or merge with --partial)",
				s.dir, s.name(), s.r.Status(), configList(cs)))
			cov.missing = append(cov.missing, cs...)
			continue
		}
		cov.complete = append(cov.complete, s)
	}
	var gaps []string
	for i := range count {
		if !given[i] {
			gaps = append(gaps, strconv.Itoa(i))
		}
	}
	if len(gaps) > 0 {
		cs, err := unplacedConfigs(shards[0].man, known)
		what := "shard " + gaps[0] + " of " + strconv.Itoa(count) + " is missing: no folder given holds it; its configs: "
		if len(gaps) > 1 {
			what = "shards " + strings.Join(gaps, ", ") + " of " + strconv.Itoa(count) + " are missing: no folder given holds them; their configs: "
		}
		if err != nil {
			cov.unlisted = err.Error()
			what += fmt.Sprintf("unknown (%v)", err)
		} else {
			what += configList(cs)
		}
		cov.absent = errors.New(what)
		cov.missing = append(cov.missing, cs...)
	}
	slices.SortStableFunc(cov.missing, func(a, b missingConfig) int { return cmp.Compare(a.index, b.index) })
	return cov
}

// unplacedConfigs expands the experiment copy of m and returns its configs whose plan position
// is not in known: the configs of the shards that no folder holds. The copy has its secrets
// redacted, and a secret is part of a config's id: where the copy had any, the ids cannot be
// recomputed, and each config is named "#<index> <label>" instead.
func unplacedConfigs(m *Manifest, known map[int]bool) ([]missingConfig, error) {
	path := cmp.Or(m.Experiment.Path, m.Experiment.Name+".yaml")
	exp, err := experiment.Parse(path, []byte(m.Experiment.Source))
	if err != nil {
		return nil, fmt.Errorf("the experiment copy in the manifest does not load: %w", err)
	}
	cfgs, err := exp.Expand()
	if err != nil {
		return nil, fmt.Errorf("the experiment copy in the manifest does not expand: %w", err)
	}
	var out []missingConfig
	for _, c := range cfgs {
		if known[c.Index] {
			continue
		}
		id := c.ID
		if len(m.Experiment.Redacted) > 0 {
			id = fmt.Sprintf("#%d %s", c.Index, c.Label)
		}
		out = append(out, missingConfig{index: c.Index, id: id, label: c.Label})
	}
	return out, nil
}

// configList names configs for a message: "id (label), ...", or "none".
func configList(cs []missingConfig) string {
	if len(cs) == 0 {
		return "none"
	}
	parts := make([]string, len(cs))
	for i, c := range cs {
		parts[i] = c.id
		if c.label != "" && !strings.HasSuffix(c.id, " "+c.label) {
			parts[i] += " (" + c.label + ")"
		}
	}
	return strings.Join(parts, ", ")
}

// writeMerged writes the merged folder of the shards at out: the rows of the complete shards
// merged, the manifest recording all the shards given and the configs missing.
func writeMerged(out string, shards []*mergeShard, cov coverage) (*MergeReport, error) {
	merged := cov.complete
	ref := shards[0]
	if len(merged) > 0 {
		ref = merged[0]
	}
	var configs []experiment.Config
	for _, s := range merged {
		configs = append(configs, s.man.Configs...)
	}
	slices.SortStableFunc(configs, func(a, b experiment.Config) int { return cmp.Compare(a.Index, b.Index) })
	pos := map[string]int{}
	for i, c := range configs {
		pos[c.ID] = i
	}

	var reqs []record.Request
	var samples []record.GPUSample
	var loadServer []LoadServerRow
	hasTel, hasLoadSrv := false, false
	for _, s := range merged {
		rs, err := s.r.Requests()
		if err != nil {
			return nil, fmt.Errorf("results: merge: %s: %w", s.dir, err)
		}
		for _, r := range rs {
			if _, ok := pos[r.ConfigID]; !ok {
				return nil, fmt.Errorf("results: merge: %s: request %s is of config %s, which its manifest lacks",
					s.dir, RequestID(r.ConfigID, r.Seq), r.ConfigID)
			}
		}
		reqs = append(reqs, rs...)
		if hasTelemetry(s.dir) {
			hasTel = true
			tel, err := s.r.Telemetry()
			if err != nil {
				return nil, fmt.Errorf("results: merge: %s: %w", s.dir, err)
			}
			samples = append(samples, tel...)
		}
		if hasLoadServer(s.dir) {
			hasLoadSrv = true
			rows, err := s.r.LoadServer()
			if err != nil {
				return nil, fmt.Errorf("results: merge: %s: %w", s.dir, err)
			}
			loadServer = append(loadServer, rows...)
		}
	}
	slices.SortStableFunc(reqs, func(a, b record.Request) int {
		return cmp.Or(cmp.Compare(pos[a.ConfigID], pos[b.ConfigID]), cmp.Compare(a.Seq, b.Seq))
	})
	// The server's figures per load point, in plan order: a single run writes them as its load
	// points end, which within one server is plan order too.
	slices.SortStableFunc(loadServer, func(a, b LoadServerRow) int { return cmp.Compare(pos[a.ConfigID], pos[b.ConfigID]) })

	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("results: merge: %w", err)
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".merge-")
	if err != nil {
		return nil, fmt.Errorf("results: merge: %w", err)
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("results: merge: %w", err)
	}

	servers, err := copyLogs(tmp, merged)
	if err != nil {
		return nil, fmt.Errorf("results: merge: %w", err)
	}
	servers = planOrderServers(servers, configs)
	man := mergedManifest(shards, merged, ref, configs, servers, cov)
	if err := copyDiscarded(tmp, merged); err != nil {
		return nil, fmt.Errorf("results: merge: %w", err)
	}
	if err := writeMergedFiles(tmp, man, reqs, samples, hasTel, loadServer, hasLoadSrv); err != nil {
		return nil, fmt.Errorf("results: merge: %w", err)
	}
	syncDir(tmp)
	if err := os.Rename(tmp, out); err != nil {
		return nil, fmt.Errorf("results: merge: %w", err)
	}
	done = true
	syncDir(parent)

	rep := &MergeReport{Dir: out, Status: man.Status, Shards: len(merged), Configs: len(configs), Requests: len(reqs),
		Notes: mergeNotes(merged)}
	if cov.unlisted != "" {
		rep.Notes = append(rep.Notes, "the configs of the missing shards are not listed: "+cov.unlisted)
	}
	if man.Merged != nil {
		rep.Missing = man.Merged.Missing
	}
	return rep, nil
}

// mergedManifest builds the manifest of the merged folder.
func mergedManifest(shards, merged []*mergeShard, ref *mergeShard, configs []experiment.Config, servers []ServerInfo,
	cov coverage) *Manifest {
	m := &Manifest{
		SchemaVersion: FormatVersion,
		Status:        StatusComplete,
		Runner:        ref.man.Runner,
		Experiment:    ref.man.Experiment,
		Configs:       configs,
		Servers:       servers,
		Machine:       ref.man.Machine,
		Merged: &Merged{Fingerprint: ref.man.Shard.Fingerprint, Count: ref.man.Shard.Count,
			Shards: make([]MergedShard, 0, len(shards))},
	}
	if m.Configs == nil {
		m.Configs = []experiment.Config{}
	}
	if len(cov.missing) > 0 || cov.unlisted != "" {
		m.Status = StatusIncomplete
		for _, c := range cov.missing {
			m.Merged.Missing = append(m.Merged.Missing, c.id)
		}
	}
	for _, s := range shards {
		m.Merged.Shards = append(m.Merged.Shards, MergedShard{Index: s.index(), Folder: s.dir, Host: s.host,
			Status: s.r.Status(), Machine: s.man.Machine})
	}
	span := merged
	if len(span) == 0 {
		span = shards
	}
	hosts := map[string]bool{}
	for _, s := range span {
		hosts[s.host] = true
		if m.Start.IsZero() || s.man.Start.Before(m.Start) {
			m.Start = s.man.Start
		}
		if e := s.man.End; e != nil && (m.End == nil || e.After(*m.End)) {
			end := *e
			m.End = &end
		}
		m.Discarded = append(m.Discarded, s.man.Discarded...)
	}
	if len(hosts) > 1 {
		// The manifest's machine is one shard's; a hostname would say the run had one host.
		m.Machine.Hostname = ""
	}
	return m
}

// planOrderServers orders the boots of the shards as a run of the whole plan makes them: by
// the plan position of the first config of each server, then as the shards listed them.
func planOrderServers(servers []ServerInfo, configs []experiment.Config) []ServerInfo {
	first := map[string]int{}
	for i, c := range configs {
		if _, ok := first[c.ServerID]; !ok {
			first[c.ServerID] = i
		}
	}
	key := func(s ServerInfo) int {
		if p, ok := first[s.ServerID]; ok {
			return p
		}
		return len(configs)
	}
	slices.SortStableFunc(servers, func(a, b ServerInfo) int { return cmp.Compare(key(a), key(b)) })
	return servers
}

// copyLogs copies each shard's logs/ into dir/logs/ and returns the shards' boots, each with
// its shard and host and with its log_file naming the copy. A log whose name an earlier shard's
// took is copied to logs/shard-<index>/ instead.
func copyLogs(dir string, shards []*mergeShard) ([]ServerInfo, error) {
	logs := filepath.Join(dir, LogsDir)
	if err := os.Mkdir(logs, 0o755); err != nil {
		return nil, err
	}
	taken := map[string]bool{}
	var servers []ServerInfo
	for _, s := range shards {
		renamed := map[string]string{} // a log's path in the shard → its path in the merged folder
		src := filepath.Join(s.dir, LogsDir)
		err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == src && errors.Is(err, fs.ErrNotExist) {
					return fs.SkipDir // a folder without logs/
				}
				return err
			}
			if !d.Type().IsRegular() {
				return nil
			}
			rel, err := filepath.Rel(src, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			dst := rel
			if taken[dst] {
				dst = "shard-" + strconv.Itoa(s.index()) + "/" + rel
			}
			taken[dst] = true
			renamed[LogsDir+"/"+rel] = LogsDir + "/" + dst
			return copyFile(path, filepath.Join(logs, filepath.FromSlash(dst)))
		})
		if err != nil {
			return nil, fmt.Errorf("copy the logs of %s: %w", s.dir, err)
		}
		for _, info := range s.man.Servers {
			info.Shard = record.Int(s.index())
			info.Host = s.host
			if p, ok := renamed[info.LogFile]; ok {
				info.LogFile = p
			}
			servers = append(servers, info)
		}
	}
	return servers, nil
}

// copyDiscarded copies each shard's discarded/ to dir/discarded/shard-<index>/.
func copyDiscarded(dir string, shards []*mergeShard) error {
	for _, s := range shards {
		src := filepath.Join(s.dir, DiscardedDir)
		if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		dst := filepath.Join(dir, DiscardedDir, "shard-"+strconv.Itoa(s.index()))
		err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			rel, err := filepath.Rel(src, path)
			if err != nil {
				return err
			}
			return copyFile(path, filepath.Join(dst, rel))
		})
		if err != nil {
			return fmt.Errorf("copy %s of %s: %w", DiscardedDir, s.dir, err)
		}
	}
	return nil
}

// copyFile copies the regular file src to dst, creating dst's folder.
func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, in)
	if err == nil {
		err = out.Sync()
	}
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeMergedFiles writes the merged folder's files into dir: the row files from reqs in their
// order, configs.csv, servers.csv, summary.csv and load.csv (with the server figures of
// loadServer), load_server.csv when hasLoadServer, telemetry.csv when hasTel,
// datapackage.json and the manifest.
func writeMergedFiles(dir string, man *Manifest, reqs []record.Request, samples []record.GPUSample, hasTel bool, loadServer []LoadServerRow, hasLoadServer bool) error {
	files := map[string]*bufio.Writer{}
	var opened []*os.File
	defer func() {
		for _, f := range opened {
			f.Close()
		}
	}()
	for _, o := range []struct {
		name   string
		header []string
	}{{RequestsFile, RequestsCSV.header()}, {EventsFile, EventsCSV.header()}, {OutputsFile, nil}, {ErrorsFile, nil}} {
		f, err := os.OpenFile(filepath.Join(dir, o.name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		opened = append(opened, f)
		w := bufio.NewWriterSize(f, 1<<16)
		if o.header != nil {
			w.Write(encodeCSV(o.header))
		}
		files[o.name] = w
	}
	for i := range reqs {
		lines, err := requestLines(&reqs[i], reqs[i].Error)
		if err != nil {
			return fmt.Errorf("%s: %w", RequestID(reqs[i].ConfigID, reqs[i].Seq), err)
		}
		files[EventsFile].Write(lines.events)
		files[OutputsFile].Write(lines.output)
		files[ErrorsFile].Write(lines.err)
		files[RequestsFile].Write(lines.request)
	}
	for i, f := range opened {
		name := f.Name()
		err := files[filepath.Base(name)].Flush()
		if err == nil {
			err = f.Sync()
		}
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		opened[i] = nil
		if err != nil {
			return fmt.Errorf("write %s: %w", filepath.Base(name), err)
		}
	}
	opened = nil

	var buf bytes.Buffer
	if err := ConfigsCSV.Write(&buf, ConfigRows(man.Configs)); err != nil {
		return err
	}
	if err := writeAtomic(dir, ConfigsFile, buf.Bytes()); err != nil {
		return err
	}
	if err := writeAtomic(dir, ServersFile, serversCSV(man.Servers)); err != nil {
		return err
	}
	buf.Reset()
	if err := SummaryCSV.Write(&buf, Summarize(man.Configs, reqs)); err != nil {
		return err
	}
	if err := writeAtomic(dir, SummaryFile, buf.Bytes()); err != nil {
		return err
	}
	load := SummarizeLoad(man.Configs, reqs)
	JoinLoadServer(load, loadServer)
	if err := writeAtomic(dir, LoadFile, loadCSV(load, hasLoadServer)); err != nil {
		return err
	}
	if hasLoadServer {
		buf.Reset()
		if err := writeAll(&buf, LoadServerCSV, loadServer); err != nil {
			return err
		}
		if err := writeAtomic(dir, LoadServerFile, buf.Bytes()); err != nil {
			return err
		}
	}
	if hasTel {
		buf.Reset()
		if err := writeAll(&buf, TelemetryCSV, samples); err != nil {
			return err
		}
		if err := writeAtomic(dir, TelemetryFile, buf.Bytes()); err != nil {
			return err
		}
	}
	buf.Reset()
	if err := EncodeSchema(&buf, man.Experiment.Name, folderSchema(dir, man.Configs)); err != nil {
		return err
	}
	if err := writeAtomic(dir, SchemaFile, buf.Bytes()); err != nil {
		return err
	}
	return writeManifest(dir, man)
}

// mergeNotes says what a reader of the merged folder should know about its shards: that they
// ran on different kinds of machine, or with different runner builds.
func mergeNotes(shards []*mergeShard) []string {
	var notes []string
	kinds, builds := map[string]bool{}, map[string]bool{}
	var kindList, buildList []string
	for _, s := range shards {
		k := machineKind(s.man.Machine)
		if !kinds[k] {
			kinds[k] = true
		}
		kindList = append(kindList, fmt.Sprintf("%s: %s", s.name(), k))
		b := cmp.Or(s.man.Runner.Version, "unknown")
		if s.man.Runner.Commit != "" {
			b += " (" + short(s.man.Runner.Commit) + ")"
		}
		if s.man.Runner.Schedule != "" {
			b += ", schedule " + s.man.Runner.Schedule
		}
		builds[b] = true
		buildList = append(buildList, fmt.Sprintf("%s: %s", s.name(), b))
	}
	if len(kinds) > 1 {
		notes = append(notes, "the shards ran on different kinds of machine, so their latencies are not comparable one to one ("+
			strings.Join(kindList, "; ")+"); the manifest's machine is "+shards[0].name()+"'s, and merged.shards keeps each")
	}
	if len(builds) > 1 {
		notes = append(notes, "the shards ran with different runner builds ("+strings.Join(buildList, "; ")+
			"); the manifest's runner is "+shards[0].name()+"'s")
	}
	return notes
}

// machineKind describes what of a machine bears on latency: its architecture, CPU and GPUs
// with their drivers, and not its name or its GPUs' serial numbers.
func machineKind(m Machine) string {
	var gpus []string
	for _, g := range m.GPUs {
		gpus = append(gpus, fmt.Sprintf("%s %d MiB driver %s", g.Name, g.MemoryMiB, g.Driver))
	}
	gpu := "no GPU"
	if len(gpus) > 0 {
		gpu = strings.Join(gpus, ", ")
	}
	return fmt.Sprintf("%s, %s × %d, %s", m.Arch, cmp.Or(m.CPU, "unknown CPU"), m.CPUs, gpu)
}
