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
	if sh := f.man.Shard; sh != nil && host != "" && sh.Host != host {
		// The shard now runs here; the merge names this host, and the earlier one is kept.
		sh.EarlierHosts = appendHost(sh.EarlierHosts, sh.Host)
		sh.Host = host
	}
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
	data, err := ReadRegular(filepath.Join(f.dir, RequestsFile), MaxRowFileBytes)
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
	data, err := ReadRegular(filepath.Join(dir, name), MaxRowFileBytes)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	if header != nil && bytes.IndexByte(data, '\n') < 0 {
		return writeAtomic(dir, name, encodeCSV(header))
	}
	head, rows, err := splitRows(data, name, newScanner, keep)
	var torn *TornLineError
	if err != nil && !errors.As(err, &torn) {
		return err
	}
	// A CSV file without a whole row keeps its header line.
	if len(rows) == 0 && header != nil {
		if i := bytes.IndexByte(data, '\n'); i >= 0 {
			head = data[:i+1]
		}
	}
	var out bytes.Buffer
	out.Write(head)
	for _, r := range rows {
		if r.picked {
			out.Write(r.raw)
		}
	}
	if bytes.Equal(out.Bytes(), data) {
		return nil
	}
	return writeAtomic(dir, name, out.Bytes())
}

// rowSpan is one row of a file, byte for byte as it stands there with its line end, and
// whether the caller's predicate picked it.
type rowSpan struct {
	raw    []byte
	picked bool
}

// splitRows scans data, the contents of the file name, so that its rows can be rewritten byte
// for byte. It returns the bytes before the first row (the header; none for JSON Lines, nil
// when no row was read) and the rows, each with pick's answer; pick is asked in file order as
// each row is read. A torn last line is no row: the error is then a *TornLineError, returned
// with the rows before it.
func splitRows[T any](data []byte, name string, newScanner func(io.Reader, string) *Scanner[T], pick func(T) bool) (head []byte, rows []rowSpan, err error) {
	s := newScanner(bytes.NewReader(data), name)
	prev, picked := int64(-1), false // the previous row's start and pick's answer for it
	for s.Scan() {
		if prev < 0 {
			head = data[:s.Offset()]
		} else {
			rows = append(rows, rowSpan{data[prev:s.Offset()], picked})
		}
		prev, picked = s.Offset(), pick(s.Record())
	}
	end := int64(len(data))
	var torn *TornLineError
	switch err = s.Err(); {
	case errors.As(err, &torn):
		end = torn.Offset
	case err != nil:
		return nil, nil, err
	}
	if prev >= 0 {
		rows = append(rows, rowSpan{data[prev:end], picked})
	}
	return head, rows, err
}

// appendHost appends host to hosts unless it is empty or already the last of them.
func appendHost(hosts []string, host string) []string {
	if host == "" || len(hosts) > 0 && hosts[len(hosts)-1] == host {
		return hosts
	}
	return append(hosts, host)
}
