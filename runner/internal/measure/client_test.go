package measure

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/sim"
	"github.com/onelayerdown/runner/runner/internal/sse"
	"github.com/onelayerdown/runner/runner/internal/tokens"
)

// singleBound bounds the median lag of one stream's events, measured from the simulator's send
// stamp to the client's reading (see lateBound for what is checked and why a stall of the
// machine cannot fail it). On loopback a written event reaches the reader in tens of
// microseconds; the bound leaves room for a reader goroutine that a busy 2-core machine starts
// a few time slices late, and stays below half the decode step, so that an event timed after
// the next one was read, or after the whole stream, is caught.
const (
	singleBound  = 10 * time.Millisecond
	singleDecode = 25 * time.Millisecond
)

// startSim starts an in-process simulator whose every chunk carries its send time.
func startSim(t *testing.T, mutate func(*sim.Config)) *httptest.Server {
	t.Helper()
	c := sim.DefaultConfig()
	c.Model = "sim-model"
	c.Seed = 11
	c.Stamp = true
	c.DevMode = true
	if mutate != nil {
		mutate(&c)
	}
	s, err := sim.New(c)
	if err != nil {
		t.Fatalf("sim.New: %v", err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() { s.Close(); ts.Close() })
	return ts
}

// tee is a RoundTripper that keeps a copy of every response body, so a test can read the
// simulator's ground-truth stamps from the very bytes the client measured.
type tee struct {
	mu     sync.Mutex
	bodies []*bytes.Buffer
}

func (tr *tee) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tr.mu.Lock()
	tr.bodies = append(tr.bodies, &buf)
	tr.mu.Unlock()
	resp.Body = struct {
		io.Reader
		io.Closer
	}{io.TeeReader(resp.Body, &buf), resp.Body}
	return resp, nil
}

func (tr *tee) last() []byte {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return tr.bodies[len(tr.bodies)-1].Bytes()
}

// truth is the simulator's stamp on one chunk.
type truth struct {
	sent   time.Time
	tokens int
	text   bool
}

// stamps reads the ground truth of every chunk of a stream, in order, [DONE] excluded.
func stamps(t *testing.T, body []byte) []truth {
	t.Helper()
	var out []truth
	sc := sse.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		data := sc.Event().Data
		if string(data) == "[DONE]" {
			continue
		}
		var v struct {
			Sim struct {
				SentNS int64 `json:"sent_ns"`
				Tokens int   `json:"tokens"`
			} `json:"sim"`
		}
		if err := json.Unmarshal(data, &v); err != nil {
			t.Fatalf("stamp: %v in %s", err, data)
		}
		ch, err := openai.DecodeChunk(data)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, truth{sent: time.Unix(0, v.Sim.SentNS), tokens: v.Sim.Tokens, text: ch.IsText()})
	}
	return out
}

func newClient(ts *httptest.Server, tr http.RoundTripper) *Client {
	api := &openai.Client{BaseURL: ts.URL}
	c := &Client{API: api, HTTP: &http.Client{Transport: tr}}
	c.Tokenize = func(ctx context.Context, text string) (int, error) {
		res, err := api.Tokenize(ctx, openai.TokenizeRequest{Model: "sim-model", Prompt: text, AddSpecialTokens: ptr(false)})
		return res.Count, err
	}
	return c
}

func spec(api openai.API, maxTokens int) Spec {
	return Spec{
		Params: openai.Params{
			API: api, Model: "sim-model", Prompt: "KV caching helps inference servers because",
			MaxTokens: maxTokens, IgnoreEOS: ptr(true),
			Options: openai.Options{IncludeUsage: true, ContinuousUsage: true, ReturnTokenIDs: true},
		},
		Timeout: 10 * time.Second,
	}
}

func ptr[T any](v T) *T { return &v }

// TestGroundTruth compares what the client measured with the simulator's send times, for
// one-token and multi-token events and for events that split a token's text.
func TestGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("real-time test; skipped with -short")
	}
	tests := []struct {
		name      string
		api       openai.API
		perEvent  []int
		split     int
		maxTokens int
	}{
		{"completions, one token per event", openai.Completions, []int{1}, 0, 24},
		{"chat, one token per event", openai.Chat, []int{1}, 0, 24},
		{"completions, 1-3-1 tokens per event", openai.Completions, []int{1, 3, 1}, 0, 25},
		{"chat, two tokens per event with split text", openai.Chat, []int{2}, 3, 24},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := startSim(t, func(c *sim.Config) {
				c.QueueDelay = 2 * time.Millisecond
				c.PrefillPerToken = 500 * time.Microsecond
				c.DecodePerToken = singleDecode
				c.TokensPerEvent = tt.perEvent
				c.SplitEvery = tt.split
			})
			tr := &tee{}
			c := newClient(ts, tr)
			// A timing taken in the wrong place is off the same way every time; a machine
			// that stalls the test for a moment (other test binaries, other processes) is
			// not. So the timing checks get three attempts, and fail only when every attempt
			// is off; the attempts that were are logged.
			var rec record.Request
			var gt []truth
			var problems []string
			for attempt := 1; attempt <= 3; attempt++ {
				var err error
				rec, err = c.Do(context.Background(), spec(tt.api, tt.maxTokens))
				if err != nil {
					t.Fatal(err)
				}
				if rec.Status != record.StatusOK {
					t.Fatalf("status %s: %s %s", rec.Status, rec.ErrorClass, rec.Error)
				}
				gt = stamps(t, tr.last())
				if len(gt) != rec.Events {
					t.Fatalf("client saw %d events, server sent %d", rec.Events, len(gt))
				}
				var firstLag time.Duration
				problems, firstLag = truthProblems(rec, gt, singleBound)
				if firstLag > singleBound {
					problems = append(problems, fmt.Sprintf("the first text event arrived %v after it was sent, so ttft is off by that much; want at most %v", firstLag, singleBound))
				}
				if len(problems) == 0 {
					break
				}
				t.Logf("attempt %d: %s", attempt, strings.Join(problems, "; "))
			}
			if len(problems) > 0 {
				t.Errorf("every attempt was off; the last: %s", strings.Join(problems, "; "))
			}
			var textIdx []int
			for i, g := range gt {
				if g.text {
					textIdx = append(textIdx, i)
				}
			}
			totalTokens := 0
			for _, g := range gt {
				totalTokens += g.tokens
			}

			// Events and tokens differ exactly as the chunking says.
			if rec.TextEvents != len(textIdx) {
				t.Errorf("text events = %d, want %d", rec.TextEvents, len(textIdx))
			}
			if rec.OutputTokens == nil || *rec.OutputTokens != tt.maxTokens || totalTokens != tt.maxTokens {
				t.Errorf("output tokens = %v (server stamped %d), want %d", deref(rec.OutputTokens), totalTokens, tt.maxTokens)
			}
			if !rec.TokenSource.Exact() || !rec.TPOTTokenExact {
				t.Errorf("token source %q exact=%v, want per-event counts", rec.TokenSource, rec.TPOTTokenExact)
			}
			if rec.TokensFromTokenize == nil || *rec.TokensFromTokenize != tt.maxTokens {
				t.Errorf("tokenize count = %v, want %d", deref(rec.TokensFromTokenize), tt.maxTokens)
			}
			if rec.FinishReason != "length" {
				t.Errorf("finish reason %q, want length", rec.FinishReason)
			}
			if rec.PromptTokensReported == nil || *rec.PromptTokensReported <= 0 {
				t.Errorf("prompt tokens reported = %v", deref(rec.PromptTokensReported))
			}
		})
	}
}

func deref(p *int) any {
	if p == nil {
		return "<missing>"
	}
	return *p
}

// TestDegrade checks that an option the server rejects is dropped, remembered, and recorded.
func TestDegrade(t *testing.T) {
	faults, err := sim.ParseFaults("refuse=return_token_ids")
	if err != nil {
		t.Fatal(err)
	}
	ts := startSim(t, func(c *sim.Config) { c.Faults = faults })
	c := newClient(ts, http.DefaultTransport)
	for i := range 2 {
		rec, err := c.Do(context.Background(), spec(openai.Completions, 8))
		if err != nil {
			t.Fatal(err)
		}
		if rec.Status != record.StatusOK {
			t.Fatalf("request %d: %s %s", i, rec.ErrorClass, rec.Error)
		}
		if rec.ReturnTokenIDs || !rec.ContinuousUsage {
			t.Errorf("request %d: return_token_ids=%v continuous_usage=%v, want false, true", i, rec.ReturnTokenIDs, rec.ContinuousUsage)
		}
		if rec.TokenSource != record.SourceUsageCont {
			t.Errorf("request %d: token source %q, want %q", i, rec.TokenSource, record.SourceUsageCont)
		}
	}
	if o := c.Options(); o.ReturnTokenIDs || !o.ContinuousUsage {
		t.Errorf("options remembered: %+v", o)
	}
}

// TestIgnoredOptions checks the fallbacks when a server silently ignores the per-event options:
// the final usage gives the total and tpot_token says it is not exact.
func TestIgnoredOptions(t *testing.T) {
	faults, err := sim.ParseFaults("ignore=return_token_ids,ignore=continuous_usage_stats")
	if err != nil {
		t.Fatal(err)
	}
	ts := startSim(t, func(c *sim.Config) { c.Faults = faults; c.TokensPerEvent = []int{2} })
	c := newClient(ts, http.DefaultTransport)
	rec, err := c.Do(context.Background(), spec(openai.Chat, 10))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != record.StatusOK {
		t.Fatalf("%s %s", rec.ErrorClass, rec.Error)
	}
	if rec.TokenSource != record.SourceUsage || rec.TPOTTokenExact {
		t.Errorf("source %q exact %v, want usage and not exact", rec.TokenSource, rec.TPOTTokenExact)
	}
	if *rec.OutputTokens != 10 || rec.TextEvents != 5 {
		t.Errorf("output tokens %d, text events %d; want 10 and 5", *rec.OutputTokens, rec.TextEvents)
	}
	for _, e := range rec.EventList {
		if e.Tokens != nil {
			t.Fatalf("event %d has a token count without per-event counts", e.Seq)
		}
	}
	// The row says what the stream delivered, not what was asked for.
	if rec.ReturnTokenIDs || rec.ContinuousUsage {
		t.Errorf("return_token_ids=%v continuous_usage=%v, want false, false: the server ignored both", rec.ReturnTokenIDs, rec.ContinuousUsage)
	}
}

// TestFailures checks that every kind of broken response becomes a failed row with its class,
// never a measurement.
func TestFailures(t *testing.T) {
	tests := []struct {
		faults  string
		timeout time.Duration
		want    record.ErrorClass
	}{
		{"error@3", 0, record.ErrStreamError},
		{"truncate@3", 0, record.ErrTruncated},
		{"abort@3", 0, record.ErrTruncated},
		{"malformed@2", 0, record.ErrDecode},
		{"status=503", 0, record.ErrHTTPStatus},
		{"hang@3", 300 * time.Millisecond, record.ErrTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.faults, func(t *testing.T) {
			faults, err := sim.ParseFaults(tt.faults)
			if err != nil {
				t.Fatal(err)
			}
			ts := startSim(t, func(c *sim.Config) { c.Faults = faults })
			c := newClient(ts, http.DefaultTransport)
			s := spec(openai.Completions, 16)
			if tt.timeout > 0 {
				s.Timeout = tt.timeout
			}
			rec, err := c.Do(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != record.StatusFailed || rec.ErrorClass != tt.want {
				t.Fatalf("status %s class %q (%s), want failed %q", rec.Status, rec.ErrorClass, rec.Error, tt.want)
			}
			if rec.TTFT != nil || rec.TPOTEvent != nil || rec.TPOTToken != nil || rec.E2E != nil {
				t.Errorf("a failed row carries metrics: %+v", rec)
			}
			if rec.Error == "" {
				t.Error("a failed row without its error text")
			}
		})
	}
}

// TestConnectionRefused checks a server that is not there.
func TestConnectionRefused(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	url := ts.URL
	ts.Close()
	c := &Client{API: &openai.Client{BaseURL: url}}
	rec, err := c.Do(context.Background(), spec(openai.Completions, 4))
	if err != nil {
		t.Fatal(err)
	}
	if rec.ErrorClass != record.ErrConnect {
		t.Fatalf("class %q (%s), want connect", rec.ErrorClass, rec.Error)
	}
}

// TestCanceled checks that stopping the run mid-request is a canceled row, which a resumed run
// sends again.
func TestCanceled(t *testing.T) {
	faults, _ := sim.ParseFaults("hang@2")
	ts := startSim(t, func(c *sim.Config) { c.Faults = faults })
	c := newClient(ts, http.DefaultTransport)
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	rec, err := c.Do(ctx, spec(openai.Completions, 16))
	if err != nil {
		t.Fatal(err)
	}
	if rec.ErrorClass != record.ErrCanceled {
		t.Fatalf("class %q (%s), want canceled", rec.ErrorClass, rec.Error)
	}
}

// TestConnectionReuse checks that a second request reuses the connection and that httptrace's
// moments are in order.
func TestConnectionReuse(t *testing.T) {
	ts := startSim(t, nil)
	c := newClient(ts, NewHTTP().Transport)
	var recs []record.Request
	for range 2 {
		rec, err := c.Do(context.Background(), spec(openai.Completions, 4))
		if err != nil || rec.Status != record.StatusOK {
			t.Fatalf("%v %s %s", err, rec.ErrorClass, rec.Error)
		}
		recs = append(recs, rec)
	}
	if recs[0].ConnReused || !recs[1].ConnReused {
		t.Errorf("conn reused = %v, %v; want false, true", recs[0].ConnReused, recs[1].ConnReused)
	}
	for i, r := range recs {
		order := []time.Duration{*r.WroteRequest, *r.FirstByte, *r.TTFT, *r.LastText, *r.E2E}
		if !slices.IsSorted(order) {
			t.Errorf("request %d: wrote, first byte, ttft, last text, e2e out of order: %v", i, order)
		}
	}
}

// BenchmarkClientPerEvent measures the client's own cost per streamed event: a zero-latency
// simulator streams 256 one-token events per request.
func BenchmarkClientPerEvent(b *testing.B) {
	c := sim.DefaultConfig()
	c.Model = "sim-model"
	s, err := sim.New(c)
	if err != nil {
		b.Fatal(err)
	}
	// Serve a recorded stream from memory so the figure is the client's, not the simulator's.
	ts0 := httptest.NewServer(s)
	resp, err := http.Post(ts0.URL+"/v1/completions", "application/json",
		bytes.NewReader([]byte(`{"model":"sim-model","prompt":"hello","max_tokens":256,"stream":true,"ignore_eos":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true},"return_token_ids":true}`)))
	if err != nil {
		b.Fatal(err)
	}
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	ts0.Close()
	s.Close()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(stream)
	}))
	defer ts.Close()
	cl := &Client{API: &openai.Client{BaseURL: ts.URL}}
	sp := spec(openai.Completions, 256)
	events := 0
	b.ResetTimer()
	for b.Loop() {
		rec, err := cl.Do(context.Background(), sp)
		if err != nil || rec.Status != record.StatusOK {
			b.Fatalf("%v %s %s", err, rec.ErrorClass, rec.Error)
		}
		events += rec.Events
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(events), "ns/event")
}

// serveStream starts a server that answers every request with body, written in one piece.
func serveStream(t *testing.T, body string) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	t.Cleanup(ts.Close)
	return ts
}

// TestDoneInSameEvent checks a chunk followed by "data: [DONE]" with no blank line between
// them, which an SSE reader delivers as one event: the chunk still counts, as text and as usage.
func TestDoneInSameEvent(t *testing.T) {
	tests := []struct {
		name, stream string
		text         string
		textEvents   int
		source       record.TokenSource
	}{
		{
			name: "usage chunk then [DONE]",
			stream: "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n" +
				"data: {\"choices\":[{\"index\":0,\"text\":\" b\",\"finish_reason\":\"length\"}]}\n\n" +
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2,\"total_tokens\":6}}\n" +
				"data: [DONE]\n\n",
			text: "a b", textEvents: 2, source: record.SourceUsage,
		},
		{
			name: "last text chunk then [DONE]",
			stream: "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n" +
				"data: {\"choices\":[{\"index\":0,\"text\":\" b\"}]}\n\n" +
				"data: {\"choices\":[{\"index\":0,\"text\":\" c\",\"finish_reason\":\"length\"}]}\n" +
				"data: [DONE]\n\n",
			text: "a b c", textEvents: 3, source: record.SourceNone,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := serveStream(t, tt.stream)
			c := &Client{API: &openai.Client{BaseURL: ts.URL}}
			rec, err := c.Do(context.Background(), spec(openai.Completions, 3))
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != record.StatusOK {
				t.Fatalf("status %s: %s %s", rec.Status, rec.ErrorClass, rec.Error)
			}
			if rec.OutputText != tt.text || rec.TextEvents != tt.textEvents {
				t.Errorf("text %q in %d text events, want %q in %d", rec.OutputText, rec.TextEvents, tt.text, tt.textEvents)
			}
			if rec.TokenSource != tt.source {
				t.Errorf("token source %q, want %q", rec.TokenSource, tt.source)
			}
			if rec.FinishReason != "length" {
				t.Errorf("finish reason %q, want length", rec.FinishReason)
			}
		})
	}
}

// TestNoTextNoCount checks that a stream without generated text and without usage gets no
// output token count: counting an empty text locally would write 0 tokens where the count is
// unknown (this stream generated a tool call).
func TestNoTextNoCount(t *testing.T) {
	ts := serveStream(t, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":null,\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"\"}}]}}]}\n\n"+
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n"+
		"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"+
		"data: [DONE]\n\n")
	tk, err := tokens.NewTiktoken("")
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{API: &openai.Client{BaseURL: ts.URL}, Tiktoken: tk}
	rec, err := c.Do(context.Background(), spec(openai.Chat, 8))
	if err != nil {
		t.Fatal(err)
	}
	if rec.ErrorClass != record.ErrNoText {
		t.Fatalf("class %q (%s), want no_text", rec.ErrorClass, rec.Error)
	}
	if rec.OutputTokens != nil || rec.TokensFromTiktoken != nil || rec.TokenSource != record.SourceNone || rec.TiktokenEncoding != "" {
		t.Errorf("output tokens %v from %q, tiktoken %v (%q); want no count", deref(rec.OutputTokens), rec.TokenSource, deref(rec.TokensFromTiktoken), rec.TiktokenEncoding)
	}
}

// TestTiktokenOnlyAsLastResort checks that generated text is counted locally only when it is
// the count used: not when the stream or /tokenize gave one (a local count of a long text is
// costly, and another tokenizer's count says nothing about the server).
func TestTiktokenOnlyAsLastResort(t *testing.T) {
	tk, err := tokens.NewTiktoken("")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		opts     openai.Options
		tokenize bool
		source   record.TokenSource
	}{
		{"token ids", openai.Options{IncludeUsage: true, ReturnTokenIDs: true}, true, record.SourceTokenIDs},
		{"final usage", openai.Options{IncludeUsage: true}, false, record.SourceUsage},
		{"tokenize", openai.Options{}, true, record.SourceTokenize},
		{"nothing else", openai.Options{}, false, record.SourceTiktoken},
	}
	ts := startSim(t, nil)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := newClient(ts, http.DefaultTransport)
			c.Tiktoken = tk
			if !tt.tokenize {
				c.Tokenize = nil
			}
			sp := spec(openai.Completions, 8)
			sp.Params.Options = tt.opts
			rec, err := c.Do(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != record.StatusOK {
				t.Fatalf("%s %s", rec.ErrorClass, rec.Error)
			}
			if rec.TokenSource != tt.source || rec.OutputTokens == nil {
				t.Errorf("source %q (%v tokens), want %q", rec.TokenSource, deref(rec.OutputTokens), tt.source)
			}
			local := tt.source == record.SourceTiktoken
			if (rec.TokensFromTiktoken != nil) != local || (rec.TiktokenEncoding != "") != local {
				t.Errorf("tiktoken count %v (%q), want one only when it is the count used", deref(rec.TokensFromTiktoken), rec.TiktokenEncoding)
			}
		})
	}
}

// TestCanceledWhileCounting checks that a run stopped while a finished stream's output is
// being counted makes a canceled request (which is not kept), not a row without its counts.
func TestCanceledWhileCounting(t *testing.T) {
	tk, err := tokens.NewTiktoken("")
	if err != nil {
		t.Fatal(err)
	}
	ts := startSim(t, nil)
	c := newClient(ts, http.DefaultTransport)
	c.Tiktoken = tk
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	c.Tokenize = func(ctx context.Context, text string) (int, error) {
		cancel() // Ctrl-C arrives while the server counts
		<-ctx.Done()
		return 0, ctx.Err()
	}
	sp := spec(openai.Completions, 8)
	sp.Params.Options = openai.Options{}
	rec, err := c.Do(ctx, sp)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ErrorClass != record.ErrCanceled || rec.TTFT != nil {
		t.Errorf("status %s class %q (%s), ttft %v; want a canceled request without metrics", rec.Status, rec.ErrorClass, rec.Error, rec.TTFT)
	}
}

// TestKeptOpenAfterDone checks that a request without a deadline is not held by a server that
// keeps the stream open after [DONE].
func TestKeptOpenAfterDone(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"index\":0,\"text\":\" b\"}]}\n\ndata: [DONE]\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	defer ts.Close()
	c := &Client{API: &openai.Client{BaseURL: ts.URL}}
	s := spec(openai.Completions, 2)
	s.Timeout = 0
	type result struct {
		rec record.Request
		err error
	}
	out := make(chan result, 1)
	go func() {
		rec, err := c.Do(context.Background(), s)
		out <- result{rec, err}
	}()
	select {
	case r := <-out:
		if r.err != nil || r.rec.Status != record.StatusOK || r.rec.TextEvents != 2 {
			t.Fatalf("err %v, status %s (%s), %d text events", r.err, r.rec.Status, r.rec.Error, r.rec.TextEvents)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Do still waits for a stream kept open after [DONE]")
	}
}

// TestFailedKeepsCounts checks that a failed stream keeps its event counts, text events
// included, and has no metrics.
func TestFailedKeepsCounts(t *testing.T) {
	ts := serveStream(t, "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"+
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n"+
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" b\"}}]}\n\n"+
		"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" c\"}}]}\n\n")
	c := &Client{API: &openai.Client{BaseURL: ts.URL}}
	rec, err := c.Do(context.Background(), spec(openai.Chat, 8))
	if err != nil {
		t.Fatal(err)
	}
	if rec.ErrorClass != record.ErrTruncated {
		t.Fatalf("class %q (%s), want truncated", rec.ErrorClass, rec.Error)
	}
	if rec.Events != 4 || rec.TextEvents != 3 {
		t.Errorf("events %d, text events %d; want 4 and 3", rec.Events, rec.TextEvents)
	}
	if rec.TTFT != nil || rec.E2E != nil || rec.TPOTEvent != nil || rec.ITLMedian != nil {
		t.Errorf("a failed row carries metrics: %+v", rec)
	}
}

// TestReasoningTokensFallback checks tpot_token's fallback divisor for a reasoning model whose
// stream has no per-event counts: the usage total counts reasoning tokens, which are no part of
// the answer's span, so they are taken off when the usage says how many; otherwise tpot_token
// stays empty rather than dividing by a count that is not the answer's.
func TestReasoningTokensFallback(t *testing.T) {
	// Two reasoning chunks, then three answer chunks 0 ms apart as served in one write; the
	// span is what it is, only the divisor matters here.
	stream := func(usage string) string {
		return "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":\"think\"}}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\" more\"}}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"a\"}}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" b\"}}]}\n\n" +
			"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" c\"},\"finish_reason\":\"stop\"}]}\n\n" +
			"data: {\"choices\":[],\"usage\":" + usage + "}\n\n" +
			"data: [DONE]\n\n"
	}
	tests := []struct {
		name, usage string
		wantTPOT    bool
		divisor     int
	}{
		{"reasoning tokens reported", `{"prompt_tokens":5,"completion_tokens":43,"total_tokens":48,"completion_tokens_details":{"reasoning_tokens":40}}`, true, 2},
		{"reasoning tokens not reported", `{"prompt_tokens":5,"completion_tokens":43,"total_tokens":48}`, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := serveStream(t, stream(tt.usage))
			c := &Client{API: &openai.Client{BaseURL: ts.URL}}
			rec, err := c.Do(context.Background(), spec(openai.Chat, 64))
			if err != nil || rec.Status != record.StatusOK {
				t.Fatalf("%v %s %s", err, rec.ErrorClass, rec.Error)
			}
			if rec.TextEvents != 3 || *rec.OutputTokens != 43 || rec.TokenSource != record.SourceUsage {
				t.Fatalf("text events %d, output tokens %d from %q", rec.TextEvents, *rec.OutputTokens, rec.TokenSource)
			}
			if !tt.wantTPOT {
				if rec.TPOTToken != nil {
					t.Errorf("tpot_token %v, want empty", *rec.TPOTToken)
				}
				return
			}
			span := rec.EventList[4].SinceT0 - rec.EventList[2].SinceT0
			if rec.TPOTToken == nil || *rec.TPOTToken != span/time.Duration(tt.divisor) || rec.TPOTTokenExact {
				t.Errorf("tpot_token %v, want span %v / %d, not exact", rec.TPOTToken, span, tt.divisor)
			}
		})
	}
}

// TestAbortedFinish checks that a stream the server ended with finish_reason abort is a failed
// request, not a short measurement.
func TestAbortedFinish(t *testing.T) {
	ts := serveStream(t, "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n"+
		"data: {\"choices\":[{\"index\":0,\"text\":\" b\"}]}\n\n"+
		"data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":\"abort\"}]}\n\n"+
		"data: [DONE]\n\n")
	c := &Client{API: &openai.Client{BaseURL: ts.URL}}
	rec, err := c.Do(context.Background(), spec(openai.Completions, 16))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Status != record.StatusFailed || rec.ErrorClass != record.ErrStreamError || rec.TTFT != nil {
		t.Fatalf("status %s class %q ttft %v: %s", rec.Status, rec.ErrorClass, rec.TTFT, rec.Error)
	}
	if rec.FinishReason != "abort" || rec.TextEvents != 2 {
		t.Errorf("finish reason %q, text events %d; want them kept for diagnosis", rec.FinishReason, rec.TextEvents)
	}
}

// TestDegradeNotRememberedWhenUseless checks that a server that rejects every request, whatever
// options it carries, does not make the client drop options for later requests.
func TestDegradeNotRememberedWhenUseless(t *testing.T) {
	var n atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"object":"error","message":"1 validation error: return_token_ids: extra inputs are not permitted; continuous_usage_stats: extra inputs are not permitted","type":"BadRequestError","code":400}`)
	}))
	defer ts.Close()
	c := &Client{API: &openai.Client{BaseURL: ts.URL}}
	want := openai.Options{IncludeUsage: true, ContinuousUsage: true, ReturnTokenIDs: true}
	c.SetOptions(want)
	rec, err := c.Do(context.Background(), spec(openai.Completions, 4))
	if err != nil {
		t.Fatal(err)
	}
	if rec.ErrorClass != record.ErrHTTPStatus || n.Load() < 2 {
		t.Fatalf("class %q after %d attempts, want http_status after retries", rec.ErrorClass, n.Load())
	}
	if got := c.Options(); got != want {
		t.Errorf("options after a useless degradation: %+v, want %+v", got, want)
	}
}

// TestImpossibleCounts checks the counts no generation can have. A usage with negative counts
// is no count: the request stays a measurement, but its prompt and output tokens are unknown
// (empty cells) rather than -3 and -7, and the output count falls to /tokenize when there is
// one. A stream that counts more output tokens than max_tokens under ignore_eos broke the
// request it was sent: it fails with the class impossible_count.
func TestImpossibleCounts(t *testing.T) {
	text := "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\n" +
		"data: {\"choices\":[{\"index\":0,\"text\":\" b\",\"finish_reason\":\"length\"}]}\n\n"
	negative := text + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":-3,\"completion_tokens\":-7,\"total_tokens\":-10}}\n\ndata: [DONE]\n\n"
	t.Run("negative usage", func(t *testing.T) {
		for _, tokenize := range []bool{false, true} {
			ts := serveStream(t, negative)
			c := &Client{API: &openai.Client{BaseURL: ts.URL}}
			if tokenize {
				c.Tokenize = func(context.Context, string) (int, error) { return 2, nil }
			}
			rec, err := c.Do(context.Background(), spec(openai.Completions, 2))
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != record.StatusOK {
				t.Fatalf("tokenize %v: status %s: %s %s, want ok", tokenize, rec.Status, rec.ErrorClass, rec.Error)
			}
			if rec.PromptTokensReported != nil || rec.TokensFromUsage != nil {
				t.Errorf("tokenize %v: prompt tokens %v, usage tokens %v; want both empty", tokenize, deref(rec.PromptTokensReported), deref(rec.TokensFromUsage))
			}
			want, source := any("<missing>"), record.SourceNone
			if tokenize {
				want, source = 2, record.SourceTokenize
			}
			if deref(rec.OutputTokens) != want || rec.TokenSource != source {
				t.Errorf("tokenize %v: output tokens %v from %q, want %v from %q", tokenize, deref(rec.OutputTokens), rec.TokenSource, want, source)
			}
			if rec.TTFT == nil || rec.E2E == nil {
				t.Errorf("tokenize %v: ttft %v, e2e %v; the timings stand without a count", tokenize, rec.TTFT, rec.E2E)
			}
		}
	})
	t.Run("over max_tokens", func(t *testing.T) {
		for _, stream := range []string{
			text + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3,\"total_tokens\":7}}\n\ndata: [DONE]\n\n",
			"data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"token_ids\":[1,2]}]}\n\n" +
				"data: {\"choices\":[{\"index\":0,\"text\":\" b\",\"token_ids\":[3],\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n",
		} {
			ts := serveStream(t, stream)
			c := &Client{API: &openai.Client{BaseURL: ts.URL}}
			rec, err := c.Do(context.Background(), spec(openai.Completions, 2))
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != record.StatusFailed || rec.ErrorClass != record.ErrImpossibleCount {
				t.Fatalf("status %s, class %q (%s); want failed, impossible_count", rec.Status, rec.ErrorClass, rec.Error)
			}
			if !strings.Contains(rec.Error, "3 output tokens") || !strings.Contains(rec.Error, "max_tokens 2") {
				t.Errorf("error %q does not name the count and the cap", rec.Error)
			}
			if rec.TTFT != nil || rec.E2E != nil {
				t.Errorf("a failed request has metrics: ttft %v, e2e %v", rec.TTFT, rec.E2E)
			}
		}
	})
	t.Run("at max_tokens, and over it without ignore_eos", func(t *testing.T) {
		ts := serveStream(t, text+"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":3,\"total_tokens\":7}}\n\ndata: [DONE]\n\n")
		c := &Client{API: &openai.Client{BaseURL: ts.URL}}
		for _, sp := range []Spec{spec(openai.Completions, 3), func() Spec { s := spec(openai.Completions, 2); s.Params.IgnoreEOS = nil; return s }()} {
			rec, err := c.Do(context.Background(), sp)
			if err != nil {
				t.Fatal(err)
			}
			if rec.Status != record.StatusOK {
				t.Errorf("max_tokens %d: status %s: %s %s, want ok", sp.Params.MaxTokens, rec.Status, rec.ErrorClass, rec.Error)
			}
		}
	})
}
