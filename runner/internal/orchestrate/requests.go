package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/measure"
	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// send sends the server's pending requests in order, each alone or a load point at a time,
// and records them. Once the server has exited, the requests left are recorded as failed with
// the reason.
func (rs *serverRun) send(ctx context.Context, pending iter.Seq[measure.Job]) error {
	next, stopJobs := iter.Pull(pending)
	defer stopJobs()
	// from returns j and every job after it, for recording the rest as failed.
	from := func(j measure.Job) iter.Seq[measure.Job] {
		return func(yield func(measure.Job) bool) {
			if !yield(j) {
				return
			}
			for {
				j, ok := next()
				if !ok || !yield(j) {
					return
				}
			}
		}
	}
	// rest returns every job not taken yet.
	rest := func(yield func(measure.Job) bool) {
		for {
			j, ok := next()
			if !ok || !yield(j) {
				return
			}
		}
	}
	for {
		j, ok := next()
		if !ok {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if rs.srv.Exited() {
			return rs.serverExited(ctx, from(j))
		}
		c := rs.g.configs[j.Config]
		if msg := rs.prompts.tooShort(c); msg != "" {
			// No prompt of its length exists on this server: the config fails, not
			// the server, whose other configs are sent as usual.
			if err := rs.failAll(ctx, func(yield func(measure.Job) bool) { yield(j) }, record.ErrPromptTooShort, msg); err != nil {
				return err
			}
			continue
		}
		if c.Load != nil && j.Phase != record.PhaseFirst {
			// A load point: this job and the rest of its config's, sent as one block.
			n := configRequests(c)
			for range n - 1 {
				next()
			}
			err := rs.loadPoint(ctx, j.Config, j.Seq, n)
			if errors.Is(err, errServerGone) {
				return rs.failAll(ctx, rest, record.ErrServer, "server exited: "+errString(rs.srv.Err()))
			}
			if err != nil {
				return err
			}
			continue
		}
		if err := rs.request(ctx, j); errors.Is(err, errServerGone) {
			return rs.serverExited(ctx, from(j))
		} else if err != nil {
			return err
		}
	}
}

// request sends job j alone, after emptying the server's cache when its configs ask for it,
// and records it. It returns errServerGone, with j not recorded, when the reset failed because
// the server is exiting.
func (rs *serverRun) request(ctx context.Context, j measure.Job) error {
	c, srv := rs.g.configs[j.Config], rs.srv
	rec := record.Request{}
	resetOK := true
	if rs.reset {
		resetAt := time.Now()
		if err := srv.ResetCache(ctx); err != nil {
			if err := rs.afterFailedReset(ctx, resetAt); err != nil {
				return err
			}
			rec = record.Request{Status: record.StatusFailed, ErrorClass: record.ErrCacheReset,
				Error: "reset the prefix cache: " + err.Error(), Start: time.Now().UTC()}
			resetOK = false
		}
	}
	var before *openai.Metrics
	if resetOK {
		// Scraped before the request is prepared, so that t0 follows it closely, and
		// after the reset, which may itself read /metrics.
		before = rs.sc.scrape(ctx)
		var err error
		if rec, err = rs.client.Do(ctx, rs.spec(c)); err != nil {
			return err
		}
		if rec.ErrorClass == record.ErrCanceled {
			// The run was stopped mid-request: nothing to keep; a resume sends it again.
			return ctx.Err()
		}
	}
	stamp(&rec, c, j)
	rec.CacheReset = rs.reset && resetOK
	if before != nil && rec.Status == record.StatusOK {
		rs.sc.fill(&rec, before, rs.sc.scrape(ctx))
	}
	if resetOK {
		rec.PromptBuilt = rs.prompts.builtBy(c)
	}
	if err := rs.recorded(j, RequestMeasured{Config: c, Record: rec}); err != nil {
		return err
	}
	if rec.Status != record.StatusOK && (rec.ErrorClass == record.ErrTruncated || rec.ErrorClass == record.ErrConnect) {
		// A broken connection may be the server dying: if it is, the next turn of the
		// loop sees its exit and fails the rest of its requests with the reason.
		rs.down.goingDown(ctx, rec.Start)
	}
	return nil
}

// spec returns what the client sends for a request of config c sent alone.
func (rs *serverRun) spec(c experiment.Config) measure.Spec {
	p := params(c, rs.srv.Model(), rs.prompts)
	if rs.reset {
		p = withResetFields(p, rs.srv.CacheResetFields())
	}
	return measure.Spec{Params: p, Timeout: c.Timeouts.Request}
}

// rewarm sends a resumed server what a fresh one gets before its measured requests: one
// request after boot and each pending config's warm-up requests (those with measured requests
// still to send). Their answers are not recorded: the folder already has these rows from the
// earlier run. A failure here is left to the measured requests to show.
func (rs *serverRun) rewarm(ctx context.Context) error {
	warm := rs.warmAgain()
	if len(warm) == 0 {
		return nil
	}
	rs.subs.tell(Rewarming{ServerID: rs.g.serverID, Requests: len(warm)})
	for _, j := range warm {
		if err := ctx.Err(); err != nil {
			return err
		}
		if rs.prompts.tooShort(rs.g.configs[j.Config]) != "" {
			continue // never sent: its rows are failures
		}
		if rs.reset {
			if err := rs.srv.ResetCache(ctx); err != nil && ctx.Err() != nil {
				return ctx.Err()
			}
		}
		rec, err := rs.client.Do(ctx, rs.spec(rs.g.configs[j.Config]))
		if err != nil {
			return err
		}
		if rec.ErrorClass == record.ErrCanceled {
			return ctx.Err()
		}
	}
	return nil
}

// warmAgain returns the requests that rewarm sends: those of the server's first request and
// warm-ups that the folder already holds, and that a measured request still to send follows.
func (rs *serverRun) warmAgain() []measure.Job {
	g, o := rs.g, rs.o
	var warm []measure.Job // at most the first request and the warm-ups: bounded by validation
	if g.underLoad() {
		// Every load point has its warm-ups in its own block: only the first request
		// after the boot is to be made again.
		for j := range g.jobs(o.Experiment) {
			if o.Done.Has(g.configs[0].ID, j.Seq) {
				warm = append(warm, j)
			}
			break
		}
	}
	need := map[int]bool{}
	for j := range g.pending(o) {
		if j.Phase == record.PhaseMeasure {
			need[j.Config] = true
		}
	}
	for j := range g.jobs(o.Experiment) {
		if j.Phase == record.PhaseMeasure || g.underLoad() {
			break // warm-ups all come before the first measured request
		}
		if !o.Done.Has(g.configs[j.Config].ID, j.Seq) {
			continue // pending: it is sent and recorded as itself
		}
		if j.Phase == record.PhaseFirst || need[j.Config] {
			warm = append(warm, j)
		}
	}
	return warm
}

// recorded reports a request recorded (e is RequestMeasured or RequestNotSent for job j),
// counts it, and reports its config done when it was the config's last request.
func (rs *serverRun) recorded(j measure.Job, e Event) error {
	c := rs.g.configs[j.Config]
	var rec record.Request
	switch ev := e.(type) {
	case RequestMeasured:
		rs.sampler.Join(&ev.Record)
		e, rec = ev, ev.Record
		defer rs.flushSamples()
	case RequestNotSent:
		rec = ev.Record
	}
	if err := rs.subs.record(e); err != nil {
		return fmt.Errorf("record request %s: %w", results.RequestID(c.ID, j.Seq), err)
	}
	rs.out.Sent++
	if rec.Status != record.StatusOK {
		rs.out.Failed++
	}
	if rs.left[j.Config]--; rs.left[j.Config] == 0 {
		rs.subs.tell(ConfigDone{Config: c})
	}
	return nil
}

// serverExited records the rest of a server's requests as failed because the server exited
// while serving, and tells the subscribers how it ended.
func (rs *serverRun) serverExited(ctx context.Context, rest iter.Seq[measure.Job]) error {
	rs.subs.tell(ServerExited{ServerID: rs.g.serverID, Engine: rs.g.server.Engine, Err: rs.srv.Err()})
	return rs.failAll(ctx, rest, record.ErrServer, "server exited: "+errString(rs.srv.Err()))
}

// failAll records every pending request as failed with the same reason. An interrupt stops it
// between two rows; the rows not written are sent by a resume.
func (rs *serverRun) failAll(ctx context.Context, pending iter.Seq[measure.Job], class record.ErrorClass, msg string) error {
	now := time.Now().UTC()
	for j := range pending {
		if err := ctx.Err(); err != nil {
			return err
		}
		c := rs.g.configs[j.Config]
		rec := record.Request{Start: now, Status: record.StatusFailed, ErrorClass: class, Error: msg}
		stamp(&rec, c, j)
		if err := rs.recorded(j, RequestNotSent{Config: c, Record: rec}); err != nil {
			return err
		}
	}
	return nil
}

// stamp writes on rec what the run knows of a request besides what was measured: the config
// and server it belongs to, its place in the server's sequence, and what its config asked for
// (the cache handling, max_tokens, prompt_tokens). Every row is stamped here, whether it was
// sent alone, in a load point or not at all, so that all rows of a config say the same.
func stamp(rec *record.Request, c experiment.Config, j measure.Job) {
	rec.ConfigID, rec.ServerID = c.ID, c.ServerID
	rec.Seq, rec.Phase, rec.Rep = j.Seq, j.Phase, j.Rep
	rec.Cache = c.Cache
	rec.MaxTokens = c.Request.MaxTokens
	if c.Request.PromptTokens > 0 {
		rec.PromptTokensRequested = record.Int(c.Request.PromptTokens)
	}
}

// withResetFields returns p with the fields that keep the server from reusing its cache
// (llama-server: "cache_prompt": false) added to its extra body fields; a field the experiment
// sets itself in request.extra wins.
func withResetFields(p openai.Params, fields map[string]any) openai.Params {
	if len(fields) == 0 {
		return p
	}
	extra := maps.Clone(fields)
	maps.Copy(extra, p.Extra)
	p.Extra = extra
	return p
}

// params builds the request body parameters of a config.
func params(c experiment.Config, model string, prompts *promptSet) openai.Params {
	r := c.Request
	prompt := r.Prompt
	if r.PromptTokens > 0 {
		prompt = prompts.prompt(keyOf(c))
		if distinctPrompts(c) {
			// Sent alone (the server's first request): a prefix none of the load
			// point's requests has.
			prompt = prompts.prefix(c, configRequests(c)) + " " + prompt
		}
	}
	return openai.Params{
		API: openai.API(r.API), Model: model, Prompt: prompt,
		MaxTokens: r.MaxTokens, IgnoreEOS: r.IgnoreEOS, MinTokens: r.MinTokens,
		Temperature: r.Temperature, Seed: r.Seed, Stop: r.Stop, Extra: r.Extra,
	}
}

// errString returns err's message, or says that there was none.
func errString(err error) string {
	if err == nil {
		return "without an error"
	}
	return err.Error()
}

// afterFailedReset says what a failed cache reset, begun at resetAt, means for the requests
// waiting on it: ctx's error when the run was interrupted, before or while the server's state
// was decided (what waits is then left unrecorded, for a resume); errServerGone when the server
// is exiting; nil when the reset itself failed, and is to be recorded as such.
func (rs *serverRun) afterFailedReset(ctx context.Context, resetAt time.Time) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if rs.down.goingDown(ctx, resetAt) {
		return errServerGone
	}
	return ctx.Err()
}
