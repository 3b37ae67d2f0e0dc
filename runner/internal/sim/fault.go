package sim

import (
	"fmt"
	"strconv"
	"strings"
)

// FaultKind names a fault the simulator can inject.
type FaultKind string

// The faults. Stream faults fire just before the data event with index At (0 is the first event
// of the response; the role chunk, the usage chunk and [DONE] count as events). A non-streaming
// request has a single event, its body, at index 0.
const (
	// FaultCrash ends the process abruptly (Config.Crash), or cuts the connection and leaves the
	// server dead when run in process.
	FaultCrash FaultKind = "crash"
	// FaultHang stops sending and keeps the connection open until the client goes away or the
	// server closes.
	FaultHang FaultKind = "hang"
	// FaultAbort cuts the connection without ending the HTTP response properly.
	FaultAbort FaultKind = "abort"
	// FaultTruncate ends the response cleanly but without the rest of the stream or [DONE].
	FaultTruncate FaultKind = "truncate"
	// FaultError sends an in-band error event ({"error": {...}}, HTTP status still 200), then
	// [DONE], as vLLM does when generation fails mid-stream.
	FaultError FaultKind = "error"
	// FaultErrorEOF sends the in-band error event and ends the stream without [DONE].
	FaultErrorEOF FaultKind = "error-eof"
	// FaultMalformed sends the event with its JSON cut short; the stream then goes on.
	FaultMalformed FaultKind = "malformed"
	// FaultStatus answers with HTTP status Arg (e.g. 500, 503) and a vLLM error body instead of
	// the response.
	FaultStatus FaultKind = "status"
	// FaultRefuse answers 400 when the request uses option Arg (e.g. return_token_ids).
	FaultRefuse FaultKind = "refuse"
	// FaultIgnore drops option Arg from the request before it is read, as an older server that
	// does not know it would.
	FaultIgnore FaultKind = "ignore"
	// FaultResetNoop makes POST /reset_prefix_cache answer 200 and keep the cache, as vLLM
	// does when it declines a reset while blocks are still in use. A server-wide fault: it
	// acts only from the configured faults (--faults), not from a request's X-Sim-Fault.
	FaultResetNoop FaultKind = "reset-noop"
	// FaultHideMetric leaves the metric family Arg (e.g. vllm:request_queue_time_seconds) out
	// of GET /metrics, as an engine version that does not serve it would. Server-wide.
	FaultHideMetric FaultKind = "hide-metric"
	// FaultFreezeMetric keeps the histogram Arg on /metrics but never observes into it, so
	// that it does not move by one per request, as a histogram that an engine stopped
	// updating would. Server-wide.
	FaultFreezeMetric FaultKind = "freeze-metric"
	// FaultNoRoute answers 404 on the path Arg (e.g. /tokenize, /version), as a server
	// without that endpoint would. Server-wide.
	FaultNoRoute FaultKind = "no-route"
	// FaultTokenizePromptOnly makes POST /tokenize refuse messages with 400 and count prompts
	// only, as SGLang's does. Server-wide.
	FaultTokenizePromptOnly FaultKind = "tokenize-prompt-only"
)

// faultArgs returns the arguments of every configured fault of kind k.
func faultArgs(fs []Fault, k FaultKind) map[string]bool {
	out := map[string]bool{}
	for _, f := range fs {
		if f.Kind == k {
			out[f.Arg] = true
		}
	}
	return out
}

// Fault is one injected fault.
type Fault struct {
	Kind FaultKind
	At   int    // event index for stream faults
	Arg  string // status code for status; option name for refuse and ignore
}

// defaultFaultAt is the event a stream fault fires at when the spec gives no @index: the second
// event, so that the fault falls in the middle of the stream.
const defaultFaultAt = 1

// ParseFaults parses a comma-separated list of faults, each KIND[@INDEX] or KIND=ARG:
// "hang@3", "crash", "status=503", "refuse=return_token_ids,error@5". An empty spec is no
// fault.
func ParseFaults(spec string) ([]Fault, error) {
	var out []Fault
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		f, err := parseFault(part)
		if err != nil {
			return nil, err
		}
		out = append(out, f)
	}
	return out, nil
}

func parseFault(s string) (Fault, error) {
	f := Fault{At: defaultFaultAt}
	kind, arg, hasArg := strings.Cut(s, "=")
	kind, at, hasAt := strings.Cut(kind, "@")
	f.Kind = FaultKind(strings.ToLower(strings.TrimSpace(kind)))
	if hasArg {
		f.Arg = strings.TrimSpace(arg)
	}
	if hasAt {
		n, err := strconv.Atoi(strings.TrimSpace(at))
		if err != nil || n < 0 {
			return Fault{}, fmt.Errorf("fault %q: event index %q is not a non-negative integer", s, at)
		}
		f.At = n
	}
	if err := f.validate(); err != nil {
		return Fault{}, err
	}
	if hasAt && !f.Kind.inStream() {
		return Fault{}, fmt.Errorf("fault %q: %s takes no event index", s, f.Kind)
	}
	return f, nil
}

func (k FaultKind) inStream() bool {
	switch k {
	case FaultCrash, FaultHang, FaultAbort, FaultTruncate, FaultError, FaultErrorEOF, FaultMalformed:
		return true
	}
	return false
}

func (f Fault) validate() error {
	switch f.Kind {
	case FaultCrash, FaultHang, FaultAbort, FaultTruncate, FaultError, FaultErrorEOF, FaultMalformed:
		if f.Arg != "" {
			return fmt.Errorf("fault %s takes no =argument", f.Kind)
		}
		if f.At < 0 {
			return fmt.Errorf("fault %s: negative event index", f.Kind)
		}
	case FaultStatus:
		n, err := strconv.Atoi(f.Arg)
		if err != nil || n < 400 || n > 599 {
			return fmt.Errorf("fault status=%s: want an HTTP error status 400-599", f.Arg)
		}
	case FaultResetNoop, FaultTokenizePromptOnly:
		if f.Arg != "" {
			return fmt.Errorf("fault %s takes no =argument", f.Kind)
		}
	case FaultRefuse, FaultIgnore:
		if f.Arg == "" {
			return fmt.Errorf("fault %s needs an option name, e.g. %s=return_token_ids", f.Kind, f.Kind)
		}
	case FaultHideMetric, FaultFreezeMetric:
		if f.Arg == "" {
			return fmt.Errorf("fault %s needs a metric name, e.g. %s=vllm:time_to_first_token_seconds", f.Kind, f.Kind)
		}
	case FaultNoRoute:
		if !strings.HasPrefix(f.Arg, "/") {
			return fmt.Errorf("fault %s needs a path, e.g. %s=/tokenize", f.Kind, f.Kind)
		}
	default:
		return fmt.Errorf("unknown fault %q (want crash, hang, abort, truncate, error, error-eof, malformed, status=CODE, refuse=OPTION, ignore=OPTION, reset-noop, hide-metric=NAME, freeze-metric=NAME, no-route=PATH, tokenize-prompt-only)", f.Kind)
	}
	return nil
}

// String formats f the way ParseFaults reads it.
func (f Fault) String() string {
	switch {
	case f.Arg != "":
		return string(f.Kind) + "=" + f.Arg
	case f.Kind.inStream():
		return string(f.Kind) + "@" + strconv.Itoa(f.At)
	}
	return string(f.Kind)
}

// FormatFaults is the inverse of ParseFaults.
func FormatFaults(fs []Fault) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		parts[i] = f.String()
	}
	return strings.Join(parts, ",")
}
