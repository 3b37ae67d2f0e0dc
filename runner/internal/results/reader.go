package results

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// Reader reads a result folder: complete, failed, interrupted, or still being written.
type Reader struct {
	dir    string
	man    *Manifest
	status Status
	notes  []string
}

// Open opens the result folder dir for reading. It refuses a manifest version it does not know.
// A folder whose manifest says running but whose writer is gone is reported as interrupted.
func Open(dir string) (*Reader, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	r := &Reader{dir: dir, man: m, status: m.Status}
	if m.Status == StatusRunning && !lockHeld(dir) {
		r.status = StatusInterrupted
	}
	return r, nil
}

// Dir returns the folder's path.
func (r *Reader) Dir() string { return r.dir }

// Manifest returns the folder's manifest as written (its Status may say running; see Status).
func (r *Reader) Manifest() *Manifest { return r.man }

// Status returns the folder's state: the manifest's, except that a running folder whose writer
// is gone is interrupted.
func (r *Reader) Status() Status { return r.status }

// Notes returns what the reads so far skipped, such as a torn last line of an interrupted
// folder, one sentence each.
func (r *Reader) Notes() []string { return append([]string(nil), r.notes...) }

// tolerant reports whether the folder may end in a torn line: its writer is still running or
// died mid-write.
func (r *Reader) tolerant() bool { return r.status == StatusRunning || r.status == StatusInterrupted }

// scanAll runs a scanner over dir/name and hands each row to fn. A torn last line is skipped
// with a note when tolerate is set, and an error otherwise.
func scanAll[T any](dir, name string, newScanner func(io.Reader, string) *Scanner[T], tolerate bool,
	fn func(rec T, line int) error) (note string, err error) {
	file, err := OpenRegular(filepath.Join(dir, name))
	if err != nil {
		return "", err
	}
	defer file.Close()
	s := newScanner(file, name)
	for s.Scan() {
		if err := fn(s.Record(), s.Line()); err != nil {
			return "", err
		}
	}
	var torn *TornLineError
	if errors.As(s.Err(), &torn) && tolerate {
		return fmt.Sprintf("%s:%d: skipped a torn last line (the writer stopped mid-write)", name, torn.Line), nil
	}
	return "", s.Err()
}

// scanOptional runs scanAll over r's file name, a table the folder may lack: a missing file
// is no error and scans no row. A note on a torn last line is kept.
func scanOptional[T any](r *Reader, name string, newScanner func(io.Reader, string) *Scanner[T],
	fn func(rec T, line int) error) error {
	n, err := scanAll(r.dir, name, newScanner, r.tolerant(), fn)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	r.note(n)
	return nil
}

// hasFile reports whether the folder dir holds the file name.
func hasFile(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}

func (r *Reader) note(n string) {
	if n != "" {
		r.notes = append(r.notes, n)
	}
}

// Requests returns every request row of the folder in file (measured) order, with its events,
// generated text and error text joined in. Rows of a request whose requests.csv row is missing
// (a request cut off by a crash) are left out.
func (r *Reader) Requests() ([]record.Request, error) {
	var reqs []record.Request
	index := map[string]int{}
	n, err := scanAll(r.dir, RequestsFile, RequestsCSV.NewScanner, r.tolerant(), func(rec record.Request, line int) error {
		id := RequestID(rec.ConfigID, rec.Seq)
		if _, dup := index[id]; dup {
			return requestTwice(line, &rec)
		}
		index[id] = len(reqs)
		reqs = append(reqs, rec)
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.note(n)
	var orphans int
	n, err = scanAll(r.dir, EventsFile, EventsCSV.NewScanner, r.tolerant(), func(e EventRow, line int) error {
		i, ok := index[e.RequestID]
		if !ok {
			orphans++
			return nil
		}
		reqs[i].EventList = append(reqs[i].EventList, e.Event)
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.note(n)
	if orphans > 0 {
		r.note(fmt.Sprintf("%s: skipped %d events of requests that have no row in %s", EventsFile, orphans, RequestsFile))
	}
	n, err = scanAll(r.dir, OutputsFile, OutputsJSONL.NewScanner, r.tolerant(), func(o OutputRow, line int) error {
		if i, ok := index[o.RequestID]; ok {
			reqs[i].OutputText = o.Text
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.note(n)
	n, err = scanAll(r.dir, ErrorsFile, ErrorsJSONL.NewScanner, r.tolerant(), func(e ErrorRow, line int) error {
		if i, ok := index[e.RequestID]; ok {
			reqs[i].Error = e.Error
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	r.note(n)
	return reqs, nil
}

// Configs returns the rows of configs.csv.
func (r *Reader) Configs() ([]ConfigRow, error) {
	var rows []ConfigRow
	_, err := scanAll(r.dir, ConfigsFile, ConfigsCSV.NewScanner, false, func(c ConfigRow, _ int) error {
		rows = append(rows, c)
		return nil
	})
	return rows, err
}

// Servers returns the rows of servers.csv.
func (r *Reader) Servers() ([]ServerInfo, error) {
	var rows []ServerInfo
	_, err := scanAll(r.dir, ServersFile, ServersCSV.NewScanner, false, func(s ServerInfo, _ int) error {
		rows = append(rows, s)
		return nil
	})
	return rows, err
}

// StoredSummary returns the rows of summary.csv as the writer left them. An interrupted folder
// has none; Summary computes them from the requests in any state.
func (r *Reader) StoredSummary() ([]SummaryRow, error) {
	var rows []SummaryRow
	_, err := scanAll(r.dir, SummaryFile, SummaryCSV.NewScanner, false, func(s SummaryRow, _ int) error {
		rows = append(rows, s)
		return nil
	})
	return rows, err
}

// Summary computes the summary of the folder's requests, as Close writes it to summary.csv.
func (r *Reader) Summary() ([]SummaryRow, error) {
	reqs, err := r.Requests()
	if err != nil {
		return nil, err
	}
	return Summarize(r.man.Configs, reqs), nil
}

// StoredLoad returns the rows of load.csv as the writer left them. An interrupted folder has
// none, and neither has a folder written before the file existed; LoadSummary computes them
// from the requests in any state.
func (r *Reader) StoredLoad() ([]LoadRow, error) {
	var rows []LoadRow
	_, err := scanAll(r.dir, LoadFile, LoadCSV.NewScanner, false, func(l LoadRow, _ int) error {
		rows = append(rows, l)
		return nil
	})
	return rows, err
}

// LoadSummary computes the load summary of the folder's requests joined with load_server.csv,
// as Close writes it to load.csv.
func (r *Reader) LoadSummary() ([]LoadRow, error) {
	reqs, err := r.Requests()
	if err != nil {
		return nil, err
	}
	return r.loadSummary(reqs)
}

// loadSummary is LoadSummary over requests already read.
func (r *Reader) loadSummary(reqs []record.Request) ([]LoadRow, error) {
	server, err := r.LoadServer()
	if err != nil {
		return nil, err
	}
	rows := SummarizeLoad(r.man.Configs, reqs)
	JoinLoadServer(rows, server)
	return rows, nil
}

// ReadRequests opens the result folder dir and returns all its requests with their events and
// texts; see Reader.Requests.
func ReadRequests(dir string) ([]record.Request, error) {
	l, err := ReadAll(dir)
	if err != nil {
		return nil, err
	}
	return l.Requests, nil
}

// Contents is a result folder read whole, as the commands that describe folders use it.
type Contents struct {
	Dir      string
	Manifest *Manifest
	Status   Status           // the folder's state (a running folder without a writer is interrupted)
	Requests []record.Request // every request row, in file order, with events and texts joined in
	Servers  []ServerInfo     // every server boot, from servers.csv
	// Load holds each config as a load point: load.csv, or for a folder whose run has not
	// finished, computed from its requests. Nil for a finished folder written before load.csv
	// existed.
	Load []LoadRow
	// Telemetry holds the GPU samples of telemetry.csv; nil where no GPU was sampled.
	Telemetry []record.GPUSample
	Notes     []string // what the reader skipped, such as a torn last line, one sentence each

	// Digest holds the requests' figures per config where ReadDigest read the folder in place
	// of its Requests; nil from ReadAll.
	Digest *Digest
}

// ReadAll opens the result folder dir and reads its manifest, all its requests, its servers, its
// load points and its GPU samples. It
// fails on a folder it cannot read, including one of a format version it does not know.
func ReadAll(dir string) (*Contents, error) {
	r, err := Open(dir)
	if err != nil {
		return nil, err
	}
	reqs, err := r.Requests()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	c, err := r.contents(func() ([]LoadRow, error) { return r.loadSummary(reqs) })
	if err != nil {
		return nil, err
	}
	c.Requests = reqs
	return c, nil
}

// contents reads what a folder holds beside its requests, once they are read: its servers, its
// load points (load.csv, or from summarize for a folder whose run has not finished), and its GPU
// samples, with the reader's notes. Errors name the folder.
func (r *Reader) contents(summarize func() ([]LoadRow, error)) (*Contents, error) {
	dir := r.dir
	servers, err := r.Servers()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	var load []LoadRow
	if hasFile(dir, LoadFile) {
		if load, err = r.StoredLoad(); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	} else if r.tolerant() {
		if load, err = summarize(); err != nil {
			return nil, fmt.Errorf("%s: %w", dir, err)
		}
	}
	tel, err := r.Telemetry()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	return &Contents{Dir: dir, Manifest: r.Manifest(), Status: r.Status(), Servers: servers, Load: load,
		Telemetry: tel, Notes: r.Notes()}, nil
}
