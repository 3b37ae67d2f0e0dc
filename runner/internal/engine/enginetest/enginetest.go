// Package enginetest decides whether a test that boots the real CPU engine runs. Such tests take
// minutes and need the engine built, so `make test` skips them and `make test-engine` runs them:
// it builds the engine and sets RUNNER_ENGINE_TESTS=1, under which a missing engine is a failure,
// never a skip.
package enginetest

import (
	"os"
	"testing"
)

// Env is the variable that turns the real-engine tests on.
const Env = "RUNNER_ENGINE_TESTS"

// Require returns the engine's executable, found by find (engine.FindOllama), for a test that
// boots it. Without Env=1 it skips the test; with it, an engine that cannot be found fails it.
func Require(t testing.TB, find func() (string, error)) string {
	t.Helper()
	if os.Getenv(Env) != "1" {
		t.Skipf("boots the real CPU engine: run make test-engine (sets %s=1)", Env)
	}
	bin, err := find()
	if err != nil {
		t.Fatalf("%s=1 but no engine: %v", Env, err)
	}
	return bin
}
