package orchestrate

import (
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// Event is one thing that happened in a run. Run reports events to its subscribers in the
// order they happen, one at a time.
type Event interface{ event() }

// Subscriber receives the events of a run. Handle returns an error when it cannot take an
// event in. For the events that must be kept (RequestMeasured, RequestNotSent, ServerReady,
// and BootFailed of a boot that was not interrupted) the run stops with that error, so that a
// row is never lost silently; for ServerEnded and an interrupted BootFailed it is reported as
// ServerNotRecorded and the run goes on; for the others, which only inform, it is ignored.
// Once a subscriber returns an error, the subscribers after it do not get that event.
type Subscriber interface {
	Handle(Event) error
}

// SubscriberFunc adapts a function to a Subscriber.
type SubscriberFunc func(Event) error

// Handle calls f(e).
func (f SubscriberFunc) Handle(e Event) error { return f(e) }

// RunStarted opens a run: Requests requests to send to Servers server configs; Skipped
// requests are already in a resumed folder and are not sent again.
type RunStarted struct {
	Requests, Servers, Skipped int
}

// RequestsSkipped says that Requests requests of a server config are already in a resumed
// folder and are not sent again.
type RequestsSkipped struct {
	ServerID string
	Requests int
}

// ServerBooting says that the Index-th (from 0) of Servers server configs is being booted, or
// connected to when its engine boots nothing, for its Configs configs.
type ServerBooting struct {
	Index, Servers int
	ServerID       string
	Server         experiment.Server
	Configs        int
}

// BootOutput is one line the engine prints about a boot in progress.
type BootOutput struct {
	ServerID string
	Line     string
}

// ServerReady says that a server is ready: Server records its boot.
type ServerReady struct {
	Server results.ServerInfo
}

// BootFailed says that a server did not become ready: Server records the boot, Err says why.
// Interrupted is true when the run was stopped during the boot; otherwise the server's Configs
// configs have their requests recorded as failed (RequestNotSent).
type BootFailed struct {
	Server      results.ServerInfo
	Configs     int
	Err         error
	Interrupted bool
}

// ServerExited says that a server exited while it was serving; its remaining requests are
// recorded as failed (RequestNotSent). Err is how it ended, nil for a clean exit.
type ServerExited struct {
	ServerID string
	Engine   string
	Err      error
}

// ServerUnusable says that a ready server cannot serve the experiment's requests (a cache
// reset it cannot do, prompts it cannot prepare); Reason says why. Its requests are recorded
// as failed (RequestNotSent).
type ServerUnusable struct {
	ServerID string
	Reason   string
}

// StopFailed says that a server could not be stopped cleanly.
type StopFailed struct {
	ServerID string
	Err      error
}

// ServerEnded says that a server is gone, stopped by the run or exited: Server is the final
// record of its boot, with how it ended.
type ServerEnded struct {
	Server results.ServerInfo
}

// ServerNotRecorded says that a subscriber could not record a server's boot or end (Err), which
// does not stop the run.
type ServerNotRecorded struct {
	ServerID string
	Err      error
}

// Rewarming says that a resumed run is warming a new server with Requests requests whose
// answers are not recorded: the server's first request and warm-ups, which the folder holds.
type Rewarming struct {
	ServerID string
	Requests int
}

// PreparingPrompts says that prompts of Lengths distinct lengths are being built to the
// server's own token count before any request is sent. Calibrated is true when the server has
// no /tokenize to count with, so that each length takes a few probe requests.
type PreparingPrompts struct {
	ServerID   string
	Lengths    int
	Calibrated bool
}

// PromptsPrepared says that the prompts of a server are ready, after Took.
type PromptsPrepared struct {
	ServerID string
	Took     time.Duration
}

// RequestMeasured is one request sent and measured, failed or not.
type RequestMeasured struct {
	Config experiment.Config
	Record record.Request
}

// RequestNotSent is one request recorded as failed without being sent, because its server did
// not boot, exited or cannot serve it.
type RequestNotSent struct {
	Config experiment.Config
	Record record.Request
}

// LoadPointStarted says that the Requests requests of a config with a load section (warm-ups
// included) are being sent as one load point, under the config's load.
type LoadPointStarted struct {
	ServerID string
	Config   experiment.Config
	Requests int
}

// LoadPointScraped carries what the server's /metrics said about a load point that has ended,
// from a scrape just before its first request and one just after its last; a load point whose
// server has no metrics, or whose scrape failed, has none.
type LoadPointScraped struct {
	ServerID string
	Config   experiment.Config
	Server   results.LoadServerRow
}

// ConfigDone says that every request of a config (its load point) is recorded.
type ConfigDone struct {
	Config experiment.Config
}

// ServerMetricsFailed says that a scrape of a server's /metrics failed (garbage, a timeout, an
// endpoint gone): the requests around a failed scrape have no server-side cells, and the scrape
// is tried again after a backoff. Told once per server, at the first failure.
type ServerMetricsFailed struct {
	ServerID string
	Err      error
}

func (ServerMetricsFailed) event() {}

// RunFinished closes a run that went through every server config.
type RunFinished struct{}

// GPUSampled carries GPU samples taken while a server ran, in time order; they come in
// batches, after each recorded request and when the server stops.
type GPUSampled struct {
	ServerID string
	Samples  []record.GPUSample
}

// TelemetryFailed says, once per server, that its GPU sampling went wrong (a nvidia-smi that
// failed, exited or hung): the requests keep their rows, with empty GPU cells where no sample
// describes them.
type TelemetryFailed struct {
	ServerID string
	Warning  string
}

func (RunStarted) event()        {}
func (LoadPointStarted) event()  {}
func (LoadPointScraped) event()  {}
func (RequestsSkipped) event()   {}
func (ServerBooting) event()     {}
func (BootOutput) event()        {}
func (ServerReady) event()       {}
func (BootFailed) event()        {}
func (ServerExited) event()      {}
func (ServerUnusable) event()    {}
func (StopFailed) event()        {}
func (ServerEnded) event()       {}
func (ServerNotRecorded) event() {}
func (Rewarming) event()         {}
func (PreparingPrompts) event()  {}
func (PromptsPrepared) event()   {}
func (RequestMeasured) event()   {}
func (RequestNotSent) event()    {}
func (ConfigDone) event()        {}
func (RunFinished) event()       {}
func (GPUSampled) event()        {}
func (TelemetryFailed) event()   {}

// subscribers reports events to every subscriber in turn.
type subscribers []Subscriber

// record reports an event that must be kept and returns the first subscriber's error.
func (s subscribers) record(e Event) error {
	for _, sub := range s {
		if err := sub.Handle(e); err != nil {
			return err
		}
	}
	return nil
}

// tell reports an event that only informs; a subscriber's error is ignored.
func (s subscribers) tell(e Event) { _ = s.record(e) }

// Folder is what a result folder offers a run; *results.Folder is one.
type Folder interface {
	Append(rec record.Request) error
	SetServer(info results.ServerInfo) error
}

// TelemetryFolder is a Folder that also keeps GPU samples; *results.Folder is one.
type TelemetryFolder interface {
	AppendTelemetry(samples []record.GPUSample) error
}

var _ TelemetryFolder = (*results.Folder)(nil)

// LoadServerFolder is a Folder that also keeps the server's figures of each load point;
// *results.Folder is one.
type LoadServerFolder interface {
	AppendLoadServer(row results.LoadServerRow) error
}

var _ LoadServerFolder = (*results.Folder)(nil)

// Record returns the subscriber that writes a run's requests and server boots into f:
// requests as they are recorded, a server when it is ready or failed to boot and again when it
// has ended, GPU samples as they come when f is a TelemetryFolder, and the server's figures
// of each load point as it ends when f is a LoadServerFolder.
func Record(f Folder) Subscriber {
	return SubscriberFunc(func(e Event) error {
		switch e := e.(type) {
		case GPUSampled:
			if tf, ok := f.(TelemetryFolder); ok {
				return tf.AppendTelemetry(e.Samples)
			}
		case LoadPointScraped:
			if lf, ok := f.(LoadServerFolder); ok {
				return lf.AppendLoadServer(e.Server)
			}
		case RequestMeasured:
			return f.Append(e.Record)
		case RequestNotSent:
			return f.Append(e.Record)
		case ServerReady:
			return f.SetServer(e.Server)
		case BootFailed:
			return f.SetServer(e.Server)
		case ServerEnded:
			return f.SetServer(e.Server)
		}
		return nil
	})
}
