package orchestrate

import (
	"flag"
	"net"
	"net/http"
	"os"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
	"github.com/onelayerdown/runner/runner/internal/sim"
)

// simEnv makes the test binary, run as `BINARY sim --host H --port P ...` by engine sim's
// preset, serve the simulator, so that tests can boot a server through the engine.
const simEnv = "ORCHESTRATE_TEST_SIM"

// TestMain lets the test binary act as the guard of the servers its tests boot, and as the
// simulator they boot.
func TestMain(m *testing.M) {
	engine.MaybeRunGuard()
	if os.Getenv(simEnv) == "1" && len(os.Args) > 1 && os.Args[1] == "sim" {
		os.Exit(serveSim(os.Args[2:]))
	}
	os.Exit(m.Run())
}

// serveSim serves the simulator with 20 ms per generated token until it is killed.
func serveSim(args []string) int {
	fs := flag.NewFlagSet("sim", flag.ContinueOnError)
	host := fs.String("host", "127.0.0.1", "")
	port := fs.String("port", "0", "")
	model := fs.String("model", "sim-model", "")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	c := sim.DefaultConfig()
	c.Model, c.DevMode = *model, true
	c.DecodePerToken = 20 * time.Millisecond
	s, err := sim.New(c)
	if err != nil {
		return 1
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, *port))
	if err != nil {
		return 1
	}
	http.Serve(ln, s)
	return 1
}
