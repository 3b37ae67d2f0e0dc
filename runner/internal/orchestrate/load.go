package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"iter"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/measure"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// underLoad reports whether any of the group's configs is a load point. Such a group runs its
// configs one after another, each as one block: the server's first request alone, then for
// each config its warm-ups and its measured requests (under its load when it has one).
func (g group) underLoad() bool {
	for _, c := range g.configs {
		if c.Load != nil {
			return true
		}
	}
	return false
}

// loadJobs is the request order of a group under load: the first request after the boot, then
// config after config, each config's warm-ups before its measured requests.
func (g group) loadJobs() iter.Seq[measure.Job] {
	return func(yield func(measure.Job) bool) {
		if len(g.configs) == 0 || !yield(measure.Job{Config: 0, Phase: record.PhaseFirst}) {
			return
		}
		for ci, c := range g.configs {
			seq := 0
			if ci == 0 {
				seq = 1
			}
			for r := range max(c.Warmup, 0) {
				if !yield(measure.Job{Config: ci, Phase: record.PhaseWarmup, Rep: r, Seq: seq}) {
					return
				}
				seq++
			}
			for r := range max(c.Repetitions, 0) {
				if !yield(measure.Job{Config: ci, Phase: record.PhaseMeasure, Rep: r, Seq: seq}) {
					return
				}
				seq++
			}
		}
	}
}

// PartialLoadPoints returns the ids of the configs that are load points and have some, but not
// all, of their requests in done: a load point interrupted part way. A resume must discard
// their rows and run them again whole, since rows measured under a load that was cut short are
// not rows of that load.
func PartialLoadPoints(configs []experiment.Config, done results.Done) []string {
	var out []string
	for _, g := range groupByServer(configs) {
		for i, left := range g.left(done) {
			if c := g.configs[i]; c.Load != nil && left > 0 && done.Count(c.ID) > 0 {
				out = append(out, c.ID)
			}
		}
	}
	return out
}

// errServerGone stops a load point whose server exited.
var errServerGone = errors.New("server exited")

// loadPoint sends the n requests of config ci, from seq0 on, as one load point under the
// config's load, and records each as it completes. It returns errServerGone when the server
// exited during the load point, once the requests it did not record are recorded as failed;
// ctx's error when the run was interrupted (the load point is then partial, and a resume runs
// it again whole); or an error that stops the run.
func (rs *serverRun) loadPoint(ctx context.Context, ci, seq0, n int) error {
	srv, client, prompts := rs.srv, rs.client, rs.prompts
	c := rs.g.configs[ci]
	l := c.Load
	rs.subs.tell(LoadPointStarted{ServerID: rs.g.serverID, Config: c, Requests: n})
	job := func(i int) measure.Job {
		j := measure.Job{Config: ci, Seq: seq0 + i, Phase: record.PhaseMeasure, Rep: i - c.Warmup}
		if i < c.Warmup {
			j.Phase, j.Rep = record.PhaseWarmup, i
		}
		return j
	}
	recorded := make([]bool, n)
	rest := func(class record.ErrorClass, msg string) error {
		return rs.failAll(ctx, func(yield func(measure.Job) bool) {
			for i, ok := range recorded {
				if !ok && !yield(job(i)) {
					return
				}
			}
		}, class, msg)
	}

	perRequest := c.Cache == "reset"
	resetOnce := c.Cache == "reset_per_config"
	if resetOnce {
		if err := srv.ResetCache(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if goingDown(ctx, srv) {
				return errServerGone
			}
			// A load point measured on a cache that was not emptied is not the one asked for.
			return rest(record.ErrCacheReset, "reset the prefix cache before the load point: "+err.Error())
		}
	}
	// The server's metrics are scraped around the whole load point, after its reset (which
	// may itself read /metrics): every request of the block, warm-ups included, falls between
	// the two scrapes.
	before := rs.sc.scrape(ctx)
	beforeAt := time.Now()
	var clientTTFT time.Duration
	withTTFT := 0
	distinct := distinctPrompts(c)
	// The body's parameters are the same for every request of the load point but the prompt
	// of a distinct one: built once here, copied for each request (its maps are only read).
	base := params(c, srv.Model(), prompts)
	if perRequest || resetOnce {
		base = withResetFields(base, srv.CacheResetFields())
	}
	tail := prompts.prompt(keyOf(c)) // the prompt after a distinct prefix
	prepare := func(ctx context.Context, i int) (measure.Spec, error) {
		if perRequest {
			if err := srv.ResetCache(ctx); err != nil {
				return measure.Spec{}, resetError{err}
			}
		}
		p := base
		if distinct {
			p.Prompt = prompts.prefix(c, i) + " " + tail
		}
		return measure.Spec{Params: p, Timeout: c.Timeouts.Request}, nil
	}
	done := func(r measure.LoadResult) error {
		j := job(r.Index)
		rec := r.Record
		if r.Err != nil {
			var re resetError
			if !errors.As(r.Err, &re) || ctx.Err() != nil {
				return nil // not sent: the run was interrupted
			}
			if goingDown(ctx, srv) {
				return errServerGone
			}
			rec = record.Request{Status: record.StatusFailed, ErrorClass: record.ErrCacheReset,
				Error: "reset the prefix cache: " + re.err.Error(), Start: time.Now().UTC(), InFlight: 0}
		} else if rec.ErrorClass == record.ErrCanceled {
			return nil // stopped mid-request: the load point is partial, and a resume runs it again
		}
		stamp(&rec, c, j)
		rec.CacheReset = (perRequest && r.Err == nil) || (resetOnce && r.Index == 0)
		if r.Err == nil {
			rec.PromptBuilt = prompts.builtBy(c)
		}
		if err := rs.recorded(j, RequestMeasured{Config: c, Record: rec}); err != nil {
			return err
		}
		recorded[r.Index] = true
		if rec.TTFT != nil {
			clientTTFT += *rec.TTFT
			withTTFT++
		}
		if rec.Status != record.StatusOK && (rec.ErrorClass == record.ErrTruncated || rec.ErrorClass == record.ErrConnect) && goingDown(ctx, srv) {
			return errServerGone
		}
		return nil
	}
	err := measure.RunLoad(ctx, client, measureLoad(l), n, prepare, done)
	switch {
	case errors.Is(err, errServerGone):
		rs.subs.tell(ServerExited{ServerID: rs.g.serverID, Engine: rs.g.server.Engine, Err: srv.Err()})
		if ferr := rest(record.ErrServer, "server exited: "+errString(srv.Err())); ferr != nil {
			return ferr
		}
		return errServerGone
	case err != nil:
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	if before != nil {
		if after := rs.sc.scrape(ctx); after != nil {
			row := results.LoadServerRow{ConfigID: c.ID, ServerID: c.ServerID, Before: beforeAt.UTC(), After: time.Now().UTC(),
				LoadServer: rs.sc.loadPoint(before, after, clientTTFT, withTTFT)}
			if err := rs.subs.record(LoadPointScraped{ServerID: rs.g.serverID, Config: c, Server: row}); err != nil {
				return fmt.Errorf("record the server's figures of load point %s: %w", c.ID, err)
			}
		}
	}
	return ctx.Err()
}

// resetError is a cache reset that failed before a request of a load point.
type resetError struct{ err error }

func (e resetError) Error() string { return "reset the prefix cache: " + e.err.Error() }

// measureLoad converts a config's load into the load measure runs.
func measureLoad(l *experiment.LoadSpec) measure.Load {
	return measure.Load{Concurrency: l.Concurrency, Rate: l.Rate, Arrival: l.Arrival, Burstiness: l.Burstiness,
		MaxConcurrency: l.MaxConcurrency, Seed: l.Seed}
}

// distinctPrompts reports whether each request of the config gets a prompt of its own: a load
// point whose prompt is synthesised from prompt_tokens, unless its load says shared.
// A prompt shorter than minDistinct tokens has no room for the prefix and is shared.
func distinctPrompts(c experiment.Config) bool {
	return c.Load != nil && c.Load.Prompts != "shared" && c.Request.PromptTokens >= minDistinct
}

// minDistinct is the shortest prompt that gets a distinct prefix, in tokens.
const minDistinct = 2 * prefixWords

// prefixWords is the length of a distinct prompt's prefix, in one-letter words.
const prefixWords = 6

// distinctPrefix returns request i's prefix of a load point's prompts: prefixWords letters of
// letters separated by spaces. A pre-tokenizer splits at spaces, and letters holds only letters
// that the server counts alike (prefixLetters; all 26 lower-case letters are single tokens in
// common BPE and SentencePiece vocabularies), so every prefix has the same token count and the
// prompt's length stays exact. The prefixes are the digits of i, in base len(letters), plus an
// offset drawn from the seed and the config: distinct within a load point (minLetters^6 is
// above the most requests a run may send), and unlikely to meet another config's. They differ
// in the prompt's first tokens, so no request finds another's prompt in a prefix cache, which
// matches blocks from the start.
func distinctPrefix(letters string, seed int64, configID string, i int) string {
	h := fnv.New64a()
	fmt.Fprintf(h, "%d/%s", seed, configID)
	base := uint64(len(letters))
	space := base * base * base * base * base * base
	v := (h.Sum64()%space + uint64(i)) % space
	var b strings.Builder
	for k := range prefixWords {
		if k > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte(letters[v%base])
		v /= base
	}
	return b.String()
}
