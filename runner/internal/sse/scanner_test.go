package sse

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"testing/iotest"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/golden")

// got is an event reduced to what a table can state.
type got struct {
	Type, ID, Data string
	Bytes          int
}

func scanAll(t *testing.T, r io.Reader, opts ...Option) ([]got, *Scanner) {
	t.Helper()
	sc := NewScanner(r, opts...)
	var evs []got
	for sc.Scan() {
		ev := sc.Event()
		evs = append(evs, got{ev.Type, ev.ID, string(ev.Data), ev.Bytes})
	}
	return evs, sc
}

func TestScannerTable(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want []got
		tail int
	}{
		{"lf", "data: a\n\ndata: b\n\n", []got{{"message", "", "a", 9}, {"message", "", "b", 9}}, 0},
		{"crlf", "data: a\r\n\r\ndata: b\r\n\r\n", []got{{"message", "", "a", 11}, {"message", "", "b", 11}}, 0},
		{"cr", "data: a\r\rdata: b\r\r", []got{{"message", "", "a", 9}, {"message", "", "b", 9}}, 0},
		{"mixed endings", "data: a\r\ndata: b\rdata: c\n\r\n", []got{{"message", "", "a\nb\nc", 27}}, 0},
		{"no space after colon", "data:x\n\n", []got{{"message", "", "x", 8}}, 0},
		{"only one space removed", "data:  x \n\n", []got{{"message", "", " x ", 11}}, 0},
		{"multi-line data joined", "data: a\ndata: b\ndata: c\n\n", []got{{"message", "", "a\nb\nc", 25}}, 0},
		{"data without colon is an empty line", "data\n\n", []got{{"message", "", "", 6}}, 0},
		{"two empty data lines", "data:\ndata:\n\n", []got{{"message", "", "\n", 13}}, 0},
		{"comments ignored", ": hi\ndata: a\n: there\n\n", []got{{"message", "", "a", 22}}, 0},
		{"leading BOM dropped", "\xEF\xBB\xBFdata: a\n\n", []got{{"message", "", "a", 12}}, 0},
		{"only the first BOM", "\xEF\xBB\xBF\xEF\xBB\xBFdata: a\n\ndata: b\n\n", []got{{"message", "", "b", 24}}, 0},
		{"event type and reset", "event: add\ndata: 1\n\ndata: 2\n\n", []got{{"add", "", "1", 20}, {"message", "", "2", 9}}, 0},
		{"type without data is dropped", "event: x\n\ndata: 1\n\n", []got{{"message", "", "1", 19}}, 0},
		{"id persists", "id: 5\ndata: 1\n\ndata: 2\n\nid\ndata: 3\n\n", []got{{"message", "5", "1", 15}, {"message", "5", "2", 9}, {"message", "", "3", 12}}, 0},
		{"id with NUL ignored", "id: 1\ndata: a\n\nid: 2\x003\ndata: b\n\n", []got{{"message", "1", "a", 15}, {"message", "1", "b", 17}}, 0},
		{"unknown field ignored", "foo: bar\ndata: a\n\n", []got{{"message", "", "a", 18}}, 0},
		{"final event without blank line", "data: a\n\ndata: [DONE]", []got{{"message", "", "a", 9}, {"message", "", "[DONE]", 12}}, 0},
		{"final event with one newline", "data: [DONE]\n", []got{{"message", "", "[DONE]", 13}}, 0},
		{"trailing comment is tail", "data: a\n\n: bye\n", []got{{"message", "", "a", 9}}, 6},
		{"trailing blank lines are tail", "data: a\n\n\n\n", []got{{"message", "", "a", 9}}, 2},
		{"empty stream", "", nil, 0},
		{"error line then done without blank line", "data: {\"error\":1}\ndata: [DONE]\n", []got{{"message", "", "{\"error\":1}\n[DONE]", 31}}, 0},
		{"space-padded lines are not blank", "data:a  \n   \ndata:b\n", []got{{"message", "", "a  \nb", 20}}, 0},
		{"bare json lines yield nothing", "{\"a\":1}\n[DONE]", nil, 14},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, mode := range []string{"whole", "one byte"} {
				var r io.Reader = strings.NewReader(tt.in)
				if mode == "one byte" {
					r = iotest.OneByteReader(r)
				}
				evs, sc := scanAll(t, r)
				if err := sc.Err(); err != nil {
					t.Fatalf("%s: Err() = %v", mode, err)
				}
				if mode == "whole" {
					if fmt.Sprint(evs) != fmt.Sprint(tt.want) {
						t.Errorf("%s: events\n got %+v\nwant %+v", mode, evs, tt.want)
					}
				} else if fmt.Sprint(stripBytes(evs)) != fmt.Sprint(stripBytes(tt.want)) {
					// Byte attribution of a CRLF can shift with read boundaries; content cannot.
					t.Errorf("%s: events\n got %+v\nwant %+v", mode, evs, tt.want)
				}
				if sc.Tail() != tt.tail && mode == "whole" {
					t.Errorf("%s: Tail() = %d, want %d", mode, sc.Tail(), tt.tail)
				}
				if sum := sumBytes(evs) + sc.Tail(); sum != len(tt.in) {
					t.Errorf("%s: Bytes sum + Tail = %d, want %d", mode, sum, len(tt.in))
				}
			}
		})
	}
}

func stripBytes(evs []got) []got {
	out := make([]got, len(evs))
	for i, e := range evs {
		e.Bytes = 0
		out[i] = e
	}
	return out
}

func sumBytes(evs []got) int {
	n := 0
	for _, e := range evs {
		n += e.Bytes
	}
	return n
}

func TestRetry(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"retry: 1500\n\n", 1500 * time.Millisecond},
		{"retry: 15x\n\n", 0},
		{"retry:\n\n", 0},
		{"retry: 10\nretry: -5\n\n", 10 * time.Millisecond},
	}
	for _, tt := range tests {
		_, sc := scanAll(t, strings.NewReader(tt.in))
		if sc.Retry() != tt.want {
			t.Errorf("%q: Retry() = %v, want %v", tt.in, sc.Retry(), tt.want)
		}
	}
}

func TestSpaceLinesAsBlank(t *testing.T) {
	in := "data:a  \n   \ndata:b\n \t\n"
	evs, sc := scanAll(t, strings.NewReader(in), WithSpaceLinesAsBlank())
	want := []got{{"message", "", "a  ", 13}, {"message", "", "b", 10}}
	if fmt.Sprint(evs) != fmt.Sprint(want) || sc.Err() != nil {
		t.Errorf("events %+v, err %v; want %+v", evs, sc.Err(), want)
	}
}

// scriptReader returns its chunks one Read at a time and records every call.
type scriptReader struct {
	chunks [][]byte
	err    error // returned after the chunks; io.EOF when nil
	calls  int
}

func (r *scriptReader) Read(p []byte) (int, error) {
	r.calls++
	if len(r.chunks) == 0 {
		if r.err != nil {
			return 0, r.err
		}
		return 0, io.EOF
	}
	n := copy(p, r.chunks[0])
	r.chunks[0] = r.chunks[0][n:]
	if len(r.chunks[0]) == 0 {
		r.chunks = r.chunks[1:]
	}
	return n, nil
}

// counterClock returns 1s, 2s, 3s, ... after the epoch, one step per call.
func counterClock() (func() time.Time, *int) {
	n := 0
	return func() time.Time {
		n++
		return time.Unix(int64(n), 0)
	}, &n
}

func TestArrivalTimes(t *testing.T) {
	clock, _ := counterClock()
	r := &scriptReader{chunks: [][]byte{
		[]byte("data: a\n\ndata: b\n\ndata: c"), // read 1: two events whole, a third begun
		[]byte("\n"),                            // read 2: c's line ends, no blank line yet
		[]byte("\n"),                            // read 3: c dispatched
		[]byte("data: d\r"),                     // read 4
		[]byte("\r"),                            // read 5: CR blank line dispatches d
		[]byte("\ndata: [DONE]"),                // read 6: final event at EOF
	}}
	sc := NewScanner(r, WithClock(clock))
	type stamp struct {
		data string
		at   int64
	}
	var gotStamps []stamp
	for sc.Scan() {
		ev := sc.Event()
		gotStamps = append(gotStamps, stamp{string(ev.Data), ev.At.Unix()})
	}
	want := []stamp{{"a", 1}, {"b", 1}, {"c", 3}, {"d", 5}, {"[DONE]", 6}}
	if fmt.Sprint(gotStamps) != fmt.Sprint(want) || sc.Err() != nil {
		t.Errorf("got %v (err %v), want %v", gotStamps, sc.Err(), want)
	}
}

func TestNoReadWhileEventBuffered(t *testing.T) {
	r := &scriptReader{chunks: [][]byte{[]byte("data: a\n\ndata: b\n\n")}}
	sc := NewScanner(r)
	for i, want := range []string{"a", "b"} {
		if !sc.Scan() {
			t.Fatalf("Scan %d = false, err %v", i, sc.Err())
		}
		if string(sc.Event().Data) != want {
			t.Fatalf("event %d = %q, want %q", i, sc.Event().Data, want)
		}
		if r.calls != 1 {
			t.Fatalf("after event %d the reader was called %d times, want 1", i, r.calls)
		}
	}
}

func TestReadErrorDropsPartialEvent(t *testing.T) {
	boom := errors.New("connection reset")
	r := &scriptReader{chunks: [][]byte{[]byte("data: a\n\ndata: b\n")}, err: boom}
	evs, sc := scanAll(t, r)
	if len(evs) != 1 || evs[0].Data != "a" {
		t.Errorf("events %+v, want only \"a\"", evs)
	}
	if !errors.Is(sc.Err(), boom) {
		t.Errorf("Err() = %v, want %v", sc.Err(), boom)
	}
	if sc.Scan() {
		t.Error("Scan after an error returned true")
	}
}

func TestBytesWithError(t *testing.T) {
	// A reader that returns the last bytes together with io.EOF.
	r := iotest.DataErrReader(strings.NewReader("data: a\n\ndata: b"))
	evs, sc := scanAll(t, r)
	if fmt.Sprint(evs) != fmt.Sprint([]got{{"message", "", "a", 9}, {"message", "", "b", 7}}) || sc.Err() != nil {
		t.Errorf("events %+v, err %v", evs, sc.Err())
	}
}

func TestTooLarge(t *testing.T) {
	tests := []struct {
		name, in string
		line     string
	}{
		{"long line", "data: ok\n\ndata: " + strings.Repeat("x", 100) + "\n\n", "line 3"},
		{"long unterminated line", "data: " + strings.Repeat("x", 100), "line 1"},
		{"long event from short lines", strings.Repeat("data: 0123456789\n", 10) + "\n", "line 6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, sc := scanAll(t, strings.NewReader(tt.in), WithMaxSize(64), WithBufferSize(16))
			err := sc.Err()
			if !errors.Is(err, ErrTooLarge) {
				t.Fatalf("Err() = %v, want ErrTooLarge", err)
			}
			if !strings.Contains(err.Error(), tt.line) {
				t.Errorf("Err() = %q, want it to name %q", err, tt.line)
			}
		})
	}
	// Exactly at the limit is fine.
	in := "data: " + strings.Repeat("x", 58) + "\n\n"
	evs, sc := scanAll(t, strings.NewReader(in), WithMaxSize(64), WithBufferSize(16))
	if sc.Err() != nil || len(evs) != 1 {
		t.Errorf("64-byte line: events %d, err %v", len(evs), sc.Err())
	}
}

// TestNoEvent checks the limits on what comes between two events: lines that carry no data
// (comments, other fields, blank lines) count toward a line limit and a byte limit, and an
// event resets both, so that keep-alives between events never add up.
func TestNoEvent(t *testing.T) {
	tests := []struct {
		name, in string
		events   int
		err      string // "" for no error
	}{
		{"comments", strings.Repeat(": keep-alive\n", 11), 0, "line 11: 10 lines without an event"},
		{"event fields", strings.Repeat("event: ping\n", 6) + strings.Repeat("id: 1\n", 5), 0, "line 11: 10 lines without an event"},
		{"long comments", strings.Repeat(":"+strings.Repeat("x", 70)+"\n", 3), 0, "line 3: more than 200 bytes without an event"},
		{"at the limit", strings.Repeat(": keep-alive\n", 9) + "data: a\n\n", 1, ""},
		{"reset by events", strings.Repeat(strings.Repeat(": keep-alive\n", 9)+"data: a\n\n", 3), 3, ""},
		{"data lines do not count", strings.Repeat("data\n", 20) + "\n", 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			evs, sc := scanAll(t, strings.NewReader(tt.in), WithMaxSize(200), WithMaxIdleLines(10), WithBufferSize(16))
			if len(evs) != tt.events {
				t.Errorf("%d events, want %d", len(evs), tt.events)
			}
			err := sc.Err()
			if tt.err == "" {
				if err != nil {
					t.Errorf("Err() = %v, want none", err)
				}
				return
			}
			if !errors.Is(err, ErrNoEvent) || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Err() = %v, want ErrNoEvent saying %q", err, tt.err)
			}
		})
	}
}

type zeroReader struct{}

func (zeroReader) Read([]byte) (int, error) { return 0, nil }

func TestNoProgress(t *testing.T) {
	_, sc := scanAll(t, zeroReader{})
	if !errors.Is(sc.Err(), io.ErrNoProgress) {
		t.Errorf("Err() = %v, want io.ErrNoProgress", sc.Err())
	}
}

// TestGolden runs every stream in testdata/streams through the Scanner, read whole and one
// byte at a time, and compares the events with testdata/golden.
func TestGolden(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join("testdata", "streams", "*"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, path := range paths {
		if filepath.Ext(path) == ".md" {
			continue
		}
		n++
		name := filepath.Base(path)
		t.Run(name, func(t *testing.T) {
			in, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var opts []Option
			if strings.HasPrefix(name, "terminal_padded") {
				opts = append(opts, WithSpaceLinesAsBlank())
			}
			var out bytes.Buffer
			for _, o := range [][]Option{nil, opts} {
				if o == nil && opts != nil {
					fmt.Fprintf(&out, "# standard\n")
				} else if o != nil {
					fmt.Fprintf(&out, "# WithSpaceLinesAsBlank\n")
				}
				evs, sc := scanAll(t, bytes.NewReader(in), o...)
				if sc.Err() != nil {
					t.Fatalf("Err() = %v", sc.Err())
				}
				for i, e := range evs {
					fmt.Fprintf(&out, "%d type=%s id=%q bytes=%d data=%s\n", i, e.Type, e.ID, e.Bytes, strconv.Quote(e.Data))
				}
				fmt.Fprintf(&out, "tail=%d total=%d\n", sc.Tail(), len(in))
				if sum := sumBytes(evs) + sc.Tail(); sum != len(in) {
					t.Errorf("Bytes sum + Tail = %d, want %d", sum, len(in))
				}
				slow, _ := scanAll(t, iotest.OneByteReader(bytes.NewReader(in)), o...)
				if fmt.Sprint(stripBytes(slow)) != fmt.Sprint(stripBytes(evs)) {
					t.Errorf("one byte at a time gives %+v, whole gives %+v", slow, evs)
				}
				if opts == nil {
					break
				}
			}
			golden := filepath.Join("testdata", "golden", strings.TrimSuffix(name, filepath.Ext(name))+".txt")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("events differ from %s\n got:\n%s\nwant:\n%s", golden, out.Bytes(), want)
			}
		})
	}
	if n == 0 {
		t.Fatal("no streams in testdata/streams")
	}
}
