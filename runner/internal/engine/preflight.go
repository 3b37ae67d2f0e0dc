package engine

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

// missingHint says what to do when an engine's executable is not on PATH.
func missingHint(engine, argv0 string) string {
	switch {
	case engine == "vllm" && argv0 == "vllm":
		return "install vLLM (pip install vllm) or put its bin directory on PATH (server.env.PATH); an older install without the vllm command: set server.entrypoint: api_server"
	case argv0 == "python" || argv0 == "python3":
		return "no python on PATH: activate the environment that has the engine installed, or set server.env.PATH"
	}
	return fmt.Sprintf("%s is not on PATH: install it, or set server.env.PATH to the directory that holds it", argv0)
}

// findExecutable finds a server's executable argv0 on the PATH of env, and returns its path
// and the name it runs under. Many images have python3 and no python: where python is
// missing, it takes python3, as a user typing the command would.
func findExecutable(argv0 string, env []string) (path, name string, err error) {
	path, err = lookPath(argv0, env)
	if err != nil && argv0 == "python" {
		if p, err3 := lookPath("python3", env); err3 == nil {
			return p, "python3", nil
		}
	}
	return path, argv0, err
}

// Preflight checks, without starting anything, that a server config can be launched on this
// machine: that its preset accepts it and that the executable it would run can be found (on
// the PATH that server.env gives it, if any). It returns a *BootError with the engine's hint
// when not, so that a run can fail at once, before it writes anything. An engine that starts
// no process (endpoint) passes.
func Preflight(srv experiment.Server, executable string) error {
	name, host := engineName(srv), hostOf(srv)
	preset, err := lookup(name)
	if err != nil {
		return fmt.Errorf("server.engine: %w", err)
	}
	port := srv.Port
	if port == 0 {
		port = 1 // a placeholder: presets only write it into argv and env
	}
	// The scratch directory is not made: presets only name paths inside it.
	t := Target{Host: host, Port: port, Executable: executable, Dir: filepath.Join(os.TempDir(), "runner-preflight")}
	l, err := preset(srv, t)
	if err != nil {
		return &BootError{Engine: name, Reason: "cannot start: " + err.Error(), ExitCode: -1}
	}
	if len(l.Argv) == 0 {
		return nil
	}
	argv0 := l.Argv[0]
	env := mergeEnv(os.Environ(), l.Env, srv.Env)
	if _, _, err := findExecutable(argv0, env); err != nil {
		return &BootError{Engine: name, Reason: "cannot start: " + err.Error(), Hint: missingHint(name, argv0), ExitCode: -1}
	}
	return nil
}
