// Package orchestrate runs the matrix: for each distinct server config it boots the server once,
// prepares the prompts, sends every request of that server's configs in the experiment's order,
// and stops the server before the next one boots. It reports what happens as typed events
// (events.go) to its subscribers: the result folder records the requests and servers (Record),
// the progress display shows them.
package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"maps"
	"net/http"
	"strings"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/measure"
	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
	"github.com/onelayerdown/runner/runner/internal/telemetry"
	"github.com/onelayerdown/runner/runner/internal/tokens"
)

// Options is everything a run needs.
type Options struct {
	Experiment *experiment.Experiment
	Configs    []experiment.Config
	// Subscribers receive the run's events, in this order. Put the one that records the rows
	// (Record) first, so that a request it cannot record is reported nowhere else.
	Subscribers []Subscriber
	// Logs opens where the output of a server goes, for each server config the run boots or
	// connects to, with the name that messages call it by (a path); the run closes it once the
	// server has ended. Nil discards the servers' output.
	Logs func(serverID string) (w io.WriteCloser, name string, err error)
	// Done holds the requests a resumed folder already has; they are not sent again.
	Done results.Done
	// Executable is the runner's own executable, which engine sim runs; empty means
	// os.Executable().
	Executable string
	// StopTimeout bounds how long stopping a server may take once the run is over or
	// interrupted.
	StopTimeout time.Duration
	// StopGrace is how long a booted server gets to exit after SIGTERM before SIGKILL; 0
	// means engine.DefaultStopGrace.
	StopGrace time.Duration
	// Telemetry configures the GPU sampler run beside each server the run boots (its
	// ServerID and ProcessGroup are filled in per server); the zero value samples with the
	// nvidia-smi on the PATH, where there is one. NoTelemetry turns sampling off.
	Telemetry   telemetry.Options
	NoTelemetry bool
}

// Outcome counts what a run did.
type Outcome struct {
	Sent        int // requests sent and recorded
	Failed      int // of which failed
	Skipped     int // already in the folder (resume)
	BootFailed  int // server configs that could not be booted
	Interrupted bool
}

// Run runs every config, server by server. It returns an error only when the run cannot go
// on at all (the folder cannot be written, the run was interrupted); a server that fails to
// boot or a request that fails is recorded and the run goes on.
func Run(ctx context.Context, o Options) (Outcome, error) {
	var out Outcome
	if o.StopTimeout == 0 {
		o.StopTimeout = 2 * time.Minute
	}
	groups := groupByServer(o.Configs)
	tk, err := tokens.NewTiktoken("")
	if err != nil {
		return out, fmt.Errorf("load the tiktoken encoding: %w", err)
	}
	total := 0
	for _, g := range groups {
		pending := sum(g.left(o.Done))
		out.Skipped += experiment.Requests(g.configs) - pending
		total = experiment.AddSat(total, pending)
	}
	subs := subscribers(o.Subscribers)
	subs.tell(RunStarted{Requests: total, Servers: len(groups), Skipped: out.Skipped})

	for gi, g := range groups {
		if err := ctx.Err(); err != nil {
			out.Interrupted = true
			return out, err
		}
		if err := runServer(ctx, o, gi, len(groups), g, tk, &out); err != nil {
			if ctx.Err() != nil {
				out.Interrupted = true
			}
			return out, err
		}
	}
	subs.tell(RunFinished{})
	return out, nil
}

// group is the configs that share one server config, in expansion order.
type group struct {
	serverID string
	server   experiment.Server
	configs  []experiment.Config
}

func groupByServer(configs []experiment.Config) []group {
	var groups []group
	index := map[string]int{}
	for _, c := range configs {
		i, ok := index[c.ServerID]
		if !ok {
			i = len(groups)
			index[c.ServerID] = i
			groups = append(groups, group{serverID: c.ServerID, server: c.Server})
		}
		groups[i].configs = append(groups[i].configs, c)
	}
	return groups
}

// counts returns how many warm-up and measured requests each of the group's configs gets.
func (g group) counts() []measure.Counts {
	counts := make([]measure.Counts, len(g.configs))
	for i, c := range g.configs {
		counts[i] = measure.Counts{Warmup: c.Warmup, Repetitions: c.Repetitions}
	}
	return counts
}

// jobs returns the group's requests in the order they are sent, generated as they are consumed.
func (g group) jobs(exp *experiment.Experiment) iter.Seq[measure.Job] {
	if g.underLoad() {
		return g.loadJobs()
	}
	return measure.Schedule(g.counts(), exp.Order.Mode, exp.Order.Seed)
}

// left returns, for each of the group's configs, how many of its requests the folder does not
// hold yet. The schedule sends the group's first request for its first config.
func (g group) left(done results.Done) []int {
	left := make([]int, len(g.configs))
	for i, c := range g.configs {
		n := configRequests(c)
		if i == 0 {
			n = experiment.AddSat(n, 1)
		}
		left[i] = max(n-done.Count(c.ID), 0)
	}
	return left
}

// configRequests returns a config's warm-up and measured requests: its whole load point, when
// it has a load.
func configRequests(c experiment.Config) int {
	return experiment.AddSat(max(c.Warmup, 0), max(c.Repetitions, 0))
}

// sum adds counts that validation bounds (experiment.MaxRequests), saturating all the same.
func sum(xs []int) int {
	total := 0
	for _, x := range xs {
		total = experiment.AddSat(total, x)
	}
	return total
}

// pending returns the group's requests that the folder does not hold yet, in the order they
// are sent.
func (g group) pending(o Options) iter.Seq[measure.Job] {
	return func(yield func(measure.Job) bool) {
		for j := range g.jobs(o.Experiment) {
			if !o.Done.Has(g.configs[j.Config].ID, j.Seq) && !yield(j) {
				return
			}
		}
	}
}

// runServer boots one server, runs its configs' requests, and stops it.
func runServer(ctx context.Context, o Options, gi, ngroups int, g group, tk *tokens.Tiktoken, out *Outcome) error {
	rs := &serverRun{o: o, g: g, tk: tk, subs: subscribers(o.Subscribers), out: out, left: g.left(o.Done),
		reset: g.configs[0].Cache == "reset"}
	all, npending := experiment.Requests(g.configs), sum(rs.left)
	if npending < all {
		rs.subs.tell(RequestsSkipped{ServerID: g.serverID, Requests: all - npending})
	}
	if npending == 0 {
		return nil
	}
	if partial := PartialLoadPoints(g.configs, o.Done); len(partial) > 0 {
		// Resume discards them first (results.Folder.Discard); rows of a cut-short load
		// point must never be mixed with a new one's.
		return fmt.Errorf("load points %s are partly recorded: discard their rows before resuming", strings.Join(partial, ", "))
	}
	pending := g.pending(o)
	rs.subs.tell(ServerBooting{Index: gi, Servers: ngroups, ServerID: g.serverID, Server: g.server, Configs: len(g.configs)})

	logw, logName, err := rs.openLog()
	if err != nil {
		return err
	}
	defer logw.Close()
	bootStart := time.Now()
	srv, err := rs.boot(ctx, logw, logName)
	if err != nil {
		return rs.bootFailed(ctx, err, bootStart, pending)
	}
	rs.srv, rs.info = srv, serverInfo(g, srv, bootStart)
	// The GPUs are sampled while the server runs: from now until it stops or exits (see
	// startTelemetry), never longer.
	rs.sampler = startTelemetry(ctx, o, g.serverID, srv)
	// However the run ends from here on (an error, an interrupt, a panic), the server stops.
	defer rs.stop()
	if err := rs.subs.record(ServerReady{Server: rs.info}); err != nil {
		return err
	}
	// The server's end is recorded on every way out from here, an interrupt included.
	defer rs.end()

	rs.connect(ctx)
	if msg := rs.resetUnavailable(); msg != "" {
		return rs.unusable(ctx, pending, msg)
	}
	if err := rs.buildPrompts(ctx); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return rs.unusable(ctx, pending, "prepare prompts: "+err.Error())
	}
	if npending < all {
		// A resumed folder already holds this server's first request and warm-ups, measured
		// on the server of the earlier run. The new server is cold: warm it the same way
		// before it is measured, without recording what it answers.
		if err := rs.rewarm(ctx); err != nil {
			return err
		}
	}
	return rs.send(ctx, pending)
}

// serverRun is the state of one server config's part of a run.
type serverRun struct {
	o     Options
	g     group
	tk    *tokens.Tiktoken
	subs  subscribers
	out   *Outcome
	left  []int // per config of g, its requests not recorded yet
	reset bool  // every request gets an emptied prefix cache (cache: reset)

	// Set once the server is up.
	srv     *engine.Server
	info    results.ServerInfo // the server's row, as its end records it
	sampler *telemetry.Sampler // nil without a GPU to sample
	stopped bool               // stop has run
	ended   bool               // end has run

	// Set once the run has connected to the server.
	api     *openai.Client
	client  *measure.Client // measures the requests
	sc      *scraper        // the server's /metrics; nil until the server is ready
	prompts *promptSet
}

// openLog opens where the server's output goes, and the name messages call it by; without
// Options.Logs the output is discarded.
func (rs *serverRun) openLog() (io.WriteCloser, string, error) {
	if rs.o.Logs == nil {
		return nopCloser{io.Discard}, "", nil
	}
	return rs.o.Logs(rs.g.serverID)
}

// boot starts the server config's engine, or connects to the server already running when its
// engine boots nothing (engine: endpoint). The engine's progress goes to the subscribers as
// BootOutput events.
func (rs *serverRun) boot(ctx context.Context, logw io.Writer, logName string) (*engine.Server, error) {
	return engine.Start(ctx, rs.g.server, engine.StartOptions{
		Log:        logw,
		LogName:    logName,
		Progress:   bootOutput{rs.subs, rs.g.serverID},
		Executable: rs.o.Executable,
		StopGrace:  rs.o.StopGrace,
	})
}

// bootFailed records a boot that failed with err: the server's row with the error, then every
// pending request as failed, and the run goes on with the next server. An interrupted boot is
// recorded too, but its requests are left for a resume to send, and the run stops with ctx's
// error.
func (rs *serverRun) bootFailed(ctx context.Context, err error, bootStart time.Time, pending iter.Seq[measure.Job]) error {
	g := rs.g
	if ctx.Err() != nil {
		// The boot was a boot all the same, and the folder keeps one row per boot.
		info := results.ServerInfo{ServerID: g.serverID, Engine: g.server.Engine,
			Model: g.server.Model, Argv: engine.BootArgv(err), BootStart: bootStart.UTC(), Error: "boot interrupted"}
		if serr := rs.subs.record(BootFailed{Server: info, Configs: len(g.configs), Err: err, Interrupted: true}); serr != nil {
			rs.subs.tell(ServerNotRecorded{ServerID: g.serverID, Err: serr})
		}
		return ctx.Err()
	}
	rs.out.BootFailed++
	info := results.ServerInfo{ServerID: g.serverID, Engine: g.server.Engine, Model: g.server.Model,
		Argv: engine.BootArgv(err), BootStart: bootStart.UTC(), Error: err.Error()}
	var be *engine.BootError
	if errors.As(err, &be) && be.ExitCode >= 0 {
		info.ExitCode = record.Int(be.ExitCode)
	}
	if serr := rs.subs.record(BootFailed{Server: info, Configs: len(g.configs), Err: err}); serr != nil {
		return serr
	}
	return rs.failAll(ctx, pending, record.ErrServer, "server failed to boot: "+err.Error())
}

// stop stops the server, once: first the GPU sampler, whose last samples are handed on and
// whose warning goes into the server's row, then the server itself, within
// Options.StopTimeout.
func (rs *serverRun) stop() {
	if rs.stopped {
		return
	}
	rs.stopped = true
	rs.sampler.Stop()
	rs.flushSamples()
	if w := rs.sampler.Warning(); w != "" {
		rs.info.TelemetryWarning = w
		rs.subs.tell(TelemetryFailed{ServerID: rs.g.serverID, Warning: w})
	}
	sctx, cancel := context.WithTimeout(context.Background(), rs.o.StopTimeout)
	defer cancel()
	if err := rs.srv.Stop(sctx); err != nil {
		rs.subs.tell(StopFailed{ServerID: rs.g.serverID, Err: err})
	}
}

// end stops the server and records how it ended, once.
func (rs *serverRun) end() {
	if rs.ended {
		return
	}
	rs.ended = true
	rs.stop()
	if rs.sc != nil {
		rs.info.ServerMetrics = rs.sc.note
	}
	finishServer(rs.subs, rs.info, rs.srv)
}

// connect makes what talks to the ready server: the client that measures the requests, which
// counts their output with the server's /tokenize where it has one, and the scraper of its
// /metrics.
func (rs *serverRun) connect(ctx context.Context) {
	srv := rs.srv
	api := &openai.Client{BaseURL: srv.BaseURL(), APIKey: srv.APIKey()}
	client := &measure.Client{API: api, HTTP: measure.NewHTTP(), Tiktoken: rs.tk}
	client.SetOptions(openai.Options{IncludeUsage: true, ContinuousUsage: true, ReturnTokenIDs: true})
	rs.api, rs.client = api, client
	rs.sc = newScraper(srv.Engine(), api, func(err error) {
		rs.subs.tell(ServerMetricsFailed{ServerID: rs.g.serverID, Err: err})
	})
	if serverTokenizes(ctx, api, srv.Model()) {
		// A request's output is counted over the measuring client's connections: its own,
		// idle once the stream has ended. On the side endpoints' client, which keeps two idle
		// connections, a load of N requests dialled a connection for nearly every count and
		// held up to 2N at once.
		counter := &openai.Client{BaseURL: api.BaseURL, APIKey: api.APIKey, HTTP: client.HTTP}
		client.Tokenize = func(ctx context.Context, text string) (int, error) {
			no := false
			r, err := counter.Tokenize(ctx, openai.TokenizeRequest{Model: srv.Model(), Prompt: text, AddSpecialTokens: &no})
			return r.Count, err
		}
	}
}

// resetUnavailable returns why the server cannot empty its cache before every request as its
// configs ask, or "" when it can or they do not ask. Cache handling is an explicit choice: a
// reset that the server cannot do is an error of the experiment, not something to skip
// quietly.
func (rs *serverRun) resetUnavailable() string {
	if !rs.reset || rs.srv.CanResetCache() {
		return ""
	}
	return fmt.Sprintf("cache: reset needs a server that can empty its prefix cache (vLLM's POST /reset_prefix_cache with VLLM_SERVER_DEV_MODE=1); %s offers none here: set cache: keep in the experiment", rs.g.server.Engine)
}

// unusable records every pending request as failed with msg, which says why the server,
// though up, cannot serve them.
func (rs *serverRun) unusable(ctx context.Context, pending iter.Seq[measure.Job], msg string) error {
	rs.subs.tell(ServerUnusable{ServerID: rs.g.serverID, Reason: msg})
	return rs.failAll(ctx, pending, record.ErrServer, msg)
}

// buildPrompts prepares the prompts of the server's configs (preparePrompts), telling the
// subscribers when there are lengths to build and how long it took.
func (rs *serverRun) buildPrompts(ctx context.Context) error {
	lengths := promptLengths(rs.g)
	if lengths > 0 {
		rs.subs.tell(PreparingPrompts{ServerID: rs.g.serverID, Lengths: lengths, Calibrated: rs.client.Tokenize == nil})
	}
	preparing := time.Now()
	prompts, err := preparePrompts(ctx, rs.g, rs.api, rs.srv.Model(), rs.tk, rs.client.Tokenize != nil)
	if err != nil {
		return err
	}
	if lengths > 0 {
		rs.subs.tell(PromptsPrepared{ServerID: rs.g.serverID, Took: time.Since(preparing)})
	}
	rs.prompts = prompts
	return nil
}

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
		if err := srv.ResetCache(ctx); err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			if goingDown(ctx, srv) {
				return errServerGone
			}
			if ctx.Err() != nil {
				return ctx.Err()
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
		goingDown(ctx, srv)
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

// exitWait bounds how long goingDown waits for a server that does not answer to exit. A
// variable so that a test can make a wait that should not happen obvious.
var exitWait = time.Second

// process is what goingDown needs of a server; *engine.Server is one.
type process interface {
	Exited() bool
	Done() <-chan struct{}
	PID() int
	BaseURL() string
}

var _ process = (*engine.Server)(nil)

// goingDown reports whether the server process has exited, after a request failed the way a
// dying server makes it fail (a stream cut off, a connection refused or reset). The client can
// see its connection drop a moment before the process is reaped, so goingDown waits for the
// exit, up to exitWait, but only until the server answers an HTTP request (any status): a
// server that answers is alive, and the run goes on at once. A server without a process
// (engine: endpoint) has no exit to wait for. When ctx ends, so does the wait. This way the
// rest of a dead server's requests fail at once with the reason, not one by one as refused
// connections, and a failure on a live server costs no pause.
func goingDown(ctx context.Context, srv process) bool {
	if srv.Exited() {
		return true
	}
	if srv.PID() == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, exitWait)
	defer cancel()
	alive := make(chan struct{})
	go func() {
		if answers(ctx, srv.BaseURL()) {
			close(alive)
		}
	}()
	select {
	case <-srv.Done():
		return true
	case <-alive:
		return false
	case <-ctx.Done():
		return srv.Exited()
	}
}

// answers reports whether the server at baseURL answers a GET of its root over a new
// connection, with any status. A pooled connection could be one the server dropped, and a TCP
// connection alone proves little: a dying process's listening socket can still complete a
// handshake for a moment.
func answers(ctx context.Context, baseURL string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/", nil)
	if err != nil {
		return false
	}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<12))
	resp.Body.Close()
	return true
}

// finishServer records how the server ended.
func finishServer(subs subscribers, info results.ServerInfo, srv *engine.Server) {
	if code := srv.ExitCode(); code >= 0 {
		info.ExitCode = record.Int(code)
	} else if srv.PID() != 0 {
		info.ExitSignal = "terminated"
	}
	if err := srv.Err(); err != nil {
		info.Error = err.Error()
	}
	if err := subs.record(ServerEnded{Server: info}); err != nil {
		subs.tell(ServerNotRecorded{ServerID: info.ServerID, Err: err})
	}
}

func serverInfo(g group, srv *engine.Server, bootStart time.Time) results.ServerInfo {
	boot := srv.BootTime().Seconds()
	return results.ServerInfo{
		ServerID:      g.serverID,
		Engine:        srv.Engine(),
		EngineVersion: srv.Version(),
		Model:         srv.Model(),
		Argv:          srv.Argv(),
		BootStart:     bootStart.UTC(),
		BootSeconds:   &boot,
		CacheReset:    srv.CacheResetMechanism(),
	}
}

// startTelemetry starts sampling the GPUs for a server the run booted, in the server's own
// process group, so that whatever ends the group (Stop, or the guard when the runner dies)
// ends the sampler too; and it stops the sampler as soon as the server exits on its own. A
// server the runner did not start (engine: endpoint) may run on another machine: its GPUs are
// not sampled. Nil without a GPU.
func startTelemetry(ctx context.Context, o Options, serverID string, srv *engine.Server) *telemetry.Sampler {
	if o.NoTelemetry || srv.PID() == 0 {
		return nil
	}
	to := o.Telemetry
	to.ServerID, to.ProcessGroup = serverID, srv.PID()
	s := telemetry.Start(ctx, to)
	if s != nil {
		go func() {
			select {
			case <-srv.Done():
				s.Stop()
			case <-s.Done():
			}
		}()
	}
	return s
}

// flushSamples hands the samples taken since the last flush to the subscribers.
func (rs *serverRun) flushSamples() {
	if samples := rs.sampler.Drain(); len(samples) > 0 {
		rs.subs.tell(GPUSampled{ServerID: rs.g.serverID, Samples: samples})
	}
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

// bootOutput turns the engine's boot progress, written line by line, into BootOutput events.
type bootOutput struct {
	subs     subscribers
	serverID string
}

func (b bootOutput) Write(p []byte) (int, error) {
	for _, line := range strings.Split(strings.TrimRight(string(p), "\n"), "\n") {
		b.subs.tell(BootOutput{ServerID: b.serverID, Line: line})
	}
	return len(p), nil
}

type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }

// params builds the request body parameters of a config.
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

func errString(err error) string {
	if err == nil {
		return "without an error"
	}
	return err.Error()
}
