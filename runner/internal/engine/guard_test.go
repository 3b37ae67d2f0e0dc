package engine

import (
	"context"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// TestStartNeedsTheGuardEntered checks that a program that never called MaybeRunGuard cannot
// boot a server: its guard process would run the program itself instead of the guard.
func TestStartNeedsTheGuardEntered(t *testing.T) {
	// Not parallel: no other test may boot a server while the flag is down.
	defer guardEntered.Store(guardEntered.Load())
	guardEntered.Store(false)
	srv := experiment.Server{Engine: "command", Model: "m", Command: []string{"sh", "-c", "sleep 60", "sh", "{port}"}}
	s, err := Start(context.Background(), srv, StartOptions{})
	if s != nil {
		s.Stop(context.Background())
	}
	if err == nil || !strings.Contains(err.Error(), "MaybeRunGuard") {
		t.Fatalf("Start = %v, want a refusal that names MaybeRunGuard", err)
	}
}
