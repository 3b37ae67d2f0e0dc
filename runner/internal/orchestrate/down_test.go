package orchestrate

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestDownWatchSharesOneCheck checks that many requests failing at once against a live server
// cost one check of whether it is going down, not one each: concurrently, as requests in flight
// fail together, and one after another, as a load point records the failures it collected. A
// request that starts after the check gets a check of its own. The checks are counted on the
// server, as the GETs of its root.
func TestDownWatchSharesOneCheck(t *testing.T) {
	var probes atomic.Int64
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/" {
			probes.Add(1)
		}
		http.NotFound(w, r)
	}))
	defer ts.Close()
	w := &downWatch{srv: &fakeProcess{done: make(chan struct{}), pid: 42, url: ts.URL}}
	ctx := context.Background()
	started := time.Now() // every failed request below started before any check

	const n = 64
	var wg sync.WaitGroup
	var down atomic.Int64
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if w.goingDown(ctx, started) {
				down.Add(1)
			}
		}()
	}
	wg.Wait()
	for range n {
		if w.goingDown(ctx, started) {
			down.Add(1)
		}
	}
	if down.Load() != 0 {
		t.Errorf("%d failures took the live server for one going down", down.Load())
	}
	if got := probes.Load(); got != 1 {
		t.Fatalf("%d failures at once cost %d checks of the server, want 1", 2*n, got)
	}
	if w.goingDown(ctx, time.Now()) {
		t.Error("a later failure took the live server for one going down")
	}
	if got := probes.Load(); got != 2 {
		t.Errorf("a failure after the check cost %d checks in all, want 2: it needs one of its own", got)
	}
}
