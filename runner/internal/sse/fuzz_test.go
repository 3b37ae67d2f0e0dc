package sse

import (
	"bytes"
	"fmt"
	"io"
	"testing"
	"time"
)

// refEvent is an event as the reference parser sees it.
type refEvent struct {
	typ, id, data string
	term          int // offset of the first byte of the dispatching terminator
	termLen       int // 1, or 2 for a CRLF
}

// refParse is a deliberately plain reading of the standard over a whole input, with this
// package's one deviation: a final event without a blank line is dispatched at the end.
func refParse(in []byte) []refEvent {
	pos := 0
	if bytes.HasPrefix(in, []byte("\xEF\xBB\xBF")) {
		pos = 3
	}
	var (
		evs      []refEvent
		data     string
		haveData bool
		typ, id  string
	)
	dispatch := func(term, termLen int) {
		t := typ
		if t == "" {
			t = "message"
		}
		evs = append(evs, refEvent{t, id, data, term, termLen})
		data, haveData, typ = "", false, ""
	}
	for pos < len(in) {
		end, termLen := len(in), 0
		for i := pos; i < len(in); i++ {
			if in[i] == '\n' {
				end, termLen = i, 1
				break
			}
			if in[i] == '\r' {
				end, termLen = i, 1
				if i+1 < len(in) && in[i+1] == '\n' {
					termLen = 2
				}
				break
			}
		}
		line := string(in[pos:end])
		next := end + termLen
		switch {
		case line == "":
			if haveData {
				dispatch(end, termLen)
			} else {
				typ = ""
			}
		case line[0] == ':':
		default:
			name, value := line, ""
			for i := 0; i < len(line); i++ {
				if line[i] == ':' {
					name, value = line[:i], line[i+1:]
					if len(value) > 0 && value[0] == ' ' {
						value = value[1:]
					}
					break
				}
			}
			switch name {
			case "data":
				if haveData {
					data += "\n"
				}
				data += value
				haveData = true
			case "event":
				typ = value
			case "id":
				nul := false
				for i := 0; i < len(value); i++ {
					nul = nul || value[i] == 0
				}
				if !nul {
					id = value
				}
			}
		}
		pos = next
	}
	if haveData {
		dispatch(len(in)-1, 1)
	}
	return evs
}

// chunkReader delivers its input in pieces whose sizes come from a pattern, with an occasional
// empty read, and logs which bytes each call delivered.
type chunkReader struct {
	in      []byte
	pos     int
	pattern []byte
	k       int
	ends    []int // ends[i] is the input offset after the i-th call
	lastNil bool
}

func (r *chunkReader) Read(p []byte) (int, error) {
	defer func() { r.ends = append(r.ends, r.pos) }()
	if r.pos == len(r.in) {
		return 0, io.EOF
	}
	size := 3
	if len(r.pattern) > 0 {
		size = int(r.pattern[r.k%len(r.pattern)] % 9)
		r.k++
	}
	if size == 0 && !r.lastNil {
		r.lastNil = true
		return 0, nil
	}
	r.lastNil = false
	size = max(size, 1)
	size = min(size, len(p), len(r.in)-r.pos)
	copy(p, r.in[r.pos:r.pos+size])
	r.pos += size
	return size, nil
}

// callOf returns the index of the Read call that delivered input byte off.
func (r *chunkReader) callOf(off int) int {
	for i, end := range r.ends {
		if end > off {
			return i
		}
	}
	return -1
}

func FuzzScanner(f *testing.F) {
	f.Add([]byte("data: a\n\ndata: b\r\n\r\n"), []byte{1})
	f.Add([]byte("\xEF\xBB\xBFevent: e\rid: 1\rdata: x\r\r: c\ndata\n\n"), []byte{2, 0, 5})
	f.Add([]byte("data: {\"error\":1}\ndata: [DONE]"), []byte{7})
	f.Add([]byte("data:a\r\n\r\ndata:b\r\r\n"), []byte{4, 1})
	f.Add([]byte("retry: 10\nid: a\x00\n\n\n"), []byte{})
	f.Fuzz(checkScanner)
}

// checkScanner compares the Scanner with refParse on one input, read whole and in pieces.
func checkScanner(t *testing.T, in, pattern []byte) {
	{
		want := refParse(in)

		// Whole input in one read: events and exact byte counts.
		sc := NewScanner(bytes.NewReader(in), WithBufferSize(len(in)+16))
		var evs []Event
		var sizes []int
		for sc.Scan() {
			ev := sc.Event()
			ev.Data = bytes.Clone(ev.Data)
			evs = append(evs, ev)
			sizes = append(sizes, ev.Bytes)
		}
		if sc.Err() != nil {
			t.Fatalf("whole: Err() = %v", sc.Err())
		}
		compare(t, "whole", evs, want)
		prevEnd := 0
		for i, w := range want {
			end := w.term + w.termLen
			if i == len(want)-1 && end > len(in) {
				end = len(in)
			}
			if i < len(sizes) && sizes[i] != end-prevEnd {
				t.Errorf("whole: event %d Bytes = %d, want %d", i, sizes[i], end-prevEnd)
			}
			prevEnd = end
		}
		if sum(sizes)+sc.Tail() != len(in) {
			t.Errorf("whole: Bytes sum %d + Tail %d != input length %d", sum(sizes), sc.Tail(), len(in))
		}

		// Pieces from the pattern, a tiny buffer, and a clock that counts reads: the same
		// events, each stamped by the read that delivered its dispatching terminator.
		cr := &chunkReader{in: in, pattern: pattern}
		calls := 0
		clock := func() time.Time { calls++; return time.Unix(int64(calls-1), 0) }
		sc = NewScanner(cr, WithBufferSize(16), WithClock(clock))
		evs, sizes = evs[:0], sizes[:0]
		for sc.Scan() {
			ev := sc.Event()
			ev.Data = bytes.Clone(ev.Data)
			evs = append(evs, ev)
			sizes = append(sizes, ev.Bytes)
		}
		if sc.Err() != nil {
			t.Fatalf("pieces: Err() = %v", sc.Err())
		}
		compare(t, "pieces", evs, want)
		for i, w := range want {
			if i >= len(evs) {
				break
			}
			if call := cr.callOf(w.term); evs[i].At.Unix() != int64(call) {
				t.Errorf("pieces: event %d At = read %d, want read %d", i, evs[i].At.Unix(), call)
			}
		}
		if sum(sizes)+sc.Tail() != len(in) {
			t.Errorf("pieces: Bytes sum %d + Tail %d != input length %d", sum(sizes), sc.Tail(), len(in))
		}
	}
}

func compare(t *testing.T, mode string, evs []Event, want []refEvent) {
	t.Helper()
	if len(evs) != len(want) {
		t.Fatalf("%s: %d events, reference has %d\n got %s\nwant %v", mode, len(evs), len(want), fmtEvents(evs), want)
	}
	for i, w := range want {
		e := evs[i]
		if e.Type != w.typ || e.ID != w.id || string(e.Data) != w.data {
			t.Errorf("%s: event %d = {%q %q %q}, reference {%q %q %q}", mode, i, e.Type, e.ID, e.Data, w.typ, w.id, w.data)
		}
		if e.Bytes <= 0 {
			t.Errorf("%s: event %d has Bytes %d", mode, i, e.Bytes)
		}
	}
}

func fmtEvents(evs []Event) string {
	var b bytes.Buffer
	for _, e := range evs {
		fmt.Fprintf(&b, "{%q %q %q %d} ", e.Type, e.ID, e.Data, e.Bytes)
	}
	return b.String()
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
