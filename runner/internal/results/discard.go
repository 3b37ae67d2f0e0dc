package results

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// DiscardedDir is the subfolder of a result folder that holds the rows of discarded load
// points, in files named as the folder's own. Readers ignore it.
const DiscardedDir = "discarded"

// Discarded records in the manifest the rows of one config that a resume moved out of the
// folder: a load point is measured as a whole, so a partial one is discarded and run again.
type Discarded struct {
	ConfigID string    `json:"config_id"`
	Rows     int       `json:"rows"` // request rows moved to discarded/requests.csv
	Reason   string    `json:"reason"`
	Time     time.Time `json:"time"`
}

// Discard moves every row of the configs configIDs, in requests.csv, events.csv, outputs.jsonl,
// errors.jsonl and load_server.csv, out of the folder into the same files under discarded/ (appended to what is
// there), records each config in the manifest's discarded list with reason, and returns the
// requests the folder then holds. The rows are appended to discarded/ first and each of the
// folder's own files is then replaced atomically, so a crash in between leaves a row in both
// places, never in neither. A config without rows is left out of the manifest.
func (f *Folder) Discard(configIDs []string, reason string) (Done, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return Done{}, errors.New("discard: folder is closed")
	case f.err != nil:
		return Done{}, fmt.Errorf("discard: an earlier write failed: %w", f.err)
	}
	drop := map[string]bool{}
	for _, id := range configIDs {
		if !f.configs[id] {
			return Done{}, fmt.Errorf("discard: unknown config id %q", id)
		}
		drop[id] = true
	}
	if len(drop) == 0 {
		return f.done.clone(), nil
	}
	// A request id is "<config id>-<seq>"; config ids may hold '-' themselves.
	dropID := func(requestID string) bool {
		for id := range drop {
			if rest, ok := strings.CutPrefix(requestID, id+"-"); ok && isDigits(rest) {
				return true
			}
		}
		return false
	}
	moved := map[string]int{}
	if err := os.MkdirAll(filepath.Join(f.dir, DiscardedDir), 0o755); err != nil {
		return Done{}, fmt.Errorf("discard: %w", err)
	}
	err := moveRows(f.dir, RequestsFile, RequestsCSV.header(), RequestsCSV.NewScanner, func(r record.Request) bool {
		if drop[r.ConfigID] {
			moved[r.ConfigID]++
			return true
		}
		return false
	})
	if err == nil {
		err = moveRows(f.dir, EventsFile, EventsCSV.header(), EventsCSV.NewScanner, func(e EventRow) bool { return dropID(e.RequestID) })
	}
	if err == nil {
		err = moveRows(f.dir, OutputsFile, nil, OutputsJSONL.NewScanner, func(o OutputRow) bool { return drop[o.ConfigID] })
	}
	if err == nil {
		err = moveRows(f.dir, ErrorsFile, nil, ErrorsJSONL.NewScanner, func(e ErrorRow) bool { return drop[e.ConfigID] })
	}
	if err == nil && hasFile(f.dir, LoadServerFile) {
		// The server's figures of a load point describe its requests: they go with them.
		err = moveRows(f.dir, LoadServerFile, LoadServerCSV.header(), LoadServerCSV.NewScanner, func(r LoadServerRow) bool { return drop[r.ConfigID] })
	}
	// The files were replaced: the open handles point at the old ones.
	if rerr := f.reopen(); err == nil {
		err = rerr
	}
	if err != nil {
		f.err = fmt.Errorf("discard: %w", err)
		return Done{}, f.err
	}

	kept := f.rows[:0]
	for _, r := range f.rows {
		if !drop[r.ConfigID] {
			kept = append(kept, r)
		}
	}
	f.rows = kept
	keptServer := f.loadServerRows[:0]
	for _, r := range f.loadServerRows {
		if !drop[r.ConfigID] {
			keptServer = append(keptServer, r)
		}
	}
	f.loadServerRows = keptServer
	now := time.Now().UTC()
	for _, id := range configIDs {
		if drop[id] {
			delete(f.done.seqs, id)
			if moved[id] > 0 {
				f.man.Discarded = append(f.man.Discarded, Discarded{ConfigID: id, Rows: moved[id], Reason: reason, Time: now})
			}
			drop[id] = false // an id listed twice is recorded once
		}
	}
	if err := writeManifest(f.dir, &f.man); err != nil {
		return Done{}, fmt.Errorf("discard: %w", err)
	}
	return f.done.clone(), nil
}

// reopen opens the folder's row files again for appending; telemetry.csv and load_server.csv
// open again on their next append.
func (f *Folder) reopen() error {
	f.closeFiles()
	var errs []error
	for _, o := range []struct {
		file **os.File
		name string
	}{{&f.requests, RequestsFile}, {&f.events, EventsFile}, {&f.outputs, OutputsFile}, {&f.errs, ErrorsFile}} {
		var err error
		if *o.file, err = os.OpenFile(filepath.Join(f.dir, o.name), os.O_WRONLY|os.O_APPEND, 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// moveRows moves the rows of dir/name for which move is true to dir/discarded/name, byte for
// byte: it appends them there (with the header first when that file is new), then replaces
// dir/name atomically with its header and the other rows. It does nothing when no row moves.
func moveRows[T any](dir, name string, header []string, newScanner func(io.Reader, string) *Scanner[T], move func(T) bool) error {
	data, err := ReadRegular(filepath.Join(dir, name), MaxRowFileBytes)
	if err != nil {
		return err
	}
	head, rows, err := splitRows(data, name, newScanner, move)
	if err != nil {
		return err
	}
	var keep, out bytes.Buffer
	keep.Write(head)
	for _, r := range rows {
		if r.picked {
			out.Write(r.raw)
		} else {
			keep.Write(r.raw)
		}
	}
	if out.Len() == 0 {
		return nil
	}
	dst := filepath.Join(dir, DiscardedDir, name)
	file, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	st, err := file.Stat()
	if err == nil && st.Size() == 0 && header != nil {
		_, err = file.Write(encodeCSV(header))
	}
	if err == nil {
		_, err = file.Write(out.Bytes())
	}
	if err == nil {
		err = file.Sync()
	}
	if cerr := file.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("write %s/%s: %w", DiscardedDir, name, err)
	}
	return writeAtomic(dir, name, keep.Bytes())
}
