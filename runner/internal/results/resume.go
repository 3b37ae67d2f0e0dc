package results

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// Resume reopens a folder that a run left unfinished (interrupted, failed, or running with its
// writer gone) so that the run can finish it, and returns the requests it already holds.
// Before appending it repairs the files: it truncates a torn last line, drops the rows of
// requests that were cut off (events, texts or errors without a requests.csv row) and drops
// request rows that ended in ErrorClass canceled (the run was stopped mid-request), which the
// resumed run sends again. It refuses a complete folder and one whose writer still runs.
func Resume(dir string) (*Folder, Done, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, Done{}, fmt.Errorf("resume: %w", err)
	}
	if m.Merged != nil {
		return nil, Done{}, fmt.Errorf("resume %s: a merged folder: resume the shard that did not complete, then merge the shards again", dir)
	}
	if m.Status == StatusComplete {
		return nil, Done{}, fmt.Errorf("resume %s: the folder is complete; there is nothing to resume", dir)
	}
	lock, err := acquireLock(dir)
	if err != nil {
		if errors.Is(err, errLocked) {
			err = fmt.Errorf("%w (pid %d on %s)", err, m.Process.PID, m.Process.Host)
		}
		return nil, Done{}, fmt.Errorf("resume %s: %w", dir, err)
	}
	f := &Folder{dir: dir, man: *m, lock: lock, done: newDone(), logs: map[string]string{}, configs: map[string]bool{}}
	for _, c := range m.Configs {
		f.configs[c.ID] = true
	}
	if err := f.repair(); err != nil {
		f.abandon()
		return nil, Done{}, fmt.Errorf("resume %s: %w", dir, err)
	}
	now := time.Now().UTC()
	host, _ := os.Hostname()
	f.man.Status = StatusRunning
	f.man.End = nil
	f.man.Resumes = append(f.man.Resumes, now)
	f.man.Process = Process{PID: os.Getpid(), Host: host}
	f.resume = len(f.man.Resumes)
	if err := writeAtomic(dir, ServersFile, serversCSV(f.man.Servers)); err != nil {
		f.abandon()
		return nil, Done{}, fmt.Errorf("resume %s: %w", dir, err)
	}
	if err := writeManifest(dir, &f.man); err != nil {
		f.abandon()
		return nil, Done{}, fmt.Errorf("resume %s: %w", dir, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, LogsDir), 0o755); err != nil {
		f.abandon()
		return nil, Done{}, fmt.Errorf("resume %s: %w", dir, err)
	}
	for _, o := range []struct {
		file **os.File
		name string
	}{{&f.requests, RequestsFile}, {&f.events, EventsFile}, {&f.outputs, OutputsFile}, {&f.errs, ErrorsFile}} {
		*o.file, err = os.OpenFile(filepath.Join(dir, o.name), os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			f.abandon()
			return nil, Done{}, fmt.Errorf("resume %s: %w", dir, err)
		}
	}
	return f, f.done.clone(), nil
}

// repair rewrites the row files so that they hold only complete requests, and loads the
// requests into the folder.
func (f *Folder) repair() error {
	keep := map[string]bool{}
	err := filterFile(f.dir, RequestsFile, RequestsCSV.header(), RequestsCSV.NewScanner, func(r record.Request) bool {
		if r.ErrorClass == record.ErrCanceled {
			return false
		}
		id := RequestID(r.ConfigID, r.Seq)
		if keep[id] {
			return false // a duplicate cannot come from this writer; keep the first
		}
		keep[id] = true
		f.done.add(r.ConfigID, r.Seq)
		f.rows = append(f.rows, r)
		return true
	})
	if err != nil {
		return err
	}
	if err := f.upgradeRequests(); err != nil {
		return err
	}
	if err := filterFile(f.dir, EventsFile, EventsCSV.header(), EventsCSV.NewScanner, func(e EventRow) bool {
		return keep[e.RequestID]
	}); err != nil {
		return err
	}
	if err := filterFile(f.dir, OutputsFile, nil, OutputsJSONL.NewScanner, func(o OutputRow) bool {
		return keep[o.RequestID]
	}); err != nil {
		return err
	}
	if err := filterFile(f.dir, ErrorsFile, nil, ErrorsJSONL.NewScanner, func(e ErrorRow) bool {
		return keep[e.RequestID]
	}); err != nil {
		return err
	}
	if err := f.repairLoadServer(); err != nil {
		return err
	}
	return f.repairTelemetry()
}

// upgradeRequests rewrites requests.csv with the current header when the folder was written
// before columns were added to it, so that the rows a resumed run appends match the header.
// The rows it holds are written again from what was read, which the round trip keeps exact.
func (f *Folder) upgradeRequests() error {
	data, err := os.ReadFile(filepath.Join(f.dir, RequestsFile))
	if err != nil {
		return err
	}
	header := encodeCSV(RequestsCSV.header())
	if bytes.HasPrefix(data, header) {
		return nil
	}
	recs := [][]string{RequestsCSV.header()}
	for i := range f.rows {
		recs = append(recs, RequestsCSV.row(&f.rows[i]))
	}
	return writeAtomic(f.dir, RequestsFile, encodeCSV(recs...))
}

// filterFile rewrites dir/name, atomically and only if something changes, keeping the header
// and the rows for which keep is true, byte for byte. A torn last line is dropped. A missing
// or headerless file is recreated with its header (CSV) or empty (JSON Lines).
func filterFile[T any](dir, name string, header []string, newScanner func(io.Reader, string) *Scanner[T], keep func(T) bool) error {
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if header != nil && bytes.IndexByte(data, '\n') < 0 {
		return writeAtomic(dir, name, encodeCSV(header))
	}
	var out bytes.Buffer
	var prev int64 = -1 // start of the previous kept-or-not row, to cut rows by offsets
	var prevKeep bool
	flush := func(end int64) {
		if prev >= 0 && prevKeep {
			out.Write(data[prev:end])
		}
	}
	s := newScanner(bytes.NewReader(data), name)
	first := true
	for s.Scan() {
		if first {
			out.Write(data[:s.Offset()]) // the header (none for JSON Lines)
			first = false
		}
		flush(s.Offset())
		prev, prevKeep = s.Offset(), keep(s.Record())
	}
	end := int64(len(data))
	var torn *TornLineError
	switch err := s.Err(); {
	case errors.As(err, &torn):
		end = torn.Offset
	case err != nil:
		return err
	}
	if first {
		if header == nil {
			out.Reset()
		} else if i := bytes.IndexByte(data, '\n'); i >= 0 {
			out.Write(data[:i+1])
		}
	}
	flush(end)
	if bytes.Equal(out.Bytes(), data) {
		return nil
	}
	return writeAtomic(dir, name, out.Bytes())
}
