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
	"github.com/onelayerdown/runner/runner/internal/openai"
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
	srv, c := rs.srv, rs.g.configs[ci]
	rs.subs.tell(LoadPointStarted{ServerID: rs.g.serverID, Config: c, Requests: n})
	lr := &loadRun{rs: rs, c: c, ci: ci, seq0: seq0, recorded: make([]bool, n), left: n,
		perRequest: c.Cache == "reset", resetOnce: c.Cache == "reset_per_config"}
	if lr.resetOnce {
		resetAt := time.Now()
		if err := srv.ResetCache(ctx); err != nil {
			if err := rs.afterFailedReset(ctx, resetAt); err != nil {
				return err
			}
			// A load point measured on a cache that was not emptied is not the one asked for.
			return lr.rest(ctx, record.ErrCacheReset, "reset the prefix cache before the load point: "+err.Error())
		}
	}
	// The server's metrics are scraped around the whole load point, after its reset (which
	// may itself read /metrics): every request of the block, warm-ups included, falls between
	// the two scrapes.
	before := rs.sc.scrape(ctx)
	beforeAt := time.Now()
	lr.holdLast = before != nil
	lr.distinct = distinctPrompts(c)
	// The body's parameters are the same for every request of the load point but the prompt
	// of a distinct one: built once here, copied for each request (its maps are only read).
	lr.base = params(c, srv.Model(), rs.prompts)
	if lr.perRequest || lr.resetOnce {
		lr.base = withResetFields(lr.base, srv.CacheResetFields())
	}
	lr.tail = rs.prompts.prompt(keyOf(c))
	err := measure.RunLoad(ctx, rs.client, measureLoad(c.Load), n, lr.prepare, func(r measure.LoadResult) error {
		return lr.done(ctx, r)
	})
	switch {
	case errors.Is(err, errServerGone):
		rs.subs.tell(ServerExited{ServerID: rs.g.serverID, Engine: rs.g.server.Engine, Err: srv.Err()})
		if ferr := lr.flush(); ferr != nil {
			return ferr
		}
		if ferr := lr.rest(ctx, record.ErrServer, "server exited: "+errString(srv.Err())); ferr != nil {
			return ferr
		}
		return errServerGone
	case err != nil:
		return err // a held last row is dropped: the load point is partial
	case ctx.Err() != nil:
		return ctx.Err()
	}
	if before != nil {
		if err := lr.recordServer(ctx, before, beforeAt); err != nil {
			return err
		}
	}
	if err := lr.flush(); err != nil {
		return err
	}
	return ctx.Err()
}

// loadRun is the state of one load point while its requests run.
type loadRun struct {
	rs       *serverRun
	c        experiment.Config
	ci, seq0 int    // the config's index in the group, and the sequence number of its first request
	recorded []bool // by request: recorded already (or held)
	left     int    // requests neither recorded nor held

	// holdLast is set when the load point gets a server row (load_server.csv): its last
	// request row is held until that row is recorded, so that a run stopped in between leaves
	// the load point partial (a resume runs it again whole) rather than whole without its
	// server row. held is that row.
	holdLast bool
	held     *RequestMeasured
	heldJob  measure.Job

	perRequest bool          // the cache is emptied before every request (cache: reset)
	resetOnce  bool          // the cache is emptied before the load point (cache: reset_per_config)
	distinct   bool          // every request's prompt gets a prefix of its own (distinctPrompts)
	base       openai.Params // every request's body, but a distinct prompt
	tail       string        // the prompt after a distinct prefix

	clientTTFT time.Duration // the sum of the client TTFTs of the requests recorded with one
	withTTFT   int           // how many they are
}

// job returns the job of the load point's request i: its warm-ups come first.
func (lr *loadRun) job(i int) measure.Job {
	j := measure.Job{Config: lr.ci, Seq: lr.seq0 + i, Phase: record.PhaseMeasure, Rep: i - lr.c.Warmup}
	if i < lr.c.Warmup {
		j.Phase, j.Rep = record.PhaseWarmup, i
	}
	return j
}

// rest records the load point's requests not recorded yet as failed with the same reason.
func (lr *loadRun) rest(ctx context.Context, class record.ErrorClass, msg string) error {
	return lr.rs.failAll(ctx, func(yield func(measure.Job) bool) {
		for i, ok := range lr.recorded {
			if !ok && !yield(lr.job(i)) {
				return
			}
		}
	}, class, msg)
}

// prepare returns request i's spec, after emptying the cache when every request gets an empty
// one (measure.RunLoad's prepare).
func (lr *loadRun) prepare(ctx context.Context, i int) (measure.Spec, error) {
	if lr.perRequest {
		at := time.Now()
		if err := lr.rs.srv.ResetCache(ctx); err != nil {
			return measure.Spec{}, resetError{err, at}
		}
	}
	p := lr.base
	if lr.distinct {
		p.Prompt = lr.rs.prompts.prefix(lr.c, i) + " " + lr.tail
	}
	return measure.Spec{Params: p, Timeout: lr.c.Timeouts.Request}, nil
}

// done records a request of the load point as it completes (measure.RunLoad's done). A request
// that the run's interrupt kept from being sent or stopped midway is not recorded: the load
// point is then partial, and a resume runs it again whole. It returns errServerGone when the
// request's failure shows that the server exited.
func (lr *loadRun) done(ctx context.Context, r measure.LoadResult) error {
	c, down := lr.c, lr.rs.down
	j := lr.job(r.Index)
	rec := r.Record
	if r.Err != nil {
		var re resetError
		if !errors.As(r.Err, &re) || ctx.Err() != nil {
			return nil // not sent: the run was interrupted
		}
		if down.goingDown(ctx, re.at) {
			return errServerGone
		}
		if ctx.Err() != nil {
			return nil // interrupted while the server's state was decided: not a failed reset
		}
		rec = record.Request{Status: record.StatusFailed, ErrorClass: record.ErrCacheReset,
			Error: "reset the prefix cache: " + re.err.Error(), Start: time.Now().UTC(), InFlight: 0}
	} else if rec.ErrorClass == record.ErrCanceled {
		return nil // stopped mid-request: the load point is partial, and a resume runs it again
	}
	stamp(&rec, c, j)
	rec.CacheReset = (lr.perRequest && r.Err == nil) || (lr.resetOnce && r.Index == 0)
	if r.Err == nil {
		rec.PromptBuilt = lr.rs.prompts.builtBy(c)
	}
	ev := RequestMeasured{Config: c, Record: rec}
	if lr.holdLast && lr.left == 1 {
		lr.held, lr.heldJob = &ev, j
	} else if err := lr.rs.recorded(j, ev); err != nil {
		return err
	}
	lr.recorded[r.Index] = true
	lr.left--
	if rec.TTFT != nil {
		lr.clientTTFT += *rec.TTFT
		lr.withTTFT++
	}
	if rec.Status != record.StatusOK && (rec.ErrorClass == record.ErrTruncated || rec.ErrorClass == record.ErrConnect) && down.goingDown(ctx, rec.Start) {
		return errServerGone
	}
	return nil
}

// flush records the held last row of the load point, if any.
func (lr *loadRun) flush() error {
	if lr.held == nil {
		return nil
	}
	ev := *lr.held
	lr.held = nil
	return lr.rs.recorded(lr.heldJob, ev)
}

// recordServer scrapes the server's metrics after the load point and records what they say
// of it, from before (scraped at beforeAt) to now. A failed scrape records nothing; one that
// the run's interrupt cut short returns ctx's error, so that the held last row is not recorded
// without the server row.
func (lr *loadRun) recordServer(ctx context.Context, before *openai.Metrics, beforeAt time.Time) error {
	rs, c := lr.rs, lr.c
	after := rs.sc.scrape(ctx)
	if after == nil {
		return ctx.Err()
	}
	row := results.LoadServerRow{ConfigID: c.ID, ServerID: c.ServerID, Before: beforeAt.UTC(), After: time.Now().UTC(),
		LoadServer: rs.sc.loadPoint(before, after, lr.clientTTFT, lr.withTTFT)}
	if err := rs.subs.record(LoadPointScraped{ServerID: rs.g.serverID, Config: c, Server: row}); err != nil {
		return fmt.Errorf("record the server's figures of load point %s: %w", c.ID, err)
	}
	return nil
}

// resetError is a cache reset that failed before a request of a load point, begun at at.
type resetError struct {
	err error
	at  time.Time
}

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
