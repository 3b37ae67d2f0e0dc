// Package record holds the domain types that every stage of the runner shares: one streamed
// request as the client measured it, and the events it was made of.
//
// Data flows one way: experiment → configs → (engine, measure) → records → results →
// compare/report. This package sits in the middle of that chain and imports nothing of the
// project, so that measure can produce records and results can store them without either knowing
// the other.
package record

import "time"

// Phase says why a request was sent.
type Phase string

// The phases of a config's requests, in the order they are sent.
const (
	// PhaseFirst is the first request a freshly booted server answers. It is kept apart from
	// the steady state because it pays for lazy initialisation (CUDA graphs, allocator warm-up).
	PhaseFirst Phase = "first"
	// PhaseWarmup is a warm-up request: measured and stored, never summarised.
	PhaseWarmup Phase = "warmup"
	// PhaseMeasure is a steady-state repetition: the rows that summaries and diffs use.
	PhaseMeasure Phase = "measure"
)

// Status is the outcome of one request.
type Status string

// The outcomes of a request.
const (
	StatusOK     Status = "ok"
	StatusFailed Status = "failed"
)

// ErrorClass names why a failed request failed, in a closed vocabulary that a CSV column can hold.
type ErrorClass string

// The error classes. A failed row is never a measurement: its metrics stay empty.
const (
	ErrNone        ErrorClass = ""
	ErrConnect     ErrorClass = "connect"      // the connection could not be made
	ErrHTTPStatus  ErrorClass = "http_status"  // the server answered with a non-2xx status
	ErrStreamError ErrorClass = "stream_error" // an error object arrived inside the stream
	ErrTruncated   ErrorClass = "truncated"    // the stream ended without [DONE]
	ErrTimeout     ErrorClass = "timeout"      // the request ran past its deadline
	ErrDecode      ErrorClass = "decode"       // an event could not be decoded
	ErrNoText      ErrorClass = "no_text"      // the stream completed but carried no text
	ErrCanceled    ErrorClass = "canceled"     // the runner was interrupted mid-request
	ErrServer      ErrorClass = "server"       // the server for this config could not be booted
	ErrCacheReset  ErrorClass = "cache_reset"  // the prefix cache could not be reset before it
	// ErrPromptTooShort: the config's prompt_tokens is below what the server bills for its
	// shortest prompt (one word with its template or special tokens), so no prompt of that
	// length exists; the request was not sent.
	ErrPromptTooShort ErrorClass = "prompt_too_short"
	// ErrEventTooLarge: one line or event of the stream was larger than the runner reads (the
	// limit is in the error text).
	ErrEventTooLarge ErrorClass = "event_too_large"
	// ErrNotStream: the server answered 2xx, but with a body that is not an event stream (a
	// JSON answer to a request whose stream: true it ignored, an HTML page, NDJSON).
	ErrNotStream ErrorClass = "not_event_stream"
	// ErrEncoding: the stream came compressed (Content-Encoding gzip, br, ...) though the
	// runner asked for it uncompressed.
	ErrEncoding ErrorClass = "content_encoding"
	// ErrRedirect: the server answered with a redirect (3xx), which the runner does not follow.
	ErrRedirect ErrorClass = "redirect"
	// ErrNoEvent: the stream sent only comments or fields without data (": keep-alive",
	// "event:") past the limit on lines or bytes between two events.
	ErrNoEvent ErrorClass = "no_event"
	// ErrImpossibleCount: the stream counted more output tokens than max_tokens for a request
	// sent with ignore_eos, which asks for exactly max_tokens (docs/metrics.md).
	ErrImpossibleCount ErrorClass = "impossible_count"
)

// ErrorClasses are every error class, ErrNone first: the closed vocabulary of the error_class
// column, which readers check a cell against. A new class is added here and to the constants.
var ErrorClasses = []ErrorClass{ErrNone, ErrConnect, ErrHTTPStatus, ErrRedirect, ErrNotStream,
	ErrEncoding, ErrStreamError, ErrEventTooLarge, ErrNoEvent, ErrTruncated, ErrTimeout, ErrDecode,
	ErrNoText, ErrImpossibleCount, ErrCanceled, ErrServer, ErrCacheReset, ErrPromptTooShort}

// LoadMode says how the requests of a load point arrive.
type LoadMode string

// The load modes.
const (
	LoadNone   LoadMode = ""       // no load section: one request at a time, in the experiment's order
	LoadClosed LoadMode = "closed" // a fixed number of requests in flight; one starts when one ends
	LoadOpen   LoadMode = "open"   // requests arrive at a rate, from a seeded arrival process
)

// TokenSource names where an output token count came from, best first.
type TokenSource string

// The token count sources, best first.
const (
	SourceTokenIDs  TokenSource = "token_ids"  // per-event token ids (vLLM return_token_ids)
	SourceUsageCont TokenSource = "usage_cont" // per-event cumulative usage (continuous_usage_stats)
	SourceUsage     TokenSource = "usage"      // the final usage chunk
	SourceTokenize  TokenSource = "tokenize"   // the server's /tokenize of the generated text
	SourceTiktoken  TokenSource = "tiktoken"   // a local tiktoken encoding (approximation)
	SourceNone      TokenSource = ""
)

// Exact reports whether the source counts tokens per event, which makes tpot_token exact.
func (s TokenSource) Exact() bool { return s == SourceTokenIDs || s == SourceUsageCont }

// Request is one streamed request as the client measured it. Durations are measured from T0 on
// the client's monotonic clock. A nil pointer is a missing value, stored as an empty cell; it is
// never stood in for by zero.
type Request struct {
	ConfigID string // the stable id of the config (experiment.Config.ID)
	ServerID string // the stable id of its server config
	Seq      int    // position within the config: 0, 1, 2, ... across all phases
	Phase    Phase
	Rep      int // repetition number within its phase, from 0

	Start      time.Time  // wall-clock time of T0, UTC
	Status     Status     //
	ErrorClass ErrorClass //
	Error      string     // free text; stored in its own file, never in the numeric CSV
	HTTPStatus int        // 0 when no response arrived

	// Connection facts from net/http/httptrace.
	ConnReused   bool
	WroteRequest *time.Duration // request fully written
	FirstByte    *time.Duration // response headers arrived

	TTFT      *time.Duration // first text event − T0
	LastText  *time.Duration // last text event − T0
	E2E       *time.Duration // end of stream − T0
	TPOTEvent *time.Duration // (last − first text event) / (text events − 1)
	TPOTToken *time.Duration // (last − first text event) / tokens after the first text event
	// TPOTTokenExact is false when TPOTToken was computed as (output tokens − 1) because no
	// per-event counts were available.
	TPOTTokenExact bool
	ITLMedian      *time.Duration // median gap between consecutive text events
	ITLMax         *time.Duration // largest gap between consecutive text events

	Events     int // data events received, text or not, [DONE] excluded
	TextEvents int // events carrying non-empty generated text

	OutputTokens *int        // the count used for tpot_token
	TokenSource  TokenSource // where OutputTokens came from
	// Counts seen from every source, so a disagreement is visible. Nil when not available.
	// TokensFromTiktoken, a local approximation, is computed only when it is the count used.
	TokensFromIDs      *int
	TokensFromUsage    *int
	TokensFromTokenize *int
	TokensFromTiktoken *int
	TiktokenEncoding   string // e.g. "cl100k_base"

	PromptTokensRequested *int // prompt_tokens asked for by the experiment
	PromptTokensReported  *int // usage.prompt_tokens from the server
	MaxTokens             int  // max_tokens sent
	FinishReason          string

	// What the stream delivered of the options asked for (see openai.Counts): a server may
	// accept an option and ignore it.
	ContinuousUsage bool   // the stream carried usage on every chunk (continuous_usage_stats)
	ReturnTokenIDs  bool   // the stream carried token ids (return_token_ids)
	Cache           string // reset | keep: how the prefix cache was treated before this request
	CacheReset      bool   // the cache was actually reset before this request

	// Load: how the request was sent. All zero for a config without a load section, whose
	// requests go one at a time in the experiment's order.
	LoadMode    LoadMode // closed | open; "" without a load section
	Concurrency int      // closed loop: requests kept in flight; open loop: the cap (0: none)
	Rate        float64  // open loop: the target rate, requests per second; 0 for a closed loop
	// Scheduled is when the load wanted the request sent, from its load point's start on the
	// client's monotonic clock: the arrival time under an open loop, the moment a slot became
	// free under a closed loop. Nil without a load section.
	Scheduled *time.Duration
	// SendLag is t0 − Scheduled: how late the client sent the request, the cap's wait included.
	SendLag *time.Duration
	// CapWait is the part of SendLag spent waiting for a free slot under an open loop's
	// max_concurrency; zero when it did not wait, nil without a cap.
	CapWait *time.Duration
	// InFlight counts this runner's requests of the load point in flight when it was sent, this
	// one included; 0 without a load section.
	InFlight int

	// What the server says about the same request, from its Prometheus /metrics: the
	// difference of each histogram's sum and count between a scrape just before and one just
	// after the request, exact when the request was alone on the server. Nil when the server
	// has no such metric, the scrape failed, or other requests were in flight (under load the
	// deltas are per load point instead).
	ServerTTFT    *time.Duration // arrival to first token, server side
	ServerE2E     *time.Duration // arrival to last token
	ServerQueue   *time.Duration // waiting for a slot
	ServerPrefill *time.Duration // prefill
	ServerDecode  *time.Duration // decode
	// Counters over the same window: prompt and generated tokens, and the prefix cache's
	// queried and hit tokens.
	ServerPromptTokens     *int
	ServerGenerationTokens *int
	PrefixCacheQueries     *int
	PrefixCacheHits        *int
	// ClientOverhead is TTFT − ServerTTFT: HTTP, the network, detokenisation and the
	// client, as measured, never assumed.
	ClientOverhead *time.Duration
	// CacheHitAfterReset flags a measured request that hit the prefix cache although the cache
	// was reset before it: the reset did not take, and its TTFT is not a cold prefill.
	CacheHitAfterReset bool

	// PromptBuilt says how the prompt of a prompt_tokens config was made to its length: by
	// the server's tokenizer, calibrated on the server's own usage count, or by tiktoken.
	PromptBuilt string

	// GPU telemetry over the request's lifetime, from nvidia-smi samples; nil without a GPU.
	GPUSMClockMeanMHz *float64 // mean SM clock
	GPUTempMaxC       *float64 // peak temperature
	GPUThrottled      *bool    // a power or thermal clock-throttle reason was active

	OutputText string // the generated text; stored in its own file

	EventList []Event
}

// Event is one SSE data event of a request, timestamped when its bytes arrived.
type Event struct {
	Seq     int           // 0-based position in the stream
	SinceT0 time.Duration // arrival time − T0
	Bytes   int           // size of the event on the wire
	TextLen int           // bytes of generated text it carried
	Tokens  *int          // tokens it carried, when the server said so
	Text    bool          // whether it is a text event
}

// Dur returns a pointer to d, for filling optional fields.
func Dur(d time.Duration) *time.Duration { return &d }

// Int returns a pointer to n, for filling optional fields.
func Int(n int) *int { return &n }
