package orchestrate

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
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

// runServer boots one server, runs its configs' requests, and stops it: it boots the server or
// connects to it (boot; bootFailed records a boot that failed), makes the clients that talk to
// it and its prompts (connect, buildPrompts), sends the requests the folder does not hold yet
// (send), and on every way out stops the server and records how it ended (end).
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
	rs.down = &downWatch{srv: srv}
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
	down    *downWatch         // whether the server is going down, decided once for failures at once
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
		KeepCache:  rs.g.keepsCache(),
	})
}

// keepsCache reports whether every config of the group keeps the server's cache (cache:
// keep): the run then never empties it, not even to find out whether it could.
func (g group) keepsCache() bool {
	for _, c := range g.configs {
		if c.Cache != "keep" {
			return false
		}
	}
	return true
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
		rs.info.ServerMetrics = rs.sc.serverNote()
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
	return cannotReset(rs.g.server.Engine, rs.srv.CacheResetProblem())
}

// cannotReset says why a server of engine cannot empty its cache, given what its reset probe
// met: a server that offers the reset but stayed busy is not one that offers none.
func cannotReset(engineName string, problem error) string {
	if busy := (*engine.BusyError)(nil); errors.As(problem, &busy) {
		return fmt.Sprintf("cache: reset: %v, so its cache could not be reset before its requests: measure it when nothing else sends it requests, or set cache: keep in the experiment", busy)
	}
	return fmt.Sprintf("cache: reset needs a server that can empty its prefix cache (vLLM's POST /reset_prefix_cache with VLLM_SERVER_DEV_MODE=1); %s offers none here: set cache: keep in the experiment", engineName)
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

// serverInfo returns the row of a server that booted (or was connected to) at bootStart.
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

// nopCloser is a writer with a Close that does nothing: where Options.Logs is nil, the
// server's output goes to io.Discard, which has nothing to close.
type nopCloser struct{ io.Writer }

func (nopCloser) Close() error { return nil }
