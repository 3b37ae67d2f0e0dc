package results

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/redact"
)

// RunInfo is what the runner knows about itself when it creates a folder.
type RunInfo struct {
	RunnerVersion string
	RunnerCommit  string
	Command       []string  // the runner's own argv; recorded with secrets redacted
	Start         time.Time // the run's start; the zero time means now
	Machine       *Machine  // nil: DetectMachine
	Schedule      string    // the shuffled order's algorithm, recorded in the manifest
	// Shard is the part of the plan the folder holds, for one shard of a sharded run; it is
	// recorded in the manifest and names the folder. Nil for a run of the whole plan.
	Shard *Shard
}

// Folder is a result folder open for writing. Its methods are safe for concurrent use.
type Folder struct {
	dir string

	mu       sync.Mutex
	man      Manifest
	lock     *os.File
	requests *os.File
	events   *os.File
	outputs  *os.File
	errs     *os.File
	// telemetry is telemetry.csv, opened by the first AppendTelemetry.
	telemetry *os.File
	configs   map[string]bool
	done      Done
	rows      []record.Request // appended rows without events and texts, for the summary
	resume    int              // 0 for a new folder, n for its nth resume
	logs      map[string]string
	red       *redact.Replacer // the run's secrets, hidden in error texts (see HideSecrets)
	closed    bool
	err       error // the first write error; the folder takes no more rows after it

	// loadServer is load_server.csv, opened by the first AppendLoadServer; loadServerRows
	// are its rows.
	loadServer     *os.File
	loadServerRows []LoadServerRow
}

// validName is what an experiment name must look like to become a directory name.
var validName = regexp.MustCompile(`^[a-z0-9._-]+$`)

// dirTimeLayout is the UTC timestamp at the start of a folder's name.
const dirTimeLayout = "20060102T150405Z"

// Create makes a new result folder root/<experiment name>/<UTC time>-<6 hex digits>/ (with
// -shard-I-of-N after it for shard I of N) and returns it open for writing, with its manifest
// saying running. It never reuses an existing folder. The manifest records the experiment file (a copy and its SHA-256), the configs, the
// runner and the machine.
func Create(root string, exp *experiment.Experiment, configs []experiment.Config, run RunInfo) (*Folder, error) {
	if exp == nil {
		return nil, errors.New("create folder: no experiment")
	}
	if !validName.MatchString(exp.Name) || exp.Name == "." || exp.Name == ".." {
		return nil, fmt.Errorf("create folder: experiment name %q is not a safe folder name ([a-z0-9._-]+)", exp.Name)
	}
	ids := map[string]bool{}
	for _, c := range configs {
		if c.ID == "" {
			return nil, fmt.Errorf("create folder: config %d has no id", c.Index)
		}
		if ids[c.ID] {
			return nil, fmt.Errorf("create folder: config id %q appears twice", c.ID)
		}
		ids[c.ID] = true
	}
	start := run.Start
	if start.IsZero() {
		start = time.Now()
	}
	start = start.UTC()
	parent := filepath.Join(root, exp.Name)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("create folder: %w", err)
	}
	var dir, suffix string
	var shard *Shard
	if run.Shard != nil {
		// The shards of one run start at about the same second: the name tells them apart.
		suffix = fmt.Sprintf("-shard-%d-of-%d", run.Shard.Index, run.Shard.Count)
		copied := *run.Shard
		copied.Configs = append([]string{}, run.Shard.Configs...)
		shard = &copied
	}
	for attempt := 0; ; attempt++ {
		var b [3]byte
		if _, err := rand.Read(b[:]); err != nil {
			return nil, fmt.Errorf("create folder: %w", err)
		}
		dir = filepath.Join(parent, start.Format(dirTimeLayout)+"-"+hex.EncodeToString(b[:])+suffix)
		err := os.Mkdir(dir, 0o755)
		if err == nil {
			break
		}
		if !os.IsExist(err) || attempt >= 20 {
			return nil, fmt.Errorf("create folder: %w", err)
		}
	}

	machine := run.Machine
	if machine == nil {
		m := DetectMachine(context.Background())
		machine = &m
	}
	host, _ := os.Hostname()
	source, redacted := exp.RedactedSource()
	f := &Folder{
		dir: dir,
		man: Manifest{
			SchemaVersion: FormatVersion,
			Status:        StatusRunning,
			Runner:        RunnerInfo{Version: run.RunnerVersion, Commit: run.RunnerCommit, Schedule: run.Schedule},
			Command:       redact.Args(run.Command),
			Experiment: ExperimentFile{Name: exp.Name, Path: exp.Path, SHA256: SHA256(exp.Source),
				Source: string(source), Redacted: redacted},
			Configs: redactConfigs(configs),
			Servers: []ServerInfo{},
			Machine: *machine,
			Process: Process{PID: os.Getpid(), Host: host},
			Start:   start,
			Shard:   shard,
		},
		done: newDone(),
		logs: map[string]string{},
		red:  redact.New(append(configSecrets(configs), redact.ArgSecrets(run.Command)...)...),
	}
	if len(run.Command) == 0 {
		f.man.Command = nil
	}
	f.configs = ids
	if err := f.create(configs); err != nil {
		// The folder is new and holds nothing measured yet; a half-made one (on a full disk, a
		// manifest without configs.csv or requests.csv) could be neither read nor resumed.
		f.abandon()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create %s: %w", dir, err)
	}
	return f, nil
}

// create takes the lock, writes the manifest and configs.csv, and creates the row files with
// their headers.
func (f *Folder) create(configs []experiment.Config) error {
	var err error
	if f.lock, err = acquireLock(f.dir); err != nil {
		return err
	}
	if err := writeManifest(f.dir, &f.man); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(f.dir, LogsDir), 0o755); err != nil {
		return err
	}
	cf, err := os.OpenFile(filepath.Join(f.dir, ConfigsFile), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	err = ConfigsCSV.Write(cf, ConfigRows(configs))
	if cerr := cf.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err := writeAtomic(f.dir, ServersFile, serversCSV(nil)); err != nil {
		return err
	}
	if err := f.writeSchema(); err != nil {
		return err
	}
	open := func(name string, header []string) (*os.File, error) {
		file, err := os.OpenFile(filepath.Join(f.dir, name), os.O_CREATE|os.O_EXCL|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return nil, err
		}
		if header != nil {
			if _, err := file.Write(encodeCSV(header)); err != nil {
				file.Close()
				return nil, err
			}
		}
		return file, nil
	}
	if f.requests, err = open(RequestsFile, RequestsCSV.header()); err != nil {
		return err
	}
	if f.events, err = open(EventsFile, EventsCSV.header()); err != nil {
		return err
	}
	if f.outputs, err = open(OutputsFile, nil); err != nil {
		return err
	}
	if f.errs, err = open(ErrorsFile, nil); err != nil {
		return err
	}
	return nil
}

// Dir returns the folder's path.
func (f *Folder) Dir() string { return f.dir }

// Manifest returns a copy of the folder's manifest as it stands.
func (f *Folder) Manifest() Manifest {
	f.mu.Lock()
	defer f.mu.Unlock()
	m := f.man
	m.Servers = append([]ServerInfo(nil), m.Servers...)
	m.Resumes = append([]time.Time(nil), m.Resumes...)
	m.Discarded = append([]Discarded(nil), m.Discarded...)
	return m
}

// Append records one request: its events in events.csv, its generated text in outputs.jsonl,
// its error text in errors.jsonl, and last its row in requests.csv, each with one write
// that goes straight to the operating system. The request row comes last so that a request
// whose row is present is complete; Resume drops the rest of one that is not. A config id the
// folder does not know, or a (config id, seq) it already has, is refused. The run's secrets
// (see HideSecrets) are hidden in its generated text and its error text.
func (f *Folder) Append(rec record.Request) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	id := RequestID(rec.ConfigID, rec.Seq)
	switch {
	case f.closed:
		return fmt.Errorf("append %s: folder is closed", id)
	case f.err != nil:
		return fmt.Errorf("append %s: an earlier write failed: %w", id, f.err)
	case !f.configs[rec.ConfigID]:
		return fmt.Errorf("append %s: unknown config id %q", id, rec.ConfigID)
	case f.done.Has(rec.ConfigID, rec.Seq):
		return fmt.Errorf("append %s: the folder already has this request", id)
	case rec.Seq < 0:
		return fmt.Errorf("append %s: negative seq", id)
	}

	// A server may echo a key in its text as well as in its errors: both are hidden alike.
	rec.OutputText = f.red.String(rec.OutputText)
	lines, err := requestLines(&rec, f.red.String(rec.Error))
	if err != nil {
		return fmt.Errorf("append %s: %w", id, err)
	}
	for _, l := range []struct {
		file *os.File
		name string
		b    []byte
	}{{f.events, EventsFile, lines.events}, {f.outputs, OutputsFile, lines.output}, {f.errs, ErrorsFile, lines.err},
		{f.requests, RequestsFile, lines.request}} {
		if l.b == nil {
			continue
		}
		if err := f.write(l.file, l.name, l.b); err != nil {
			return err
		}
	}
	f.done.add(rec.ConfigID, rec.Seq)
	rec.EventList, rec.OutputText, rec.Error = nil, "", ""
	f.rows = append(f.rows, rec)
	return nil
}

// fileLines is one request as the folder's files hold it, each part nil when the request has
// none: its rows of events.csv, its line of outputs.jsonl and of errors.jsonl, and its row of
// requests.csv.
type fileLines struct {
	events, output, err, request []byte
}

// requestLines renders rec as the folder's files hold it, with errText as its error text.
// Append and WriteFolder both write requests through it, so that a merged folder holds the bytes a
// single run writes.
func requestLines(rec *record.Request, errText string) (fileLines, error) {
	var out fileLines
	id := RequestID(rec.ConfigID, rec.Seq)
	if len(rec.EventList) > 0 {
		rows := make([][]string, len(rec.EventList))
		for i := range rec.EventList {
			rows[i] = EventsCSV.row(&EventRow{RequestID: id, Event: rec.EventList[i]})
		}
		out.events = encodeCSV(rows...)
	}
	var err error
	if rec.OutputText != "" {
		if out.output, err = encodeJSONLine(&OutputRow{RequestID: id, ConfigID: rec.ConfigID, Seq: rec.Seq, Text: rec.OutputText}); err != nil {
			return fileLines{}, fmt.Errorf("encode %s: %w", OutputsFile, err)
		}
	}
	if rec.Error != "" {
		if out.err, err = encodeJSONLine(&ErrorRow{RequestID: id, ConfigID: rec.ConfigID, Seq: rec.Seq,
			ErrorClass: rec.ErrorClass, Error: errText}); err != nil {
			return fileLines{}, fmt.Errorf("encode %s: %w", ErrorsFile, err)
		}
	}
	out.request = encodeCSV(RequestsCSV.row(rec))
	return out, nil
}

func (f *Folder) write(file *os.File, name string, b []byte) error {
	if _, err := file.Write(b); err != nil {
		f.err = fmt.Errorf("write %s: %w", name, err)
		return f.err
	}
	return nil
}

// Done returns the requests the folder holds so far.
func (f *Folder) Done() Done {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.done.clone()
}

// ServerLog opens the log file of a server in the folder's logs/ directory, for the engine to
// write the server's output into, and returns it with its path; the caller closes it. The file
// is logs/<server id>.log, or logs/<server id>.resume-<n>.log in the nth resume of the folder;
// opening it again appends. SetServer fills ServerInfo.LogFile with its path in the folder when
// it is left empty.
func (f *Folder) ServerLog(serverID string) (io.WriteCloser, string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := safeFileName(serverID)
	if f.resume > 0 {
		name += fmt.Sprintf(".resume-%d", f.resume)
	}
	rel := filepath.ToSlash(filepath.Join(LogsDir, name+".log"))
	file, err := os.OpenFile(filepath.Join(f.dir, rel), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, "", fmt.Errorf("open server log: %w", err)
	}
	f.logs[serverID] = rel
	return file, file.Name(), nil
}

// safeFileName maps a server id to a file name: characters other than letters, digits, '.',
// '_' and '-' become '_'.
func safeFileName(s string) string {
	b := []byte(s)
	for i, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			b[i] = '_'
		}
	}
	if len(b) == 0 || b[0] == '.' {
		return "server" + string(b)
	}
	return string(b)
}

// SetServer records or updates the boot of a server in this run (or resume) of the folder:
// call it when the server is ready or failed to boot, and again when it has exited. The
// command line and error are redacted again before they are stored. It rewrites servers.csv and the
// manifest, each atomically.
func (f *Folder) SetServer(info ServerInfo) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return fmt.Errorf("set server %s: folder is closed", info.ServerID)
	}
	info.Resume = f.resume
	info.Argv = f.red.Strings(redact.Args(info.Argv))
	info.Error = f.red.String(info.Error)
	if len(info.Argv) == 0 {
		info.Argv = nil
	}
	if info.LogFile == "" {
		info.LogFile = f.logs[info.ServerID]
	}
	if !info.BootStart.IsZero() {
		info.BootStart = info.BootStart.UTC()
	}
	replaced := false
	for i, s := range f.man.Servers {
		if s.ServerID == info.ServerID && s.Resume == info.Resume {
			f.man.Servers[i] = info
			replaced = true
		}
	}
	if !replaced {
		f.man.Servers = append(f.man.Servers, info)
	}
	if err := writeAtomic(f.dir, ServersFile, serversCSV(f.man.Servers)); err != nil {
		return fmt.Errorf("set server %s: %w", info.ServerID, err)
	}
	if err := writeManifest(f.dir, &f.man); err != nil {
		return fmt.Errorf("set server %s: %w", info.ServerID, err)
	}
	return nil
}

func serversCSV(servers []ServerInfo) []byte {
	recs := [][]string{ServersCSV.header()}
	for i := range servers {
		recs = append(recs, ServersCSV.row(&servers[i]))
	}
	return encodeCSV(recs...)
}

// Close finishes the folder: it writes summary.csv and load.csv from every row the folder holds
// (load.csv joined with load_server.csv, where the folder has one), records
// the end time and status in the manifest, and releases the folder. status is complete,
// interrupted or failed.
func (f *Folder) Close(status Status) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return errors.New("close: folder is already closed")
	}
	switch status {
	case StatusComplete, StatusInterrupted, StatusFailed:
	default:
		return fmt.Errorf("close: status %q is not complete, interrupted or failed", status)
	}
	f.closed = true
	var errs []error
	for _, file := range []*os.File{f.requests, f.events, f.outputs, f.errs, f.telemetry, f.loadServer} {
		if file == nil {
			continue
		}
		if err := file.Sync(); err != nil {
			errs = append(errs, err)
		}
	}
	var buf bytes.Buffer
	if err := SummaryCSV.Write(&buf, Summarize(f.man.Configs, f.rows)); err != nil {
		errs = append(errs, err)
	} else if err := writeAtomic(f.dir, SummaryFile, buf.Bytes()); err != nil {
		errs = append(errs, err)
	}
	load := SummarizeLoad(f.man.Configs, f.rows)
	JoinLoadServer(load, f.loadServerRows)
	if err := writeAtomic(f.dir, LoadFile, loadCSV(load, hasFile(f.dir, LoadServerFile))); err != nil {
		errs = append(errs, err)
	}
	// Written again so that a folder resumed from before folders carried the file has it too.
	if err := f.writeSchema(); err != nil {
		errs = append(errs, err)
	}
	end := time.Now().UTC()
	f.man.End = &end
	f.man.Status = status
	if err := writeManifest(f.dir, &f.man); err != nil {
		errs = append(errs, err)
	}
	f.closeFiles()
	if f.lock != nil {
		os.Remove(filepath.Join(f.dir, lockFile))
		f.lock.Close()
		f.lock = nil
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("close %s: %w", f.dir, err)
	}
	return nil
}

// HideSecrets makes the folder hide the secrets of configs (and the extra values given) in the
// error texts it records from now on, as Create does for a new folder. A resumed folder needs
// it: its manifest holds the configs with their secrets already redacted, so Resume cannot know
// them.
func (f *Folder) HideSecrets(configs []experiment.Config, more ...string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.red = redact.New(append(configSecrets(configs), more...)...)
}

// Secrets returns the replacer of the run's secrets, for hiding them in what the run prints.
func (f *Folder) Secrets() *redact.Replacer {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.red
}

// MarkInterrupted records in the manifest that the run was interrupted, without finishing the
// folder: no summary is written, and the folder takes no more writes. It is for a process about to exit
// at once (a second Ctrl-C), so that the manifest on disk does not say running; the rows are
// already on disk and --resume finishes the folder. It waits for the folder at most wait, so
// that an exit is never held up by a write in progress, and does nothing on a closed folder.
func (f *Folder) MarkInterrupted(wait time.Duration) error {
	deadline := time.Now().Add(wait)
	for !f.mu.TryLock() {
		if time.Now().After(deadline) {
			return fmt.Errorf("mark %s interrupted: the folder is busy", f.dir)
		}
		time.Sleep(5 * time.Millisecond)
	}
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	end := time.Now().UTC()
	f.man.End, f.man.Status = &end, StatusInterrupted
	// The process is about to exit: no later write may put running back in the manifest.
	f.closed = true
	return writeManifest(f.dir, &f.man)
}

func (f *Folder) closeFiles() {
	for _, file := range []**os.File{&f.requests, &f.events, &f.outputs, &f.errs, &f.telemetry, &f.loadServer} {
		if *file != nil {
			(*file).Close()
			*file = nil
		}
	}
}

// abandon closes the folder's files and releases its lock without finishing it, as a crash
// would; Create uses it on a folder it could not finish making, and tests to leave an
// interrupted folder.
func (f *Folder) abandon() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	f.closeFiles()
	if f.lock != nil {
		f.lock.Close()
		f.lock = nil
	}
}

// Done is the set of requests a folder already holds, by (config id, seq), so that a resumed
// run sends only the others.
type Done struct {
	seqs map[string]map[int]bool
}

func newDone() Done { return Done{seqs: map[string]map[int]bool{}} }

func (d Done) add(configID string, seq int) {
	m := d.seqs[configID]
	if m == nil {
		m = map[int]bool{}
		d.seqs[configID] = m
	}
	m[seq] = true
}

func (d Done) clone() Done {
	c := newDone()
	for id, m := range d.seqs {
		for s := range m {
			c.add(id, s)
		}
	}
	return c
}

// Has reports whether the request (configID, seq) is already recorded.
func (d Done) Has(configID string, seq int) bool { return d.seqs[configID][seq] }

// Count returns how many requests of a config are recorded.
func (d Done) Count(configID string) int { return len(d.seqs[configID]) }

// Len returns how many requests are recorded in all.
func (d Done) Len() int {
	n := 0
	for _, m := range d.seqs {
		n += len(m)
	}
	return n
}
