package measure

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// The requests of a load test carry their index in the prompt, so that what a RoundTripper sees
// of a response can be paired with the record RunLoad hands on for the same index.
const indexTag = "load-request-"

// taggedPrompt returns the prompt of request i of a load test.
func taggedPrompt(i int) string {
	return indexTag + strconv.Itoa(i) + ": KV caching helps inference servers because"
}

// requestIndex reads the index back from a request's body, through GetBody so that the body the
// transport sends is left alone. It returns -1 for a request without a tag.
func requestIndex(req *http.Request) (int, error) {
	if req.GetBody == nil {
		return -1, nil
	}
	body, err := req.GetBody()
	if err != nil {
		return -1, fmt.Errorf("read the body of %s %s again: %w", req.Method, req.URL.Path, err)
	}
	defer body.Close()
	b, err := io.ReadAll(body)
	if err != nil {
		return -1, fmt.Errorf("read the body of %s %s: %w", req.Method, req.URL.Path, err)
	}
	at := bytes.Index(b, []byte(indexTag))
	if at < 0 {
		return -1, nil
	}
	digits := b[at+len(indexTag):]
	n := 0
	for n < len(digits) && digits[n] >= '0' && digits[n] <= '9' {
		n++
	}
	i, err := strconv.Atoi(string(digits[:n]))
	if err != nil {
		return -1, fmt.Errorf("request index in the body of %s %s: %w", req.Method, req.URL.Path, err)
	}
	return i, nil
}

var (
	_ http.RoundTripper = (*indexTee)(nil)
	_ http.RoundTripper = (*stampTap)(nil)
)

// indexTee is a RoundTripper that keeps a copy of every tagged response body by request index,
// so a load test can read the simulator's stamps from the very bytes each request measured.
type indexTee struct {
	base   http.RoundTripper
	mu     sync.Mutex
	bodies map[int]*bytes.Buffer
}

func (t *indexTee) RoundTrip(req *http.Request) (*http.Response, error) {
	i, err := requestIndex(req)
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || i < 0 {
		return resp, err
	}
	buf := new(bytes.Buffer)
	t.mu.Lock()
	if t.bodies == nil {
		t.bodies = make(map[int]*bytes.Buffer)
	}
	t.bodies[i] = buf // a request resent with fewer options keeps only its last attempt
	t.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, buf), resp.Body}
	return resp, nil
}

// body returns the response body of request i.
func (t *indexTee) body(i int) []byte {
	t.mu.Lock()
	defer t.mu.Unlock()
	if b := t.bodies[i]; b != nil {
		return b.Bytes()
	}
	return nil
}

// sentPattern precedes the simulator's send time in a stamped chunk: "sim":{"sent_ns":N,...}.
const sentPattern = `"sent_ns":`

// sentFailure is the failure function of sentPattern (Knuth-Morris-Pratt): sentFailure[m] is
// the length of the longest proper prefix of the pattern that is also a suffix of its first m
// bytes.
var sentFailure = func() []int {
	p := sentPattern
	f := make([]int, len(p)+1)
	for m, k := 1, 0; m < len(p); m++ {
		for k > 0 && p[m] != p[k] {
			k = f[k]
		}
		if p[m] == p[k] {
			k++
		}
		f[m+1] = k
	}
	return f
}()

// sentScanner extracts the send times from a stamped stream as its bytes pass, without keeping
// them: it holds only how much of sentPattern the last bytes matched and the digits of a number
// being read, so a match or a number may span two reads.
type sentScanner struct {
	matched int  // bytes of sentPattern matched so far
	inNum   bool // reading the digits after a full match
	num     int64
	sent    []int64 // Unix nanoseconds, one per stamped event, in stream order
}

// feed scans the next bytes of the stream.
func (s *sentScanner) feed(p []byte) {
	for i := 0; i < len(p); {
		switch {
		case s.inNum:
			c := p[i]
			if c >= '0' && c <= '9' {
				s.num = s.num*10 + int64(c-'0')
				i++
				continue
			}
			s.sent = append(s.sent, s.num)
			s.inNum, s.num = false, 0
		case s.matched > 0:
			// A match begun in an earlier read continues byte by byte.
			i = s.step(p, i)
		default:
			// The fast path: no match in progress, so the next occurrence is found by
			// bytes.Index; without one, only the last len(pattern)-1 bytes can begin a
			// match that the next read completes.
			if at := bytes.Index(p[i:], []byte(sentPattern)); at >= 0 {
				i += at + len(sentPattern)
				s.inNum = true
				continue
			}
			for j := max(i, len(p)-len(sentPattern)+1); j < len(p); {
				j = s.step(p, j)
			}
			return
		}
	}
}

// step feeds p[i] to the Knuth-Morris-Pratt matcher and returns the next index to read.
func (s *sentScanner) step(p []byte, i int) int {
	c := p[i]
	for s.matched > 0 && c != sentPattern[s.matched] {
		s.matched = sentFailure[s.matched]
	}
	if c == sentPattern[s.matched] {
		s.matched++
	}
	if s.matched == len(sentPattern) {
		s.matched, s.inNum = 0, true
	}
	return i + 1
}

// stampTap is a RoundTripper that reads the simulator's send times from every tagged response
// as its bytes pass on their way to the client: it adds a scan of each read to the measured
// path (about a nanosecond a byte) and keeps no copy of the stream.
type stampTap struct {
	base  http.RoundTripper
	mu    sync.Mutex
	byReq map[int]*sentScanner
}

func newStampTap(base http.RoundTripper) *stampTap {
	return &stampTap{base: base, byReq: make(map[int]*sentScanner)}
}

func (t *stampTap) RoundTrip(req *http.Request) (*http.Response, error) {
	i, err := requestIndex(req)
	if err != nil {
		return nil, err
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || i < 0 {
		return resp, err
	}
	sc := &sentScanner{sent: make([]int64, 0, 64)}
	t.mu.Lock()
	t.byReq[i] = sc // a request resent with fewer options keeps only its last attempt
	t.mu.Unlock()
	resp.Body = &tapBody{ReadCloser: resp.Body, sc: sc}
	return resp, nil
}

// take returns the send times of request i's events and forgets them.
func (t *stampTap) take(i int) []int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	sc := t.byReq[i]
	delete(t.byReq, i)
	if sc == nil {
		return nil
	}
	return sc.sent
}

// tapBody is a response body whose bytes a sentScanner sees as they are read.
type tapBody struct {
	io.ReadCloser
	sc *sentScanner
}

func (b *tapBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.sc.feed(p[:n])
	return n, err
}

// TestSentScanner checks that the send times come out of a stream whatever the read
// boundaries, a pattern or a number split across reads included, and that near misses of the
// pattern are no match.
func TestSentScanner(t *testing.T) {
	ts := startSim(t, func(c *sim.Config) { c.TokensPerEvent = []int{1, 3} })
	tr := &tee{}
	c := newClient(ts, tr)
	rec, err := c.Do(context.Background(), spec(openai.Chat, 9))
	if err != nil || rec.Status != record.StatusOK {
		t.Fatalf("%v %s %s", err, rec.ErrorClass, rec.Error)
	}
	stream := tr.last()
	var fromSim []int64
	for _, g := range stamps(t, stream) {
		fromSim = append(fromSim, g.sent.UnixNano())
	}
	tests := []struct {
		name   string
		stream string
		want   []int64
	}{
		{"simulator stream", string(stream), fromSim},
		{"a quote that restarts the match", `{"sent_ns""sent_ns":12,"x":1}`, []int64{12}},
		{"near misses", `"sent_n":1 "sent_ns" :2 sent_ns":3 "sent_ns":4}`, []int64{4}},
		{"back to back", `"sent_ns":1,"sent_ns":23}`, []int64{1, 23}},
		{"nothing", `data: {"choices":[]}`, nil},
	}
	for _, tt := range tests {
		for _, size := range []int{1, 2, 3, 7, 10, 64, len(tt.stream)} {
			var s sentScanner
			for p := tt.stream; p != ""; {
				n := min(size, len(p))
				s.feed([]byte(p[:n]))
				p = p[n:]
			}
			if !slices.Equal(s.sent, tt.want) {
				t.Errorf("%s, reads of %d bytes: %v, want %v", tt.name, size, s.sent, tt.want)
			}
		}
	}
	if len(fromSim) != rec.Events {
		t.Errorf("simulator stamped %d events, client saw %d", len(fromSim), rec.Events)
	}
}
