// Package measure turns one streamed request into one record.Request, and runs the warm-up and
// repetition loop of the configs that share a server. It is where the metric definitions of
// docs/metrics.md are applied: t0 is taken immediately before the HTTP request is sent, every
// event is timed when its bytes arrive (package sse), and only then decoded (package openai).
package measure

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptrace"
	"sync"
	"time"

	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/sse"
	"github.com/onelayerdown/runner/runner/internal/tokens"
)

// Client sends streaming requests to one server and measures them. It remembers which optional
// stream features the server accepted, so that an option the server rejected once is not sent
// again. Its methods are safe for concurrent use.
type Client struct {
	// API is the server's side-endpoint client: base URL and API key.
	API *openai.Client
	// HTTP sends the streaming requests; nil means a client made for measuring (see NewHTTP).
	HTTP *http.Client
	// Tokenize, when set, counts the tokens of generated text with the server's own tokenizer
	// (add_special_tokens false). Nil when the server has no /tokenize.
	Tokenize func(ctx context.Context, text string) (int, error)
	// Tiktoken counts generated text locally, as the approximation of last resort: only when
	// neither the stream nor /tokenize gave a count. Nil skips it.
	Tiktoken *tokens.Tiktoken
	// Now is the clock; nil means time.Now. It must carry a monotonic reading.
	Now func() time.Time

	mu   sync.Mutex
	opts openai.Options
	set  bool
}

// NewHTTP returns an HTTP client suited to measuring: no overall timeout (each request carries
// its own deadline), keep-alive connections so that steady-state requests reuse one, no
// transparent compression, which would delay bytes, and no redirects followed, which would
// time two requests as one (a redirect is a failed request of class redirect).
func NewHTTP() *http.Client {
	tr := &http.Transport{
		Proxy:               nil, // a measured server is reached directly, never through a proxy
		DisableCompression:  true,
		MaxIdleConnsPerHost: maxIdleConns,
		IdleConnTimeout:     90 * time.Second,
		ForceAttemptHTTP2:   false,
		TLSClientConfig:     &tls.Config{MinVersion: tls.VersionTLS12},
		ReadBufferSize:      connBuffer,
		WriteBufferSize:     connBuffer,
	}
	return &http.Client{Transport: tr, CheckRedirect: openai.NoRedirect}
}

// maxIdleConns bounds the idle connections NewHTTP's client keeps to the server. Under load each
// request's connection goes back to the pool between the end of its stream (and its /tokenize
// count) and the next request of its slot, so a closed loop of N may hold up to N idle for a
// moment: a smaller pool closes connections that the next requests must then dial again (with 4,
// two of every three requests at 1,024 streams did, and the dials, accepts and TIME_WAIT
// sockets cost both sides CPU and memory). It is the most requests in flight a load point may
// ask for; idle connections still close after IdleConnTimeout.
const maxIdleConns = 10000

// connBuffer is the size of each connection's read and write buffers, and eventBuffer the size
// of a stream's first event buffer (package sse), in bytes. Under load every stream holds all
// three for its whole life, and the defaults (4 KiB each) were a third of the client's memory
// per stream. A streamed chunk is a few hundred bytes, so 1 KiB still takes one read per event
// and holds a few that arrive together; a longer line grows the event buffer as it needs, and a
// request or chunk larger than a connection buffer is written or read past it, directly.
const (
	connBuffer  = 1 << 10
	eventBuffer = 1 << 10
)

// Spec is one request to send.
type Spec struct {
	Params  openai.Params // body parameters; Options are replaced by what the server accepts
	Timeout time.Duration // deadline of the whole request; 0 means none
	// OnSend, when set, is called with t0 immediately before the request is handed to the
	// HTTP client, on the goroutine that sends it; a request resent with fewer options calls it
	// again, and the last call is the measured attempt's t0.
	OnSend func(t0 time.Time)
}

// Options returns the stream options in effect: what was asked for, less what the server
// rejected.
func (c *Client) Options() openai.Options {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.opts
}

// SetOptions sets the stream options to ask for before the first request.
func (c *Client) SetOptions(o openai.Options) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.opts, c.set = o, true
}

func (c *Client) now() time.Time {
	if c.Now != nil {
		return c.Now()
	}
	return time.Now()
}

// httpClient returns the client that sends the streaming requests, making it on first use.
// HTTP is read under the lock too: a read outside it, while another request's goroutine makes
// the client, is a data race.
func (c *Client) httpClient() *http.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.HTTP == nil {
		c.HTTP = NewHTTP()
	}
	return c.HTTP
}

// maxDegrade bounds how often one request is resent with fewer options: the ladder has three
// rungs.
const maxDegrade = 3

// Do sends one streaming request and returns its record. The record's ConfigID, ServerID, Seq,
// Phase, Rep and Cache fields are the caller's to fill. A request that fails is a record with
// Status failed and an ErrorClass, never an error: Do returns an error only when ctx was cancelled
// before anything was sent.
//
// When the server rejects an optional stream feature with 400 or 422, Do drops that feature (see
// openai.Degrade), remembers the choice for later requests, and sends the request again; only
// the accepted attempt is measured.
func (c *Client) Do(ctx context.Context, spec Spec) (record.Request, error) {
	if err := ctx.Err(); err != nil {
		return record.Request{}, err
	}
	c.mu.Lock()
	opts := c.opts
	if !c.set {
		opts = spec.Params.Options
	}
	c.mu.Unlock()
	start := opts
	for attempt := 0; ; attempt++ {
		rec, rejected := c.once(ctx, spec, opts)
		if rejected == nil {
			// Remember a dropped option only once a request without it got through: a server
			// that rejects the request whatever it carries says nothing about the options.
			if opts != start {
				c.SetOptions(opts)
			}
			return rec, nil
		}
		if attempt == maxDegrade {
			return rec, nil
		}
		next, drop := openai.Degrade(rejected.Status, rejected.Body, opts)
		if drop == openai.DropNone {
			return rec, nil
		}
		opts = next
	}
}

// once sends one attempt with opts. It returns the HTTP error too when the server answered 400
// or 422, so that Do can decide whether to degrade.
//
// It is one long function on purpose, the one allowed over the length limit of
// docs/architecture.md. It reads as the request's timeline, from the body built to t0, the
// trace's stamps, each event stamped and decoded, the end, and the metrics. The record stays
// in this one frame and is failed in place by fail. Cut into steps, the record would be passed
// or returned between them, and each copy of it (almost 500 bytes) would take a stack slot of
// its own in every request goroutine under load, as the comment on fail says.
func (c *Client) once(ctx context.Context, spec Spec, opts openai.Options) (record.Request, *openai.HTTPError) {
	p := spec.Params
	p.Options = opts
	rec := record.Request{
		MaxTokens: p.MaxTokens,
		Status:    record.StatusOK,
	}
	// fail marks rec failed in place. It returns nothing, on purpose: every call that
	// returned a record.Request (496 bytes) took a stack slot of its own, and the frame they
	// made (almost 6 KiB) doubled the stack of every request goroutine under load.
	fail := func(class record.ErrorClass, err error) {
		rec.Status, rec.ErrorClass, rec.Error = record.StatusFailed, class, err.Error()
	}
	body, err := openai.Body(p)
	if err != nil {
		fail(record.ErrDecode, fmt.Errorf("build request body: %w", err))
		return rec, nil
	}

	// The request's own context can always be cancelled: after [DONE] it bounds the wait for
	// the end of the body even when the request has no deadline.
	var reqCtx context.Context
	var cancel context.CancelFunc
	if spec.Timeout > 0 {
		reqCtx, cancel = context.WithTimeout(ctx, spec.Timeout)
	} else {
		reqCtx, cancel = context.WithCancel(ctx)
	}
	defer cancel()

	var t0 time.Time
	var mu sync.Mutex // httptrace hooks may run on the transport's goroutines
	trace := &httptrace.ClientTrace{
		GotConn: func(info httptrace.GotConnInfo) {
			mu.Lock()
			rec.ConnReused = info.Reused
			mu.Unlock()
		},
		WroteRequest: func(httptrace.WroteRequestInfo) {
			d := c.now().Sub(t0)
			mu.Lock()
			rec.WroteRequest = &d
			mu.Unlock()
		},
		GotFirstResponseByte: func() {
			d := c.now().Sub(t0)
			mu.Lock()
			rec.FirstByte = &d
			mu.Unlock()
		},
	}
	req, err := c.API.NewStreamRequest(httptrace.WithClientTrace(reqCtx, trace), p.API, body)
	if err != nil {
		fail(record.ErrConnect, err)
		return rec, nil
	}

	// t0: immediately before the client call, so that connecting counts as it does for a
	// real caller.
	t0 = c.now()
	rec.Start = t0.UTC()
	if spec.OnSend != nil {
		spec.OnSend(t0)
	}
	resp, err := c.httpClient().Do(req)
	if err != nil {
		mu.Lock()
		defer mu.Unlock()
		fail(classifyErr(ctx, reqCtx, err, record.ErrConnect), err)
		return rec, nil
	}
	defer resp.Body.Close()
	rec.HTTPStatus = resp.StatusCode
	if err := openai.CheckResponse(resp); err != nil {
		mu.Lock()
		defer mu.Unlock()
		var he *openai.HTTPError
		if errors.As(err, &he) && (he.Status == http.StatusBadRequest || he.Status == http.StatusUnprocessableEntity) {
			fail(record.ErrHTTPStatus, err)
			return rec, he
		}
		if he != nil && he.Redirect() {
			fail(record.ErrRedirect, err)
			return rec, nil
		}
		fail(record.ErrHTTPStatus, err)
		return rec, nil
	}
	if class, err := checkStream(resp); err != nil {
		mu.Lock()
		defer mu.Unlock()
		fail(class, err)
		return rec, nil
	}

	var (
		events    []record.Event
		tally     openai.Tally
		text      []byte
		reasoning bool // the stream carried reasoning text, which is not answer text
		done      bool
		doneAt    time.Duration
		failed    bool
	)
	head := &headReader{r: resp.Body}
	sc := sse.NewScanner(head, sse.WithClock(c.now), sse.WithMaxSize(openai.MaxEvent), sse.WithBufferSize(eventBuffer))
	for sc.Scan() {
		// An event came: from here the request fails, ends at [DONE] or has events, and in
		// none of these is the start of the body described.
		head.release()
		ev := sc.Event()
		since := ev.At.Sub(t0)
		ch, err := openai.DecodeChunk(ev.Data)
		if err != nil {
			fail(record.ErrDecode, fmt.Errorf("event %d: %w", len(events), err))
			failed = true
			break
		}
		if ch.Err != nil {
			fail(record.ErrStreamError, fmt.Errorf("event %d: server sent an error: %w", len(events), ch.Err))
			failed = true
			break
		}
		if ch.Done && !carriesChunk(ch) {
			done, doneAt = true, since
			break
		}
		tally.Add(ch)
		events = append(events, record.Event{
			Seq:     len(events),
			SinceT0: since,
			Bytes:   ev.Bytes,
			TextLen: len(ch.Text),
			Text:    ch.IsText(),
		})
		if ch.FinishReason != "" {
			rec.FinishReason = ch.FinishReason
		}
		text = append(text, ch.Text...)
		reasoning = reasoning || ch.Reasoning != ""
		if ch.Done {
			// A chunk and "data: [DONE]" without a blank line between them arrive as one
			// event: the chunk was recorded above, and the stream ends here.
			done, doneAt = true, since
			break
		}
	}
	// The end of the response stream is the arrival of [DONE]; without it, now.
	end := c.now().Sub(t0)
	if done {
		end = doneAt
		// Read what follows [DONE] (normally only the end of the chunked body) so that the
		// connection can be reused; a server that keeps the stream open after [DONE] is not
		// waited for long.
		stop := time.AfterFunc(time.Second, cancel)
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		stop.Stop()
	}
	mu.Lock()
	defer mu.Unlock()

	rec.Events = len(events)
	rec.EventList = events
	rec.OutputText = string(text)
	counts := tally.Counts()
	rec.TextEvents = counts.TextEvents
	if counts.PerEvent != nil && len(counts.PerEvent) == len(events) {
		for i := range events {
			events[i].Tokens = record.Int(counts.PerEvent[i])
		}
	}
	rec.TokensFromIDs = counts.FromIDs
	if counts.FromUsage != nil {
		rec.TokensFromUsage = counts.FromUsage
	} else if counts.FromCumulative != nil {
		rec.TokensFromUsage = counts.FromCumulative
	}
	rec.PromptTokensReported = counts.PromptTokens
	// What the stream delivered, not what was asked for: a server may accept an option and
	// ignore it.
	rec.ReturnTokenIDs, rec.ContinuousUsage = counts.StreamedIDs, counts.StreamedCumulative

	if !failed {
		switch err := sc.Err(); {
		case !done && len(events) == 0 && head.json() && ctx.Err() == nil:
			// A body that starts like JSON is no stream, whatever its Content-Type said and
			// however the reader gave up on it.
			fail(record.ErrNotStream, notStreamJSON(resp, head.buf))
			failed = true
		case errors.Is(err, sse.ErrTooLarge):
			fail(record.ErrEventTooLarge, fmt.Errorf("read stream after %d events: a line or event is larger than the %s limit: %w", len(events), openai.FormatSize(openai.MaxEvent), err))
			failed = true
		case errors.Is(err, sse.ErrNoEvent):
			fail(record.ErrNoEvent, fmt.Errorf("read stream after %d events: the server sent only comments or fields without data, past the limit of %d lines or %s: %w", len(events), sse.DefaultMaxIdleLines, openai.FormatSize(openai.MaxEvent), err))
			failed = true
		case err != nil:
			fail(classifyErr(ctx, reqCtx, err, record.ErrTruncated), fmt.Errorf("read stream after %d events: %w", len(events), err))
			failed = true
		case !done:
			fail(record.ErrTruncated, fmt.Errorf("stream ended after %d events without [DONE]%s", len(events), head.note(len(events), resp.Header.Get("Content-Type"))))
			failed = true
		}
	}
	if !failed && (rec.FinishReason == "abort" || rec.FinishReason == "error") {
		// vLLM ends a request it aborted (an engine error, a preempted or cancelled request)
		// with finish_reason "abort", and some servers say "error": the stream is well formed,
		// but what it measured is not a completed request.
		fail(record.ErrStreamError, fmt.Errorf("the server ended the request with finish_reason %q after %d events", rec.FinishReason, len(events)))
		failed = true
	}
	// A failed request keeps its events and counts for diagnosis, but no metrics.
	if failed {
		return rec, nil
	}

	if err := overCap(p, counts); err != nil {
		fail(record.ErrImpossibleCount, err)
		return rec, nil
	}
	c.countTokens(ctx, &rec, counts)
	if err := ctx.Err(); err != nil {
		// The run was stopped while the output was being counted: the counts may be missing,
		// so the request is not kept, like one stopped mid-stream.
		fail(record.ErrCanceled, fmt.Errorf("count the output tokens: %w", err))
		return rec, nil
	}
	t := ComputeTiming(events, end, answerTokens(rec.OutputTokens, counts, reasoning))
	rec.TTFT, rec.LastText, rec.E2E = t.TTFT, t.LastText, t.E2E
	rec.TPOTEvent, rec.TPOTToken, rec.TPOTTokenExact = t.TPOTEvent, t.TPOTToken, t.TPOTTokenExact
	rec.ITLMedian, rec.ITLMax = t.ITLMedian, t.ITLMax
	rec.TextEvents = t.TextEvents
	if t.TextEvents == 0 {
		rec.Status, rec.ErrorClass = record.StatusFailed, record.ErrNoText
		rec.Error = fmt.Sprintf("the stream completed with %d events but no generated text", len(events))
		rec.TTFT, rec.LastText, rec.E2E = nil, nil, nil
	}
	return rec, nil
}

// answerTokens returns the output token count that tpot_token's fallback, (output tokens − 1),
// may divide by. A reasoning model's total counts its reasoning tokens too, which stream before
// the answer and are no part of the span from the first to the last text event: when the usage
// says how many there were, they are taken off; when it does not, there is no honest divisor
// and tpot_token stays empty. With per-event counts the fallback is not used.
func answerTokens(output *int, counts openai.Counts, reasoning bool) *int {
	if !reasoning || output == nil {
		return output
	}
	if counts.Usage != nil && counts.Usage.ReasoningTokens > 0 && counts.Usage.ReasoningTokens < *output {
		return record.Int(*output - counts.Usage.ReasoningTokens)
	}
	return nil
}

// overCap returns an error when the stream counted more output tokens than max_tokens for a
// request sent with ignore_eos. Such a request asks for exactly max_tokens, so a larger count
// means either that the server generated past the cap (what was timed is not the request the
// config describes) or that its counts are wrong (and with them the per-event counts that
// tpot_token divides by); the two cannot be told apart, so the row is no measurement. Only the
// stream's own counts are checked: /tokenize and tiktoken count the text again, and a second
// tokenization may split it differently. Without ignore_eos the request may stop anywhere below
// the cap and the check is not made.
func overCap(p openai.Params, counts openai.Counts) error {
	if p.IgnoreEOS == nil || !*p.IgnoreEOS || p.MaxTokens <= 0 {
		return nil
	}
	for _, n := range []*int{counts.FromIDs, counts.FromCumulative, counts.FromUsage} {
		if n != nil && *n > p.MaxTokens {
			return fmt.Errorf("the stream counts %d output tokens, more than max_tokens %d with ignore_eos", *n, p.MaxTokens)
		}
	}
	return nil
}

// carriesChunk reports whether a decoded chunk holds anything besides [DONE].
func carriesChunk(ch openai.Chunk) bool {
	return ch.HasChoices || ch.Usage != nil || ch.TokenIDs != nil || ch.Text != "" ||
		ch.Reasoning != "" || ch.ToolCalls || ch.FinishReason != ""
}

// countTokens fills the output token count from the best source available and the counts of
// the other sources: per-event counts or usage from the stream, else the server's /tokenize of
// the generated text, else tiktoken. Without generated text neither tokenizer counts: 0 tokens
// of an empty text says nothing of what the server generated.
//
// /tokenize is asked even when the stream gave a count, because it is the model's own
// tokenizer: results compare it with the stream's counts and warn when they disagree. tiktoken
// is not: it is another tokenizer, so its count differs from the model's for reasons that say
// nothing about the server, and the comparison leaves it out. It is computed only when it is
// the count used, and, like /tokenize, gives up when ctx ends.
func (c *Client) countTokens(ctx context.Context, rec *record.Request, counts openai.Counts) {
	if c.Tokenize != nil && rec.OutputText != "" {
		if n, err := c.Tokenize(ctx, rec.OutputText); err == nil {
			rec.TokensFromTokenize = record.Int(n)
		}
	}
	if c.Tiktoken != nil && rec.OutputText != "" && counts.Source == record.SourceNone && rec.TokensFromTokenize == nil {
		if n, err := c.Tiktoken.Count(ctx, rec.OutputText); err == nil {
			rec.TokensFromTiktoken = record.Int(n)
			rec.TiktokenEncoding = c.Tiktoken.Encoding()
		}
	}
	switch {
	case counts.Source != record.SourceNone:
		rec.OutputTokens, rec.TokenSource = record.Int(counts.Output), counts.Source
	case rec.TokensFromTokenize != nil:
		rec.OutputTokens, rec.TokenSource = rec.TokensFromTokenize, record.SourceTokenize
	case rec.TokensFromTiktoken != nil:
		rec.OutputTokens, rec.TokenSource = rec.TokensFromTiktoken, record.SourceTiktoken
	}
}

// classifyErr names why a request failed: its own deadline (timeout), the run being stopped
// (canceled), or otherwise the given class.
func classifyErr(parent, reqCtx context.Context, err error, otherwise record.ErrorClass) record.ErrorClass {
	switch {
	case parent.Err() != nil:
		return record.ErrCanceled
	case reqCtx.Err() != nil || errors.Is(err, context.DeadlineExceeded):
		return record.ErrTimeout
	}
	var ne interface{ Timeout() bool }
	if errors.As(err, &ne) && ne.Timeout() {
		return record.ErrTimeout
	}
	return otherwise
}
