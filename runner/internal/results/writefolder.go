package results

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// FolderRows are the rows that WriteFolder writes into a result folder, besides those it
// computes from them.
type FolderRows struct {
	// Requests are the request rows in the order the folder holds them, each with its events,
	// generated text and error text.
	Requests []record.Request
	// Telemetry and LoadServer are the rows of telemetry.csv and load_server.csv, written
	// only where the folder has the file (WithTelemetry, WithLoadServer): a folder that had one
	// keeps it, with its header, even when no row is left.
	Telemetry                     []record.GPUSample
	LoadServer                    []LoadServerRow
	WithTelemetry, WithLoadServer bool
}

// WriteFolder writes the files of a finished result folder into the folder dir in one go,
// where a run writes them row by row: requests.csv, events.csv, outputs.jsonl and errors.jsonl
// from rows.Requests in their order, configs.csv and servers.csv from the manifest, summary.csv
// and load.csv computed from the rows by Summarize and SummarizeLoad (load.csv with the server
// figures of rows.LoadServer), load_server.csv and telemetry.csv where the rows say the folder
// has them, datapackage.json, and the manifest last. The files are those that a run of the
// same rows writes, byte for byte. dir must exist and hold none of these files.
func WriteFolder(dir string, man *Manifest, rows FolderRows) error {
	if err := writeRequestFiles(dir, rows.Requests); err != nil {
		return err
	}
	type file struct {
		name  string
		write func(io.Writer) error
	}
	files := []file{
		{ConfigsFile, func(w io.Writer) error { return ConfigsCSV.Write(w, ConfigRows(man.Configs)) }},
		{ServersFile, func(w io.Writer) error { _, err := w.Write(serversCSV(man.Servers)); return err }},
		{SummaryFile, func(w io.Writer) error { return SummaryCSV.Write(w, Summarize(man.Configs, rows.Requests)) }},
		{LoadFile, func(w io.Writer) error {
			load := SummarizeLoad(man.Configs, rows.Requests)
			JoinLoadServer(load, rows.LoadServer)
			_, err := w.Write(loadCSV(load, rows.WithLoadServer))
			return err
		}},
	}
	if rows.WithLoadServer {
		files = append(files, file{LoadServerFile, func(w io.Writer) error { return writeAll(w, LoadServerCSV, rows.LoadServer) }})
	}
	if rows.WithTelemetry {
		files = append(files, file{TelemetryFile, func(w io.Writer) error { return writeAll(w, TelemetryCSV, rows.Telemetry) }})
	}
	for _, f := range files {
		var buf bytes.Buffer
		if err := f.write(&buf); err != nil {
			return err
		}
		if err := writeAtomic(dir, f.name, buf.Bytes()); err != nil {
			return err
		}
	}
	// The data package is written after the files it describes, since it names the optional
	// ones only where the folder has them.
	var buf bytes.Buffer
	if err := EncodeSchema(&buf, man.Experiment.Name, folderSchema(dir, man.Configs)); err != nil {
		return err
	}
	if err := writeAtomic(dir, SchemaFile, buf.Bytes()); err != nil {
		return err
	}
	return writeManifest(dir, man)
}

// writeRequestFiles writes requests.csv, events.csv, outputs.jsonl and errors.jsonl of reqs,
// in their order, into dir, each file new.
func writeRequestFiles(dir string, reqs []record.Request) error {
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
	return nil
}
