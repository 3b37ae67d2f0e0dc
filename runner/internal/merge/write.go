package merge

import (
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
	"github.com/onelayerdown/runner/runner/internal/results"
)

// writeMerged writes the merged folder of the shards at out: the rows of the complete shards
// merged, the manifest recording all the shards given and the configs missing.
func writeMerged(out string, shards []*shard, cov coverage) (*Report, error) {
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
	rows, err := readRows(merged, configs)
	if err != nil {
		return nil, err
	}
	var man *results.Manifest
	var logNotes []string
	err = writeNew(out, func(tmp string) error {
		servers, notes, err := copyLogs(tmp, merged)
		if err != nil {
			return err
		}
		logNotes = notes
		servers = planOrderServers(servers, configs)
		man = mergedManifest(shards, merged, ref, configs, servers, cov)
		if err := copyDiscarded(tmp, merged); err != nil {
			return err
		}
		return results.WriteFolder(tmp, man, rows)
	})
	if err != nil {
		return nil, err
	}
	rep := &Report{Dir: out, Status: man.Status, Shards: len(merged), Configs: len(configs), Requests: len(rows.Requests),
		Notes: append(mergeNotes(merged), logNotes...)}
	if cov.unlisted != "" {
		rep.Notes = append(rep.Notes, "the configs of the missing shards are not listed: "+cov.unlisted)
	}
	if man.Merged != nil {
		rep.Missing = man.Merged.Missing
	}
	return rep, nil
}

// readRows reads the rows of the shards merged, whose configs are configs in plan order, and
// puts them in the order of a run of the whole plan.
func readRows(merged []*shard, configs []experiment.Config) (results.FolderRows, error) {
	var rows results.FolderRows
	pos := map[string]int{}
	for i, c := range configs {
		pos[c.ID] = i
	}
	for _, s := range merged {
		rs, err := s.r.Requests()
		if err != nil {
			return rows, fmt.Errorf("%s: %w", s.dir, err)
		}
		for _, r := range rs {
			if _, ok := pos[r.ConfigID]; !ok {
				return rows, fmt.Errorf("%s: request %s is of config %s, which its manifest lacks",
					s.dir, results.RequestID(r.ConfigID, r.Seq), r.ConfigID)
			}
		}
		rows.Requests = append(rows.Requests, rs...)
		if has(s.dir, results.TelemetryFile) {
			rows.WithTelemetry = true
			tel, err := s.r.Telemetry()
			if err != nil {
				return rows, fmt.Errorf("%s: %w", s.dir, err)
			}
			rows.Telemetry = append(rows.Telemetry, tel...)
		}
		if has(s.dir, results.LoadServerFile) {
			rows.WithLoadServer = true
			ls, err := s.r.LoadServer()
			if err != nil {
				return rows, fmt.Errorf("%s: %w", s.dir, err)
			}
			rows.LoadServer = append(rows.LoadServer, ls...)
		}
	}
	slices.SortStableFunc(rows.Requests, func(a, b record.Request) int {
		return cmp.Or(cmp.Compare(pos[a.ConfigID], pos[b.ConfigID]), cmp.Compare(a.Seq, b.Seq))
	})
	// The server's figures per load point, in plan order: a single run writes them as its load
	// points end, which within one server is plan order too.
	slices.SortStableFunc(rows.LoadServer, func(a, b results.LoadServerRow) int {
		return cmp.Compare(pos[a.ConfigID], pos[b.ConfigID])
	})
	return rows, nil
}

// has reports whether the folder dir holds the file name.
func has(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

// writeNew makes the folder out with fill: fill writes into a new folder beside out under a
// temporary name, which is then renamed to out, so that a merge that fails leaves nothing at
// out.
func writeNew(out string, fill func(tmp string) error) error {
	parent := filepath.Dir(out)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return err
	}
	tmp, err := os.MkdirTemp(parent, "."+filepath.Base(out)+".merge-")
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			os.RemoveAll(tmp)
		}
	}()
	if err := os.Chmod(tmp, 0o755); err != nil {
		return err
	}
	if err := fill(tmp); err != nil {
		return err
	}
	syncDir(tmp)
	// An existing empty folder at out may take the merge (checkMergeOut refused any other);
	// Rename does not replace a folder, so it goes first. Remove fails if it is no longer
	// empty, and a folder made at out after it is refused by Rename.
	if st, err := os.Lstat(out); err == nil && st.IsDir() {
		if err := os.Remove(out); err != nil {
			return fmt.Errorf("%s %w: %v", out, ErrBadOut, err)
		}
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	done = true
	syncDir(parent)
	return nil
}

// syncDir makes a rename in dir durable where the platform allows it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// mergedManifest builds the manifest of the merged folder.
func mergedManifest(shards, merged []*shard, ref *shard, configs []experiment.Config, servers []results.ServerInfo,
	cov coverage) *results.Manifest {
	m := &results.Manifest{
		SchemaVersion: results.FormatVersion,
		Status:        results.StatusComplete,
		Runner:        ref.man.Runner,
		Experiment:    ref.man.Experiment,
		Configs:       configs,
		Servers:       servers,
		Machine:       ref.man.Machine,
		Merged: &results.Merged{Fingerprint: ref.man.Shard.Fingerprint, Count: ref.man.Shard.Count,
			Shards: make([]results.MergedShard, 0, len(shards))},
	}
	if m.Configs == nil {
		m.Configs = []experiment.Config{}
	}
	if len(cov.missing) > 0 || cov.unlisted != "" {
		m.Status = results.StatusIncomplete
		for _, c := range cov.missing {
			m.Merged.Missing = append(m.Merged.Missing, c.id)
		}
	}
	for _, s := range shards {
		m.Merged.Shards = append(m.Merged.Shards, results.MergedShard{Index: s.index(), Folder: s.dir, Host: s.host,
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
func planOrderServers(servers []results.ServerInfo, configs []experiment.Config) []results.ServerInfo {
	first := map[string]int{}
	for i, c := range configs {
		if _, ok := first[c.ServerID]; !ok {
			first[c.ServerID] = i
		}
	}
	key := func(s results.ServerInfo) int {
		if p, ok := first[s.ServerID]; ok {
			return p
		}
		return len(configs)
	}
	slices.SortStableFunc(servers, func(a, b results.ServerInfo) int { return cmp.Compare(key(a), key(b)) })
	return servers
}

// copyLogs copies each shard's logs/ into dir/logs/ and returns the shards' boots, each with
// its shard and host and with its log_file naming the copy. A log whose name an earlier shard's
// took is copied to logs/shard-<index>/ instead. A log that is a symbolic link is copied from
// its target when that is a regular file inside the shard folder; any other log that is not a
// regular file is left out, and a boot whose log the merged folder does not hold names none,
// each said in a note: log_file never names a file the merged folder lacks.
func copyLogs(dir string, shards []*shard) ([]results.ServerInfo, []string, error) {
	logs := filepath.Join(dir, results.LogsDir)
	if err := os.Mkdir(logs, 0o755); err != nil {
		return nil, nil, err
	}
	taken := map[string]bool{}
	var servers []results.ServerInfo
	var notes []string
	for _, s := range shards {
		renamed := map[string]string{} // a log's path in the shard → its path in the merged folder
		src := filepath.Join(s.dir, results.LogsDir)
		err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				if path == src && errors.Is(err, fs.ErrNotExist) {
					return fs.SkipDir // a folder without logs/
				}
				return err
			}
			if d.IsDir() {
				return nil
			}
			rel, err := filepath.Rel(src, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if why := logProblem(s.dir, path, d); why != "" {
				notes = append(notes, fmt.Sprintf("%s: %s/%s is left out of the merged folder: %s", s.name(), results.LogsDir, rel, why))
				return nil
			}
			dst := rel
			if taken[dst] {
				dst = "shard-" + strconv.Itoa(s.index()) + "/" + rel
			}
			taken[dst] = true
			renamed[results.LogsDir+"/"+rel] = results.LogsDir + "/" + dst
			return copyFile(path, filepath.Join(logs, filepath.FromSlash(dst)))
		})
		if err != nil {
			return nil, nil, fmt.Errorf("copy the logs of %s: %w", s.dir, err)
		}
		for _, info := range s.man.Servers {
			info.Shard = record.Int(s.index())
			info.Host = s.host
			if p, ok := renamed[info.LogFile]; ok {
				info.LogFile = p
			} else if info.LogFile != "" {
				notes = append(notes, fmt.Sprintf("%s: server %s's log %s is not in the merged folder, so servers.csv names no log for it",
					s.name(), info.ServerID, info.LogFile))
				info.LogFile = ""
			}
			servers = append(servers, info)
		}
	}
	return servers, notes, nil
}

// logProblem says why the log at path, an entry d of the shard folder shard's logs/, cannot be
// copied, or returns "" when it can: a regular file, or a symbolic link to a regular file
// inside the shard folder. A link out of the folder could copy any file of the machine into
// the merged one.
func logProblem(shard, path string, d fs.DirEntry) string {
	if d.Type().IsRegular() {
		return ""
	}
	if d.Type()&fs.ModeSymlink == 0 {
		return "it is not a regular file"
	}
	target, err := filepath.EvalSymlinks(path)
	if err != nil {
		return fmt.Sprintf("a symbolic link that does not resolve (%v)", err)
	}
	root, err := filepath.EvalSymlinks(shard)
	if err != nil {
		return err.Error()
	}
	if rel, err := filepath.Rel(root, target); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "a symbolic link to " + target + ", outside the shard folder"
	}
	if st, err := os.Stat(target); err != nil || !st.Mode().IsRegular() {
		return "a symbolic link to " + target + ", which is not a regular file"
	}
	return ""
}

// copyDiscarded copies each shard's discarded/ to dir/discarded/shard-<index>/.
func copyDiscarded(dir string, shards []*shard) error {
	for _, s := range shards {
		src := filepath.Join(s.dir, results.DiscardedDir)
		if _, err := os.Stat(src); errors.Is(err, fs.ErrNotExist) {
			continue
		}
		dst := filepath.Join(dir, results.DiscardedDir, "shard-"+strconv.Itoa(s.index()))
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
			return fmt.Errorf("copy %s of %s: %w", results.DiscardedDir, s.dir, err)
		}
	}
	return nil
}

// copyFile copies the regular file src to dst, creating dst's folder.
func copyFile(src, dst string) error {
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	in, err := results.OpenRegular(src)
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

// mergeNotes says what a reader of the merged folder should know about its shards: that they
// ran on different kinds of machine, or with different runner builds.
func mergeNotes(shards []*shard) []string {
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
func machineKind(m results.Machine) string {
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
