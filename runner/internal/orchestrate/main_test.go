package orchestrate

import (
	"os"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/engine"
)

// TestMain lets the test binary act as the guard of the servers its tests boot.
func TestMain(m *testing.M) {
	engine.MaybeRunGuard()
	os.Exit(m.Run())
}
