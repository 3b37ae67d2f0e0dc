package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/enginefacts"
	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// scrapeTimeout bounds one scrape of /metrics. A variable so that tests can shorten it.
var scrapeTimeout = 2 * time.Second

// scrapeBackoff is how long the scraper leaves /metrics alone after a failed scrape; it doubles
// with every failure in a row, up to scrapeBackoffMax, and a scrape that works ends it. A
// variable so that a test can retry at once.
var scrapeBackoff = time.Second

// scrapeBackoffMax bounds the wait between two tries of a /metrics that keeps failing.
const scrapeBackoffMax = time.Minute

// scraper reads a server's /metrics around its requests and turns the differences into the
// server-side cells of a request (one at a time) or of a load point (several in flight). A
// scrape that fails is tried again after a backoff (scrapeBackoff): a /metrics that failed
// once, a scrape cut off by a busy server, need not cost the server's every later cell, and one
// that hangs costs a request at most one scrapeTimeout per backoff. The run warns once per
// server, and the server's note counts the failures.
type scraper struct {
	fetch    func(ctx context.Context) (*openai.Metrics, error)
	names    openai.ServerNames
	detected bool
	// off is set when the server has no metrics the runner reads; note says why, or which
	// names were read.
	off  bool
	note string
	// failures counts the scrapes that failed, first is the first one's error, and no scrape
	// is tried before retry; backoff is the wait after the next failure.
	failures int
	first    error
	retry    time.Time
	backoff  time.Duration
	// failed is called once, with the error, when a scrape first fails.
	failed func(error)
}

// newScraper returns the scraper of a server of the named engine at api.
func newScraper(engineName string, api *openai.Client, failed func(error)) *scraper {
	s := &scraper{fetch: api.Metrics, failed: failed}
	if !enginefacts.ServesMetrics(engineName) {
		s.off, s.note = true, engineName+" serves no Prometheus /metrics"
	}
	return s
}

// scrape returns the server's metrics now, or nil when the scraper is off, waits out a failure
// or the scrape failed. The first scrape that works finds out which engine's names the server
// serves.
func (s *scraper) scrape(ctx context.Context) *openai.Metrics {
	if s == nil || s.off || time.Now().Before(s.retry) {
		return nil
	}
	sctx, cancel := context.WithTimeout(ctx, scrapeTimeout)
	defer cancel()
	m, err := s.fetch(sctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // the run is stopping: not the server's fault
		}
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("GET /metrics took longer than %s: %w", scrapeTimeout, err)
		}
		var he *openai.HTTPError
		if errors.As(err, &he) && !s.detected && he.Status < 500 {
			// A server without metrics, not a broken one: no warning, a note.
			s.off, s.note = true, fmt.Sprintf("no server-side timings: GET /metrics answered %d", he.Status)
			return nil
		}
		s.fail(err)
		return nil
	}
	s.backoff = 0
	if !s.detected {
		n, ok := openai.DetectServerNames(m)
		if !ok {
			s.off, s.note = true, "no server-side timings: GET /metrics serves none of the names of vLLM, SGLang or llama.cpp"
			return nil
		}
		s.names, s.detected = n, true
		// The note names what this server serves, not every name of its dialect: a name it
		// lacks leaves its column empty, and the note must not say it was read.
		s.note = "server-side timings from GET /metrics (" + n.Dialect + " names: " + strings.Join(n.Present(m), ", ") + ")"
	}
	return m
}

// fail counts a failed scrape, warns of the first, and sets when the next one may be tried.
func (s *scraper) fail(err error) {
	s.failures++
	if s.first == nil {
		s.first = err
		if s.failed != nil {
			s.failed(err)
		}
	}
	s.retry = time.Now().Add(s.backoff)
	s.backoff = min(max(2*s.backoff, scrapeBackoff), scrapeBackoffMax)
	if s.failures == 1 {
		s.retry = time.Now().Add(scrapeBackoff)
	}
}

// serverNote returns what the server's row says of its /metrics: which names were read or why
// none were, and how many scrapes failed, with the first failure's error.
func (s *scraper) serverNote() string {
	if s == nil {
		return ""
	}
	if s.failures == 0 {
		return s.note
	}
	failed := fmt.Sprintf("%s failed (the first: %v), and the requests around a failed scrape have no server-side cells",
		plural(s.failures, "scrape of GET /metrics", "scrapes of GET /metrics"), s.first)
	if s.note == "" {
		return "no server-side timings: " + failed
	}
	return s.note + "; " + failed
}

// plural returns n and the noun, one or many.
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// fill sets the server-side fields of rec, one request alone on the server, from the scrapes
// just before and just after it. Every histogram's count must have grown by exactly one;
// otherwise another client used the server, and the cells stay empty.
func (s *scraper) fill(rec *record.Request, before, after *openai.Metrics) {
	if s == nil || before == nil || after == nil {
		return
	}
	d := s.names.Delta(before, after)
	if n, ok := d.Requests(); ok && n != 1 {
		return
	}
	dur := func(key string) *time.Duration {
		c, ok := d[key]
		if !ok || (c.Count >= 0 && c.Count != 1) {
			return nil
		}
		return record.Dur(secondsToDuration(c.Sum))
	}
	count := func(key string) *int {
		c, ok := d[key]
		if !ok {
			return nil
		}
		return record.Int(int(math.Round(c.Sum)))
	}
	rec.ServerTTFT, rec.ServerE2E, rec.ServerQueue = dur(openai.DeltaTTFT), dur(openai.DeltaE2E), dur(openai.DeltaQueue)
	rec.ServerPrefill, rec.ServerDecode = dur(openai.DeltaPrefill), dur(openai.DeltaDecode)
	rec.ServerPromptTokens, rec.ServerGenerationTokens = count(openai.DeltaPromptTokens), count(openai.DeltaGenerationTokens)
	rec.PrefixCacheQueries, rec.PrefixCacheHits = count(openai.DeltaCacheQueries), count(openai.DeltaCacheHits)
	if rec.TTFT != nil && rec.ServerTTFT != nil {
		rec.ClientOverhead = record.Dur(*rec.TTFT - *rec.ServerTTFT)
	}
	// A reset that took leaves nothing to hit: a hit means the reset was answered but did
	// not empty the cache.
	rec.CacheHitAfterReset = rec.CacheReset && rec.PrefixCacheHits != nil && *rec.PrefixCacheHits > 0
}

// loadPoint returns what the server's metrics say about a load point, from the scrapes just
// before its first request and just after its last: the count of requests the server finished
// in between (the load point's warm-ups as well as its measured requests, which run in the same
// block), the mean of each histogram over them, and the token and prefix-cache counters.
// clientTTFT is the sum of the client TTFTs of the load point's requests that have one, and
// withTTFT how many they are: the client overhead is their mean minus the server's mean TTFT,
// and only when the server's TTFT histogram counted as many requests, so that both means are
// over the same requests.
func (s *scraper) loadPoint(before, after *openai.Metrics, clientTTFT time.Duration, withTTFT int) results.LoadServer {
	d := s.names.Delta(before, after)
	var ls results.LoadServer
	if n, ok := d.Requests(); ok {
		ls.Requests = record.Int(int(math.Round(n)))
	}
	mean := func(key string) *time.Duration {
		if m, ok := d[key].Mean(); ok {
			return record.Dur(secondsToDuration(m))
		}
		return nil
	}
	count := func(key string) *int {
		if c, ok := d[key]; ok {
			return record.Int(int(math.Round(c.Sum)))
		}
		return nil
	}
	ls.TTFTMean, ls.E2EMean, ls.QueueMean = mean(openai.DeltaTTFT), mean(openai.DeltaE2E), mean(openai.DeltaQueue)
	ls.PrefillMean, ls.DecodeMean = mean(openai.DeltaPrefill), mean(openai.DeltaDecode)
	ls.PromptTokens, ls.GenerationTokens = count(openai.DeltaPromptTokens), count(openai.DeltaGenerationTokens)
	ls.CacheQueries, ls.CacheHits = count(openai.DeltaCacheQueries), count(openai.DeltaCacheHits)
	if c, ok := d[openai.DeltaTTFT]; ok && withTTFT > 0 && c.Count == float64(withTTFT) && ls.TTFTMean != nil {
		ls.ClientOverheadMean = record.Dur(clientTTFT/time.Duration(withTTFT) - *ls.TTFTMean)
	}
	return ls
}

// secondsToDuration converts a histogram's seconds to a duration, rounded to the nanosecond.
func secondsToDuration(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }
