package results

import (
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// RequestID returns the stable, readable id of a request: "<config id>-<seq>".
func RequestID(configID string, seq int) string { return configID + "-" + strconv.Itoa(seq) }

type req = record.Request

// RequestsCSV is requests.csv: one row per request, in the order the requests ended. Durations
// are milliseconds with six decimals; a nil value is an empty cell. The load columns came later:
// a file written before them has none, and reads as requests without a load section; so did the
// server-side, GPU and prompt_built columns, and such a file reads as requests without them. It
// writes every field of a record.Request except EventList (events.csv), OutputText
// (outputs.jsonl) and Error (errors.jsonl), and rows read back lack them: ReadRequests joins
// those.
var RequestsCSV = &Table[req]{file: RequestsFile, cols: slices.Concat([]column[req]{
	{Column: Column{Name: "request_id", Kind: KindString, Required: true, Unique: true}, derived: true,
		get:   func(r *req) string { return escapeCell(RequestID(r.ConfigID, r.Seq), "") },
		check: checkRequestID},
	strCol("config_id", func(r *req) *string { return &r.ConfigID }),
	strCol("server_id", func(r *req) *string { return &r.ServerID }),
	intCol("seq", func(r *req) *int { return &r.Seq }),
	enumCol("phase", []record.Phase{record.PhaseFirst, record.PhaseWarmup, record.PhaseMeasure}, func(r *req) *record.Phase { return &r.Phase }),
	intCol("rep", func(r *req) *int { return &r.Rep }),
	{Column: Column{Name: "warmup", Kind: KindBool, Required: true}, derived: true,
		get: func(r *req) string { return formatBool(r.Phase != record.PhaseMeasure) }},
	timeCol("start_time", func(r *req) *time.Time { return &r.Start }),
	enumCol("status", []record.Status{record.StatusOK, record.StatusFailed}, func(r *req) *record.Status { return &r.Status }),
	enumCol("error_class", errorClasses, func(r *req) *record.ErrorClass { return &r.ErrorClass }),
	zeroIsMissingIntCol("http_status", func(r *req) *int { return &r.HTTPStatus }),
	boolCol("conn_reused", func(r *req) *bool { return &r.ConnReused }),
	msCol("wrote_request_ms", func(r *req) **time.Duration { return &r.WroteRequest }),
	msCol("first_byte_ms", func(r *req) **time.Duration { return &r.FirstByte }),
	msCol("ttft_ms", func(r *req) **time.Duration { return &r.TTFT }),
	msCol("last_text_ms", func(r *req) **time.Duration { return &r.LastText }),
	msCol("e2e_ms", func(r *req) **time.Duration { return &r.E2E }),
	msCol("tpot_event_ms", func(r *req) **time.Duration { return &r.TPOTEvent }),
	msCol("tpot_token_ms", func(r *req) **time.Duration { return &r.TPOTToken }),
	boolCol("tpot_token_exact", func(r *req) *bool { return &r.TPOTTokenExact }),
	msCol("itl_median_ms", func(r *req) **time.Duration { return &r.ITLMedian }),
	msCol("itl_max_ms", func(r *req) **time.Duration { return &r.ITLMax }),
	intCol("events", func(r *req) *int { return &r.Events }),
	intCol("text_events", func(r *req) *int { return &r.TextEvents }),
	optIntCol("output_tokens", func(r *req) **int { return &r.OutputTokens }),
	enumCol("output_tokens_source", []record.TokenSource{record.SourceNone, record.SourceTokenIDs, record.SourceUsageCont,
		record.SourceUsage, record.SourceTokenize, record.SourceTiktoken}, func(r *req) *record.TokenSource { return &r.TokenSource }),
	optIntCol("tokens_from_ids", func(r *req) **int { return &r.TokensFromIDs }),
	optIntCol("tokens_from_usage", func(r *req) **int { return &r.TokensFromUsage }),
	optIntCol("tokens_from_tokenize", func(r *req) **int { return &r.TokensFromTokenize }),
	optIntCol("tokens_from_tiktoken", func(r *req) **int { return &r.TokensFromTiktoken }),
	strCol("tiktoken_encoding", func(r *req) *string { return &r.TiktokenEncoding }),
	optIntCol("prompt_tokens_requested", func(r *req) **int { return &r.PromptTokensRequested }),
	optIntCol("prompt_tokens_reported", func(r *req) **int { return &r.PromptTokensReported }),
	intCol("max_tokens", func(r *req) *int { return &r.MaxTokens }),
	strCol("finish_reason", func(r *req) *string { return &r.FinishReason }),
	boolCol("continuous_usage", func(r *req) *bool { return &r.ContinuousUsage }),
	boolCol("return_token_ids", func(r *req) *bool { return &r.ReturnTokenIDs }),
	strCol("cache", func(r *req) *string { return &r.Cache }),
	boolCol("cache_reset", func(r *req) *bool { return &r.CacheReset }),
}, addedLater(
	// How the request was sent under load: empty cells for a request without a load section.
	enumCol("load_mode", []record.LoadMode{record.LoadNone, record.LoadClosed, record.LoadOpen}, func(r *req) *record.LoadMode { return &r.LoadMode }),
	zeroIsMissingIntCol("concurrency", func(r *req) *int { return &r.Concurrency }),
	zeroIsMissingFloatCol("rate_rps", 6, func(r *req) *float64 { return &r.Rate }),
	msCol("scheduled_ms", func(r *req) **time.Duration { return &r.Scheduled }),
	signedMsCol("send_lag_ms", func(r *req) **time.Duration { return &r.SendLag }),
	msCol("cap_wait_ms", func(r *req) **time.Duration { return &r.CapWait }),
	zeroIsMissingIntCol("in_flight", func(r *req) *int { return &r.InFlight }),
), addedLater(
	// What the server's /metrics says about the request, alone on the server: empty cells
	// when the server has no metrics, a scrape failed, or the request was sent under load.
	msCol("server_ttft_ms", func(r *req) **time.Duration { return &r.ServerTTFT }),
	msCol("server_e2e_ms", func(r *req) **time.Duration { return &r.ServerE2E }),
	msCol("server_queue_ms", func(r *req) **time.Duration { return &r.ServerQueue }),
	msCol("server_prefill_ms", func(r *req) **time.Duration { return &r.ServerPrefill }),
	msCol("server_decode_ms", func(r *req) **time.Duration { return &r.ServerDecode }),
	optIntCol("server_prompt_tokens", func(r *req) **int { return &r.ServerPromptTokens }),
	optIntCol("server_generation_tokens", func(r *req) **int { return &r.ServerGenerationTokens }),
	optIntCol("prefix_cache_queries", func(r *req) **int { return &r.PrefixCacheQueries }),
	optIntCol("prefix_cache_hits", func(r *req) **int { return &r.PrefixCacheHits }),
	signedMsCol("client_overhead_ms", func(r *req) **time.Duration { return &r.ClientOverhead }),
	cacheHitAfterResetCol,
), addedLater(
	// The GPUs' state over the request, from telemetry.csv: empty cells where no GPU was
	// sampled.
	optFloatCol("gpu_sm_clock_mean_mhz", 1, func(r *req) **float64 { return &r.GPUSMClockMeanMHz }),
	optFloatCol("gpu_temp_max_c", 1, func(r *req) **float64 { return &r.GPUTempMaxC }),
	optBoolCol("gpu_throttled", func(r *req) **bool { return &r.GPUThrottled }),
), addedLater(
	// How a prompt_tokens prompt was made to its length; empty for a prompt written out.
	strCol("prompt_built", func(r *req) *string { return &r.PromptBuilt }),
))}

// errorClasses are the values of error_class: none (an empty cell) and every class of
// package record.
var errorClasses = record.ErrorClasses

// cacheHitAfterResetCol says whether a request whose cache was reset hit the prefix cache all
// the same: empty when that is unknown (no reset, or no prefix-cache counters), so that false
// always means "checked, and the reset took".
var cacheHitAfterResetCol = column[req]{Column: Column{Name: "cache_hit_after_reset", Kind: KindBool},
	get: func(r *req) string {
		if !r.CacheReset || r.PrefixCacheHits == nil {
			return ""
		}
		return formatBool(r.CacheHitAfterReset)
	},
	set: func(r *req, s string) (err error) {
		if s == "" {
			r.CacheHitAfterReset = false
			return nil
		}
		r.CacheHitAfterReset, err = parseBool(s)
		return err
	}}

// checkRequestID verifies that a request_id cell agrees with config_id and seq.
func checkRequestID(r *record.Request, cell string) error {
	id, err := unescapeCell(cell)
	if err != nil {
		return err
	}
	if want := RequestID(r.ConfigID, r.Seq); id != want {
		return fmt.Errorf("request_id %q does not match config_id and seq (%q)", id, want)
	}
	return nil
}
