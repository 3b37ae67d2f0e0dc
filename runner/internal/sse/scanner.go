// Package sse reads a server-sent event stream, as the WHATWG HTML standard's "event stream
// interpretation" defines it, and timestamps every event with the moment its last byte arrived.
//
// The reader is shaped like bufio.Scanner:
//
//	sc := sse.NewScanner(resp.Body)
//	for sc.Scan() {
//		ev := sc.Event() // ev.Data is valid until the next call to Scan
//		...
//	}
//	if err := sc.Err(); err != nil { ... }
//
// It follows the standard in every respect but one: a stream that ends without the blank line
// that would dispatch its last event still yields that event, if it has data. The standard
// discards it, but LLM servers commonly end a stream with "data: [DONE]" and no newline at all,
// and a caller must see that [DONE] to tell a complete stream from a truncated one. A stream cut
// by a read error other than io.EOF yields no such partial event.
package sse

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"
)

// Defaults for the Scanner's options.
const (
	// DefaultMaxSize is the default limit on one line and on one event's data, in bytes.
	DefaultMaxSize = 1 << 20
	// DefaultBufferSize is the default size of the first read buffer, in bytes.
	DefaultBufferSize = 4096
	// DefaultMaxIdleLines is the default limit on the lines between two events that carry no
	// data (comments, other fields, blank lines that dispatch nothing). A server that sends a
	// keep-alive comment every 15 s while it is busy reaches it after some 40 hours; one that
	// sends nothing else in a loop, within a second.
	DefaultMaxIdleLines = 10000
)

// ErrTooLarge is returned (wrapped) by Err when a line or an event's data exceeds the limit.
var ErrTooLarge = errors.New("event too large")

// ErrNoEvent is returned (wrapped) by Err when more lines, or more bytes, than the limits allow
// arrive without an event: a stream of nothing but comments or "event:" lines. The data of an
// event is bounded by the size limit; this bounds what comes between events in the same way,
// so that such a stream ends the read rather than running until the caller's deadline.
var ErrNoEvent = errors.New("no event")

// maxEmptyReads is how many consecutive (0, nil) reads the Scanner tolerates before it gives
// up with io.ErrNoProgress, as bufio.Scanner does.
const maxEmptyReads = 100

// Event is one dispatched event.
type Event struct {
	// Type is the event type: the last "event" field's value, or "message" when the event had
	// none, as the standard says.
	Type string
	// ID is the last event ID at the time of dispatch (the "id" field persists across events).
	ID string
	// Data is the event's data: the values of its "data" lines joined with "\n". It aliases the
	// Scanner's buffer and is valid only until the next call to Scan; copy it to keep it.
	Data []byte
	// Bytes is the number of raw bytes on the wire that this event accounts for: every byte
	// after the previous event's, through the terminator of the line that dispatched this one.
	// Comment lines, ignored fields and blank lines that dispatched nothing count toward the
	// next event. The bytes of a CRLF count with the event when both have arrived by the time
	// it is dispatched; an LF that arrives in a later read counts toward the next event.
	Bytes int
	// At is when the final byte of the event arrived: the time taken right after the Read
	// call that delivered the terminator of the dispatching blank line (for a final event
	// without one, the Read that delivered the stream's last byte).
	At time.Time
}

// Option configures a Scanner.
type Option func(*Scanner)

// WithClock replaces time.Now as the source of arrival times, for tests.
func WithClock(now func() time.Time) Option {
	return func(s *Scanner) { s.now = now }
}

// WithMaxSize sets the limit, in bytes, on one line and on one event's data. A stream that
// exceeds it stops with an error wrapping ErrTooLarge. Values below 1 keep the default.
func WithMaxSize(n int) Option {
	return func(s *Scanner) {
		if n > 0 {
			s.max = n
		}
	}
}

// WithMaxIdleLines sets the limit on the lines that may arrive between two events without
// carrying data. A stream that exceeds it stops with an error wrapping ErrNoEvent; so does one
// whose bytes between two events, data lines aside, exceed the size limit (WithMaxSize). Values
// below 1 keep the default.
func WithMaxIdleLines(n int) Option {
	return func(s *Scanner) {
		if n > 0 {
			s.maxIdle = n
		}
	}
}

// WithBufferSize sets the size of the first read buffer. The buffer grows as long lines need,
// up to the size limit. Values below 16 keep the default.
func WithBufferSize(n int) Option {
	return func(s *Scanner) {
		if n >= 16 {
			s.bufSize = n
		}
	}
}

// WithSpaceLinesAsBlank makes a line of only spaces and tabs count as a blank line. The
// standard does not allow this (such a line is a field named by its spaces, which is ignored),
// but a stream copied from a terminal can carry such padding where the blank lines were.
func WithSpaceLinesAsBlank() Option {
	return func(s *Scanner) { s.spaceBlank = true }
}

// Scanner reads events from an io.Reader. It never waits for more input while a complete
// event is buffered: each Read asks only for what is available, and buffered events are
// returned before the next Read.
type Scanner struct {
	r          io.Reader
	now        func() time.Time
	max        int
	maxIdle    int
	bufSize    int
	spaceBlank bool

	buf        []byte
	start, end int       // unparsed input is buf[start:end]
	readAt     time.Time // time of the latest Read that returned bytes
	eof        bool
	err        error
	done       bool
	emptyReads int

	bomChecked bool
	skipLF     bool // the last line ended in CR: an LF right after it is part of its terminator
	line       int  // lines parsed so far, for error messages
	searched   int  // bytes after start already searched for a line end, so none is scanned twice
	pending    int  // raw bytes parsed since the last dispatched event
	tail       int
	// idleLines and idleBytes count the lines, and their bytes, since the last dispatched
	// event that carried no data, for the limits that ErrNoEvent enforces.
	idleLines, idleBytes int

	data     []byte
	haveData bool
	typ      string
	lastID   string
	retry    time.Duration

	ev Event
}

// NewScanner returns a Scanner that reads from r.
func NewScanner(r io.Reader, opts ...Option) *Scanner {
	s := &Scanner{r: r, now: time.Now, max: DefaultMaxSize, maxIdle: DefaultMaxIdleLines, bufSize: DefaultBufferSize}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Scan advances to the next event, which Event then returns. It returns false at the end of the
// stream or on an error; Err tells which.
func (s *Scanner) Scan() bool {
	if s.done {
		return false
	}
	for {
		if !s.bomChecked && !s.checkBOM() {
			if !s.fill() {
				return s.finish()
			}
			continue
		}
		for {
			line, ok, err := s.nextLine()
			if err != nil {
				s.fail(err)
				return false
			}
			if !ok {
				break
			}
			dispatch, err := s.processLine(line)
			if err != nil {
				s.fail(err)
				return false
			}
			if dispatch {
				s.dispatch()
				return true
			}
		}
		if !s.fill() {
			return s.finish()
		}
	}
}

// Event returns the event found by the last call to Scan.
func (s *Scanner) Event() Event { return s.ev }

// Err returns the first error other than io.EOF that the Scanner met.
func (s *Scanner) Err() error { return s.err }

// Retry returns the reconnection time the stream last asked for with a "retry" field, or zero.
func (s *Scanner) Retry() time.Duration { return s.retry }

// Tail returns the number of bytes at the end of the stream that belong to no event (blank
// lines, comments, fields of an event that never got data). Once Scan has returned false
// without an error, the Bytes of all events plus Tail is the length of the stream.
func (s *Scanner) Tail() int { return s.tail }

// fail stops the scanner with err.
func (s *Scanner) fail(err error) {
	s.err = err
	s.done = true
}

// checkBOM drops a leading UTF-8 byte order mark. It reports false when too few bytes have
// arrived to decide.
func (s *Scanner) checkBOM() bool {
	const bom = "\xEF\xBB\xBF"
	b := s.buf[s.start:s.end]
	if len(b) < len(bom) && !s.eof && s.err == nil && bytes.HasPrefix([]byte(bom), b) {
		return false
	}
	if bytes.HasPrefix(b, []byte(bom)) {
		s.start += len(bom)
		s.pending += len(bom)
	}
	s.bomChecked = true
	return true
}

// nextLine returns the next complete line in the buffer, without its terminator, and consumes
// it. It reports false when no complete line is buffered.
func (s *Scanner) nextLine() ([]byte, bool, error) {
	if s.skipLF && s.start < s.end {
		if s.buf[s.start] == '\n' {
			s.start++
			s.pending++
		}
		s.skipLF = false
	}
	b := s.buf[s.start:s.end]
	from := min(s.searched, len(b))
	lf := bytes.IndexByte(b[from:], '\n')
	if lf >= 0 {
		lf += from
	}
	search := b[from:]
	if lf >= 0 {
		search = b[from:lf]
	}
	cr := bytes.IndexByte(search, '\r')
	if cr >= 0 {
		cr += from
	}
	var line []byte
	switch {
	case cr >= 0:
		line = b[:cr]
		n := cr + 1
		if n < len(b) {
			if b[n] == '\n' {
				n++
			}
		} else {
			s.skipLF = true
		}
		s.start += n
		s.pending += n
	case lf >= 0:
		line = b[:lf]
		s.start += lf + 1
		s.pending += lf + 1
	default:
		if len(b) > s.max {
			return nil, false, fmt.Errorf("line %d: longer than %d bytes: %w", s.line+1, s.max, ErrTooLarge)
		}
		s.searched = len(b)
		return nil, false, nil
	}
	s.searched = 0
	if len(line) > s.max {
		return nil, false, fmt.Errorf("line %d: longer than %d bytes: %w", s.line+1, s.max, ErrTooLarge)
	}
	return line, true, nil
}

// processLine interprets one line and reports whether it dispatches an event.
func (s *Scanner) processLine(line []byte) (bool, error) {
	s.line++
	if !bytes.HasPrefix(line, []byte("data")) || (len(line) > 4 && line[4] != ':') {
		// Not a data line (those are bounded by the size of the event's data): a comment, a
		// blank line or another field counts toward the limits on what comes between events.
		s.idleLines++
		s.idleBytes += len(line) + 1
		if s.idleLines > s.maxIdle {
			return false, fmt.Errorf("line %d: %d lines without an event: %w", s.line, s.maxIdle, ErrNoEvent)
		}
		if s.idleBytes > s.max {
			return false, fmt.Errorf("line %d: more than %d bytes without an event: %w", s.line, s.max, ErrNoEvent)
		}
	}
	if len(line) == 0 || (s.spaceBlank && isSpaces(line)) {
		if !s.haveData {
			s.typ = ""
			return false, nil
		}
		return true, nil
	}
	if line[0] == ':' {
		return false, nil
	}
	var name, value []byte
	if c := bytes.IndexByte(line, ':'); c >= 0 {
		name, value = line[:c], line[c+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	} else {
		name = line
	}
	switch string(name) {
	case "data":
		grow := len(value)
		if s.haveData {
			grow++
		}
		if len(s.data)+grow > s.max {
			return false, fmt.Errorf("line %d: event data longer than %d bytes: %w", s.line, s.max, ErrTooLarge)
		}
		if s.haveData {
			s.data = append(s.data, '\n')
		}
		s.data = append(s.data, value...)
		s.haveData = true
	case "event":
		if s.typ != string(value) {
			s.typ = string(value)
		}
	case "id":
		if bytes.IndexByte(value, 0) < 0 && s.lastID != string(value) {
			s.lastID = string(value)
		}
	case "retry":
		if ms, ok := parseDigits(value); ok {
			s.retry = time.Duration(ms) * time.Millisecond
		}
	}
	return false, nil
}

// dispatch turns the buffered fields into the current event and resets them.
func (s *Scanner) dispatch() {
	// A CRLF whose LF has already arrived belongs to this event.
	if s.skipLF && s.start < s.end {
		if s.buf[s.start] == '\n' {
			s.start++
			s.pending++
		}
		s.skipLF = false
	}
	typ := s.typ
	if typ == "" {
		typ = "message"
	}
	s.ev = Event{Type: typ, ID: s.lastID, Data: s.data, Bytes: s.pending, At: s.readAt}
	s.pending = 0
	s.idleLines, s.idleBytes = 0, 0
	s.data = s.data[:0]
	s.haveData = false
	s.typ = ""
}

// finish handles the end of input: at io.EOF the last unterminated line is processed and a
// final event with data is dispatched; after any other error nothing more is yielded.
func (s *Scanner) finish() bool {
	s.done = true
	if s.err != nil {
		return false
	}
	if s.start < s.end {
		line := s.buf[s.start:s.end]
		s.pending += len(line)
		s.start = s.end
		if _, err := s.processLine(line); err != nil {
			s.err = err
			return false
		}
	}
	if s.haveData {
		s.dispatch()
		return true
	}
	s.tail = s.pending
	return false
}

// fill reads more input. It reports false when no more input will come (io.EOF or an error).
func (s *Scanner) fill() bool {
	if s.eof || s.err != nil {
		return false
	}
	if s.buf == nil {
		s.buf = make([]byte, s.bufSize)
	}
	if s.start == s.end {
		s.start, s.end = 0, 0
	} else if s.end == len(s.buf) {
		if s.start > 0 {
			s.end = copy(s.buf, s.buf[s.start:s.end])
			s.start = 0
		}
		if s.end == len(s.buf) {
			n := 2 * len(s.buf)
			if limit := s.max + 2; n > limit {
				n = max(limit, len(s.buf)+1)
			}
			nb := make([]byte, n)
			copy(nb, s.buf[:s.end])
			s.buf = nb
		}
	}
	n, err := s.r.Read(s.buf[s.end:])
	t := s.now()
	if n < 0 || n > len(s.buf)-s.end {
		s.err = fmt.Errorf("reader returned an impossible count %d", n)
		return false
	}
	if n > 0 {
		s.end += n
		s.readAt = t
		s.emptyReads = 0
	}
	switch {
	case err == io.EOF:
		s.eof = true
	case err != nil:
		s.err = err
	case n == 0:
		s.emptyReads++
		if s.emptyReads >= maxEmptyReads {
			s.err = io.ErrNoProgress
		}
	}
	// Bytes that arrived with an error are parsed before the error is acted on.
	return n > 0 || (!s.eof && s.err == nil)
}

// isSpaces reports whether b holds only spaces and tabs.
func isSpaces(b []byte) bool {
	for _, c := range b {
		if c != ' ' && c != '\t' {
			return false
		}
	}
	return true
}

// parseDigits parses a non-empty string of ASCII digits, as the "retry" field requires.
func parseDigits(b []byte) (int64, bool) {
	if len(b) == 0 {
		return 0, false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
