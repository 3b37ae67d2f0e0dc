package results

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// OutputRow is one line of outputs.jsonl: the text a request generated. Free text lives in
// JSON Lines files so that the CSV files never hold a line break.
type OutputRow struct {
	RequestID string `json:"request_id"`
	ConfigID  string `json:"config_id"`
	Seq       int    `json:"seq"`
	Text      string `json:"text"`
}

// ErrorRow is one line of errors.jsonl: why a request failed, in full.
type ErrorRow struct {
	RequestID  string            `json:"request_id"`
	ConfigID   string            `json:"config_id"`
	Seq        int               `json:"seq"`
	ErrorClass record.ErrorClass `json:"error_class"`
	Error      string            `json:"error"`
}

// encodeJSONLine renders v as one JSON line whose first field is schema_version. v must be a
// struct with at least one field. Invalid UTF-8 in strings becomes U+FFFD.
func encodeJSONLine(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	body := buf.Bytes() // "{...}\n"
	out := make([]byte, 0, len(body)+20)
	out = append(out, `{"schema_version":`+strconv.Itoa(FormatVersion)+`,`...)
	return append(out, body[1:]...), nil
}

// JSONLEncoder writes rows of a JSON Lines result file, one Write call per row.
type JSONLEncoder[T any] struct {
	w    io.Writer
	file string
}

// Encode writes one row as one line.
func (e *JSONLEncoder[T]) Encode(v *T) error {
	b, err := encodeJSONLine(v)
	if err != nil {
		return fmt.Errorf("encode %s row: %w", e.file, err)
	}
	if _, err := e.w.Write(b); err != nil {
		return fmt.Errorf("write %s row: %w", e.file, err)
	}
	return nil
}

// JSONLFile is one JSON Lines file of a result folder: free text, one row per line, each line
// a JSON object whose first field is schema_version.
type JSONLFile[T any] struct {
	file string
}

// OutputsJSONL is outputs.jsonl: the text each request generated.
var OutputsJSONL = &JSONLFile[OutputRow]{file: OutputsFile}

// ErrorsJSONL is errors.jsonl: why each failed request failed, in full.
var ErrorsJSONL = &JSONLFile[ErrorRow]{file: ErrorsFile}

// File returns the file's name in a result folder, e.g. outputs.jsonl.
func (j *JSONLFile[T]) File() string { return j.file }

// NewEncoder returns an encoder of the file's rows that writes to w.
func (j *JSONLFile[T]) NewEncoder(w io.Writer) *JSONLEncoder[T] {
	return &JSONLEncoder[T]{w: w, file: j.file}
}

// NewScanner returns a scanner of the file's rows read from r; name is the file name that
// errors carry.
func (j *JSONLFile[T]) NewScanner(r io.Reader, name string) *Scanner[T] {
	return newJSONLScanner[T](r, name)
}

func newJSONLScanner[T any](r io.Reader, name string) *Scanner[T] {
	br := bufio.NewReader(r)
	s := &Scanner[T]{name: name}
	var line int
	var off int64
	var torn, eof bool
	s.atEOF = func() bool { return torn }
	s.next = func() (T, int, int64, error) {
		var zero T
		for {
			if eof {
				return zero, 0, off, io.EOF
			}
			b, err := readLine(br, MaxLineBytes)
			start := off
			off += int64(len(b))
			if err == io.EOF {
				eof = true
				if len(b) == 0 {
					return zero, 0, off, io.EOF
				}
				torn = true
			} else if errors.Is(err, errLineCap) {
				return zero, line + 1, start, &LineCapError{File: name, Line: line + 1, Cap: MaxLineBytes}
			} else if err != nil {
				return zero, line + 1, start, fmt.Errorf("%s:%d: %w", name, line+1, err)
			}
			line++
			if len(bytes.TrimSpace(b)) == 0 {
				if torn {
					return zero, line, start, nil // blank torn tail: Scan reports it as torn
				}
				continue
			}
			var head struct {
				Version *json.RawMessage `json:"schema_version"`
			}
			if err := json.Unmarshal(b, &head); err != nil {
				return zero, line, start, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			if head.Version == nil {
				return zero, line, start, fmt.Errorf("%s:%d: no schema_version field: not a result file of this format", name, line)
			}
			if v := string(*head.Version); v != strconv.Itoa(FormatVersion) {
				return zero, line, start, &VersionError{File: name, Line: line, Version: v}
			}
			var rec T
			if err := json.Unmarshal(b, &rec); err != nil {
				return zero, line, start, fmt.Errorf("%s:%d: %w", name, line, err)
			}
			return rec, line, start, nil
		}
	}
	return s
}

// errLineCap is readLine's report of a line past its cap.
var errLineCap = errors.New("line past the cap")

// readLine reads one line of br with its line break, as br.ReadBytes('\n') does, but fails with
// errLineCap once the line holds more than limit bytes, so that a line that never ends is not
// read into memory whole.
func readLine(br *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(frag) > limit {
			return nil, errLineCap
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}
