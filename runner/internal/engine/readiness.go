package engine

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"syscall"
	"time"

	"github.com/onelayerdown/runner/runner/internal/openai"
)

// waitReady polls each readiness path in turn until it answers 200, the process exits, the
// ready timeout passes or ctx is done.
func (s *Server) waitReady(ctx context.Context) error {
	deadline := s.startedAt.Add(s.timeout)
	for _, p := range s.launch.ReadyPaths {
		if err := s.poll(ctx, p, deadline); err != nil {
			return err
		}
	}
	return nil
}

// poll asks GET path until it answers 200, backing off from 200 ms to 1 s. A refused
// connection, a timeout and any other status are retried until the deadline; 401, 403 and a
// redirect end the wait at once, since waiting does not change them.
func (s *Server) poll(ctx context.Context, path string, deadline time.Time) error {
	url := s.baseURL + path
	interval := 200 * time.Millisecond
	var lastNote time.Time
	var last string  // the last answer, for the timeout message
	var refused bool // whether that answer was a refused connection
	for {
		// A request near the deadline still gets a moment, so that the last answer says
		// something about the server rather than about the clock.
		timeout := min(5*time.Second, max(time.Until(deadline), 500*time.Millisecond))
		status, location, err := s.probe(ctx, path, timeout)
		if err == nil && status == http.StatusOK {
			return nil
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		switch {
		case err != nil && errors.Is(err, context.DeadlineExceeded) && timeout < 5*time.Second && last != "":
			// Cut short by the ready timeout: keep the previous, complete answer.
		case err != nil:
			last, refused = describeGetError(err), errors.Is(err, syscall.ECONNREFUSED)
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			return &bootFailure{
				reason: fmt.Sprintf("GET %s answered %d %s", path, status, http.StatusText(status)),
				hint:   authHint(s.engine, s.launch.APIKey != ""),
			}
		case status/100 == 3:
			// A redirect does not go away by waiting, and the runner follows none.
			return &bootFailure{
				reason: fmt.Sprintf("GET %s answered %d %s, a redirect to %s", path, status, http.StatusText(status), openai.RedirectTarget(location)),
				hint:   "the runner follows no redirects (they would add a hop to every measured request): point server.url at the address the server answers on",
			}
		default:
			last, refused = fmt.Sprintf("answered %d %s", status, http.StatusText(status)), false
		}
		now := time.Now()
		if !now.Before(deadline) {
			hint := fmt.Sprintf("raise server.ready_timeout (now %s) if the server needs longer to load, or check that GET %s is its readiness path", s.timeout, path)
			if s.cmd == nil && refused {
				// engine: endpoint starts nothing, so a refused connection is no slow start.
				hint = fmt.Sprintf("nothing listens at %s: start the server there, or correct server.url", s.baseURL)
			}
			return &bootFailure{
				reason: fmt.Sprintf("not ready after %s: GET %s %s", s.timeout, path, last),
				hint:   hint,
			}
		}
		if lastNote.IsZero() {
			fmt.Fprintf(s.progress, "%s: waiting for %s\n", s.engine, url)
			lastNote = now
		} else if now.Sub(lastNote) >= 10*time.Second {
			fmt.Fprintf(s.progress, "%s: waiting for %s (%s, %s)\n", s.engine, url, now.Sub(s.startedAt).Round(time.Second), last)
			lastNote = now
		}
		timer := time.NewTimer(min(interval, time.Until(deadline)))
		select {
		case <-s.exited():
			timer.Stop()
			return &bootFailure{exited: true}
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C:
		}
		interval = min(interval*3/2, time.Second)
	}
}

// exited returns a channel closed when the server process has exited; nil (never ready) for a
// server without a process.
func (s *Server) exited() <-chan struct{} {
	if s.cmd == nil {
		return nil
	}
	return s.done
}

// probe sends one readiness request, given timeout to answer, and returns its status and, for
// a redirect, where it points (see openai.Location).
func (s *Server) probe(ctx context.Context, path string, timeout time.Duration) (int, string, error) {
	if timeout <= 0 {
		timeout = time.Millisecond
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	return s.api.Probe(ctx, path)
}

// describeGetError shortens a failed readiness request to what matters.
func describeGetError(err error) string {
	switch {
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused the connection"
	case errors.Is(err, context.DeadlineExceeded):
		return "did not answer in time"
	}
	return "failed: " + err.Error()
}

// finishBoot runs the post-ready step, then learns the served model, the version and whether
// the prefix cache can be reset.
func (s *Server) finishBoot(ctx context.Context) error {
	h := s.hook()
	if s.launch.AfterReady != nil {
		hctx, cancel := context.WithDeadline(ctx, s.startedAt.Add(s.timeout))
		err := s.launch.AfterReady(hctx, h)
		cancel()
		if err != nil {
			return s.bootFailed(&bootFailure{reason: "post-ready step failed: " + s.red.String(err.Error())})
		}
	}
	s.bootTime = time.Since(s.startedAt)
	s.ready.Store(true)

	qctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if s.launch.ServedModel != nil {
		m, err := s.launch.ServedModel(qctx, h)
		if err != nil {
			return s.bootFailed(&bootFailure{reason: "cannot tell the served model name: " + s.red.String(err.Error())})
		}
		s.model = m
	} else {
		s.model = s.modelFromList(qctx, h)
	}
	for i, p := range s.versionPaths() {
		b, err := h.Get(qctx, p)
		if err != nil {
			if i == len(s.versionPaths())-1 {
				s.log.note("version unknown: %v", err)
			}
			continue
		}
		s.version = openai.ParseVersion(b)
		break
	}
	if (s.launch.Reset != nil || s.launch.ResetPath != "") && !s.noProbe {
		// The probe may wait for a busy server to become idle (idleWait): a shorter bound would
		// cut that wait and pass a busy server off as one without a reset.
		rctx, rcancel := context.WithTimeout(ctx, idleWait+30*time.Second)
		defer rcancel()
		if err := s.reset(rctx, h); err != nil {
			s.log.note("prefix cache reset unavailable: %v", err)
			s.resetErr = err
		} else {
			s.canReset = true
		}
	}
	// The probes above fail when ctx ends during them, and would pass their failure off as
	// what the server can do (no cache reset, no version): an interrupted boot is no boot.
	if err := ctx.Err(); err != nil {
		return s.bootFailed(err)
	}
	s.log.note("ready after %s at %s (model %q, version %q)", s.bootTime.Round(time.Millisecond), s.baseURL, s.model, s.version)
	fmt.Fprintf(s.progress, "%s: ready after %s at %s\n", s.engine, s.bootTime.Round(100*time.Millisecond), s.baseURL)
	return nil
}

// versionPaths returns the launch's version paths, the first that answers counting.
func (s *Server) versionPaths() []string {
	var out []string
	if s.launch.VersionPath != "" {
		out = append(out, s.launch.VersionPath)
	}
	return append(out, s.launch.VersionFallbacks...)
}

// hook returns what AfterReady and ServedModel may use.
func (s *Server) hook() *Hook {
	env := s.serverEnv
	if env == nil {
		env = os.Environ()
	}
	return &Hook{
		Engine: s.engine, BaseURL: s.baseURL, Model: s.model, Env: env, Dir: s.dir,
		api: s.api, log: s.log, progress: s.progress,
	}
}

// modelFromList picks the served model name from GET /v1/models: the configured name when it
// is listed, else the first id, else the configured name.
func (s *Server) modelFromList(ctx context.Context, h *Hook) string {
	b, err := h.Get(ctx, "/v1/models")
	if err != nil {
		s.log.note("model list unavailable, using %q: %v", s.model, err)
		return s.model
	}
	ids := modelIDs(b)
	for _, id := range ids {
		if id == s.model {
			return id
		}
	}
	if len(ids) > 0 {
		if s.model != "" {
			s.log.note("server lists %q, not %q; requests will use %q", ids, s.model, ids[0])
		}
		return ids[0]
	}
	return s.model
}

// modelIDs reads the ids of an OpenAI model list, those that are empty left out; nil when b
// is not one.
func modelIDs(b []byte) []string {
	models, err := openai.ParseModels(b)
	if err != nil {
		return nil
	}
	var ids []string
	for _, m := range models {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	return ids
}
