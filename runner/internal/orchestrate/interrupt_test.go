package orchestrate

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// TestInterruptWhileDecidingDown checks a run stopped while a load point decides whether its
// server is going down, after a cache reset failed: before the load point (cache:
// reset_per_config) or before one of its requests (cache: reset). The load point is left
// partial for a resume to run again, and no request is recorded as a failed reset that the
// interrupt, not the server, kept from being sent. The check stops the run itself, as an
// interrupt during its wait would.
func TestInterruptWhileDecidingDown(t *testing.T) {
	// cache: reset allows one request in flight at most.
	for cache, concurrency := range map[string]string{"reset_per_config": "2", "reset": "1"} {
		t.Run(cache, func(t *testing.T) {
			c := sim.DefaultConfig()
			c.Model, c.DevMode, c.DecodePerToken = "sim-model", true, 100*time.Microsecond
			s, err := sim.New(c)
			if err != nil {
				t.Fatal(err)
			}
			// The resets work until the first request has been sent: the one when the
			// runner connects, and the first request's, go through.
			var sent atomic.Int64
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch r.URL.Path {
				case "/v1/completions":
					sent.Add(1)
				case "/reset_prefix_cache":
					if sent.Load() > 0 {
						http.Error(w, "no", http.StatusInternalServerError)
						return
					}
				}
				s.ServeHTTP(w, r)
			}))
			defer func() { s.Close(); ts.Close() }()
			e, cfgs := loadExperiment(t, ts.URL, "cache: "+cache+"\nload:\n  concurrency: "+concurrency+"\n")

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			defer func(p func(context.Context, process) bool) { probeDown = p }(probeDown)
			probeDown = func(context.Context, process) bool { cancel(); return false }
			var mu sync.Mutex
			var rows []record.Request
			keep := SubscriberFunc(func(ev Event) error {
				mu.Lock()
				defer mu.Unlock()
				switch ev := ev.(type) {
				case RequestMeasured:
					rows = append(rows, ev.Record)
				case RequestNotSent:
					rows = append(rows, ev.Record)
				}
				return nil
			})
			_, err = Run(ctx, Options{Experiment: e, Configs: cfgs, Subscribers: []Subscriber{keep}})
			if !errors.Is(err, context.Canceled) {
				t.Fatalf("Run = %v, want the interrupt", err)
			}
			for _, r := range rows {
				if r.ErrorClass == record.ErrCacheReset {
					t.Errorf("request %d recorded as %s (%s), though the interrupt kept it from being sent", r.Seq, r.ErrorClass, r.Error)
				}
			}
			if len(rows) != 1 || rows[0].Phase != record.PhaseFirst {
				t.Errorf("%d rows recorded, want only the first request's", len(rows))
			}
		})
	}
}
