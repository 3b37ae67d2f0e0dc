package orchestrate

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
)

// TestCannotResetSaysWhy: a server that offers the reset but stayed busy is told apart from one
// that offers none, so that the user is not told to give up a reset the server has.
func TestCannotResetSaysWhy(t *testing.T) {
	busy := cannotReset("endpoint", &engine.BusyError{Requests: 3, Waited: 2 * time.Minute})
	for _, want := range []string{"cache: reset:", "the server still ran or queued 3 requests after 2m0s", "could not be reset before its requests", "set cache: keep"} {
		if !strings.Contains(busy, want) {
			t.Errorf("busy server: %q, want it to say %q", busy, want)
		}
	}
	if strings.Contains(busy, "offers none") {
		t.Errorf("busy server: %q says it offers no reset", busy)
	}
	none := cannotReset("endpoint", errors.New("POST /reset_prefix_cache: 404 Not Found"))
	if !strings.Contains(none, "endpoint offers none here") || !strings.Contains(none, "set cache: keep") {
		t.Errorf("server without a reset: %q", none)
	}
}
