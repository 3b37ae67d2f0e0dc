package results

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// FileSchema is one CSV file of a result folder and its columns in file order.
type FileSchema struct {
	File    string
	Columns []Column
}

// folderTable is what the data package needs of a Table, whatever its row type.
type folderTable interface {
	File() string
	Columns() []Column
	schema(configs []ConfigRow, has func(file string) bool) (FileSchema, bool)
}

// folderTables lists the CSV files of a result folder, in the order its data package names
// them. The optional ones (load_server.csv, telemetry.csv) come last, each after the file it
// completes.
var folderTables = []folderTable{ConfigsCSV, RequestsCSV, EventsCSV, ServersCSV, SummaryCSV, LoadCSV, LoadServerCSV, TelemetryCSV}

// Schema returns the CSV files of a result folder whose configs are configs, each with its
// columns, in a fixed order: configs.csv, requests.csv, events.csv, servers.csv, summary.csv,
// load.csv.
// The columns come from the same tables that write the files; only configs.csv depends on the
// folder (one column per axis).
func Schema(configs []ConfigRow) []FileSchema { return schemaOf(configs, nil) }

// Schema returns the CSV files of the folder and their columns; see the function Schema, with
// load_server.csv after load.csv and telemetry.csv last where the folder has them. It is derived from the manifest's configs, so it
// holds for folders written before the folder carried its own SchemaFile.
func (r *Reader) Schema() []FileSchema { return folderSchema(r.dir, r.man.Configs) }

// folderSchema is Schema with telemetry.csv added where the folder dir has one: a data
// package names only files that exist. Where the folder has load_server.csv, it follows
// load.csv, and load.csv has its columns too.
func folderSchema(dir string, configs []experiment.Config) []FileSchema {
	return schemaOf(ConfigRows(configs), func(file string) bool { return hasFile(dir, file) })
}

// schemaOf describes the files of folderTables for a folder whose configs are configs and
// which holds the files that has reports (nil: no optional file).
func schemaOf(configs []ConfigRow, has func(file string) bool) []FileSchema {
	var s []FileSchema
	for _, t := range folderTables {
		if f, ok := t.schema(configs, has); ok {
			s = append(s, f)
		}
	}
	return s
}

// frictionlessType maps a column kind to its type in a Frictionless Table Schema.
var frictionlessType = map[Kind]string{
	KindInt:    "integer",
	KindFloat:  "number",
	KindBool:   "boolean",
	KindString: "string",
	KindTime:   "datetime",
}

// kindOfFrictionless is frictionlessType reversed.
var kindOfFrictionless = func() map[string]Kind {
	m := map[string]Kind{}
	for k, t := range frictionlessType {
		m[t] = k
	}
	return m
}()

// The JSON shapes of a Frictionless tabular data package, as much of it as SchemaFile uses.
type (
	dataPackage struct {
		Profile       string         `json:"profile"`
		Name          string         `json:"name"`
		SchemaVersion int            `json:"schema_version"`
		Resources     []dataResource `json:"resources"`
	}
	dataResource struct {
		Name      string      `json:"name"`
		Path      string      `json:"path"`
		Profile   string      `json:"profile"`
		Format    string      `json:"format"`
		MediaType string      `json:"mediatype"`
		Encoding  string      `json:"encoding"`
		Dialect   csvDialect  `json:"dialect"`
		Schema    tableSchema `json:"schema"`
	}
	csvDialect struct {
		Delimiter      string `json:"delimiter"`
		DoubleQuote    bool   `json:"doubleQuote"`
		LineTerminator string `json:"lineTerminator"`
		Header         bool   `json:"header"`
	}
	tableSchema struct {
		Fields        []tableField `json:"fields"`
		MissingValues []string     `json:"missingValues"`
	}
	tableField struct {
		Name        string            `json:"name"`
		Type        string            `json:"type"`
		Format      string            `json:"format,omitempty"`
		Constraints *fieldConstraints `json:"constraints,omitempty"`
	}
	// fieldConstraints are a field's Frictionless constraints: required, the values of an
	// enum (the empty cell among them where the column allows it), a minimum of 0 for a number
	// that is never below zero, and unique for a column whose value names its row.
	fieldConstraints struct {
		Required bool     `json:"required,omitempty"`
		Enum     []string `json:"enum,omitempty"`
		Minimum  *int     `json:"minimum,omitempty"`
		Unique   bool     `json:"unique,omitempty"`
	}
)

// EncodeSchema writes files as SchemaFile: a Frictionless tabular data package named name, one
// resource per CSV file, each field with its type (integer, number, boolean, string or
// datetime), the empty cell as the one missing value, and "required" on the columns that are
// never empty.
func EncodeSchema(w io.Writer, name string, files []FileSchema) error {
	p := dataPackage{Profile: "tabular-data-package", Name: name, SchemaVersion: FormatVersion}
	for _, f := range files {
		res := dataResource{
			Name: strings.TrimSuffix(f.File, ".csv"), Path: f.File,
			Profile: "tabular-data-resource", Format: "csv", MediaType: "text/csv", Encoding: "utf-8",
			Dialect: csvDialect{Delimiter: ",", DoubleQuote: true, LineTerminator: "\n", Header: true},
			Schema:  tableSchema{Fields: []tableField{}, MissingValues: []string{""}},
		}
		for _, c := range f.Columns {
			t, ok := frictionlessType[c.Kind]
			if !ok {
				return fmt.Errorf("encode schema: %s: column %s has unknown kind %q", f.File, c.Name, c.Kind)
			}
			field := tableField{Name: c.Name, Type: t}
			if c.Kind == KindTime {
				field.Format = "default" // RFC 3339 (XML Schema dateTime) in UTC
			}
			if c.Required || c.Values != nil || c.NonNegative || c.Unique {
				field.Constraints = &fieldConstraints{Required: c.Required, Enum: c.Values, Unique: c.Unique}
				if c.NonNegative {
					field.Constraints.Minimum = new(int)
				}
			}
			res.Schema.Fields = append(res.Schema.Fields, field)
		}
		p.Resources = append(p.Resources, res)
	}
	b, err := json.MarshalIndent(p, "", "  ")
	if err != nil {
		return fmt.Errorf("encode schema: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("write %s: %w", SchemaFile, err)
	}
	return nil
}

// DecodeSchema reads a SchemaFile written by EncodeSchema and returns its files and columns. It
// refuses a schema_version it does not know.
func DecodeSchema(r io.Reader) ([]FileSchema, error) {
	var p dataPackage
	dec := json.NewDecoder(r)
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("%s: %w", SchemaFile, err)
	}
	if p.SchemaVersion != FormatVersion {
		return nil, &VersionError{File: SchemaFile, Version: fmt.Sprint(p.SchemaVersion)}
	}
	var files []FileSchema
	for _, res := range p.Resources {
		f := FileSchema{File: res.Path}
		for _, field := range res.Schema.Fields {
			k, ok := kindOfFrictionless[field.Type]
			if !ok {
				return nil, fmt.Errorf("%s: %s: column %s has unknown type %q", SchemaFile, res.Path, field.Name, field.Type)
			}
			col := Column{Name: field.Name, Kind: k}
			if fc := field.Constraints; fc != nil {
				col.Required, col.Values, col.Unique = fc.Required, fc.Enum, fc.Unique
				col.NonNegative = fc.Minimum != nil && *fc.Minimum == 0
			}
			f.Columns = append(f.Columns, col)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return nil, errors.New(SchemaFile + ": no resources")
	}
	return files, nil
}

// writeSchema writes the folder's SchemaFile atomically, from the manifest's configs.
func (f *Folder) writeSchema() error {
	var buf bytes.Buffer
	if err := EncodeSchema(&buf, f.man.Experiment.Name, folderSchema(f.dir, f.man.Configs)); err != nil {
		return err
	}
	return writeAtomic(f.dir, SchemaFile, buf.Bytes())
}

// ReadSchema reads the SchemaFile of the result folder dir. A folder written before folders
// carried one has none: the error then satisfies errors.Is(err, fs.ErrNotExist), and
// Reader.Schema gives the same description from the tables.
func ReadSchema(dir string) ([]FileSchema, error) {
	b, err := ReadRegular(filepath.Join(dir, SchemaFile), MaxManifestBytes)
	if err != nil {
		return nil, err
	}
	return DecodeSchema(bytes.NewReader(b))
}
