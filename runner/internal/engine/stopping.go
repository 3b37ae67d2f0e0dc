package engine

import (
	"context"
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"
)

// terminate sends SIGTERM to the server's process group, once. It may run from exec's
// context watcher before Start has read the pid, so it takes it from the process itself.
func (s *Server) terminate() {
	s.stopping.Store(true)
	s.termOnce.Do(func() {
		pgid := s.cmd.Process.Pid
		s.log.note("stopping: SIGTERM to process group %d", pgid)
		killGroup(pgid, syscall.SIGTERM)
	})
}

// Stop ends the server: SIGTERM to its whole process group, then, after the grace period (or
// when ctx is done), SIGKILL to whatever is left of the group. It waits for the process to
// exit and, for a server that was ready, for its port to be free again, so that the next
// server can take it. It returns an error when the group had to be killed or the port stayed
// taken; a server that stopped on SIGTERM is no error, whatever its exit status (see
// ExitCode). Stop is idempotent: later calls return the first call's result.
func (s *Server) Stop(ctx context.Context) error {
	s.stopOnce.Do(func() { s.stopErr = s.stop(ctx) })
	return s.stopErr
}

func (s *Server) stop(ctx context.Context) error {
	defer s.api.CloseIdleConnections()
	defer s.cleanupDir()
	s.stopping.Store(true)
	if s.cmd == nil {
		close(s.done)
		return nil
	}
	select {
	case <-s.done:
	default:
		s.terminate()
	}
	var errs []error
	graceEnd := time.Now().Add(s.grace)
	if !waitClosed(ctx, s.done, graceEnd) {
		s.log.note("still running %s after SIGTERM: SIGKILL to process group %d", s.grace, s.pgid)
		killGroup(s.pgid, syscall.SIGKILL)
		<-s.done
		errs = append(errs, fmt.Errorf("%s: server did not stop within %s of SIGTERM; killed its process group", s.engine, s.grace))
	}
	// The group leader is gone; the rest of the group may still be shutting down.
	if left := waitGroupEmpty(ctx, s.pgid, graceEnd); len(left) > 0 {
		s.log.note("processes %v of group %d still running after SIGTERM: SIGKILL", left, s.pgid)
		killGroup(s.pgid, syscall.SIGKILL)
		if left := waitGroupEmpty(context.Background(), s.pgid, time.Now().Add(5*time.Second)); len(left) > 0 {
			errs = append(errs, fmt.Errorf("%s: processes %v of the server's group survived SIGKILL", s.engine, left))
		} else if len(errs) == 0 {
			errs = append(errs, fmt.Errorf("%s: %d process(es) of the server's group did not stop within %s of SIGTERM; killed them", s.engine, len(left), s.grace))
		}
	}
	if s.ready.Load() {
		if err := waitPortFree(ctx, s.host, s.port, s.portWait); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", s.engine, err))
		}
	}
	s.log.note("stopped: %s", s.exitStatus())
	return errors.Join(errs...)
}

// waitClosed waits until ch is closed (true), or until the deadline or ctx (false).
func waitClosed(ctx context.Context, ch <-chan struct{}, deadline time.Time) bool {
	t := time.NewTimer(time.Until(deadline))
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// waitGroupEmpty polls until no live process is left in the process group, or until the
// deadline or ctx; it returns the pids still alive.
func waitGroupEmpty(ctx context.Context, pgid int, deadline time.Time) []int {
	for {
		left := groupMembers(pgid)
		if len(left) == 0 || !time.Now().Before(deadline) || ctx.Err() != nil {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (s *Server) cleanupDir() {
	if s.ownDir && s.dir != "" {
		os.RemoveAll(s.dir)
	}
}

// Done returns a channel that is closed once the server process has exited (for engine:
// endpoint, once Stop was called).
func (s *Server) Done() <-chan struct{} { return s.done }

// Exited reports whether the server process has exited.
func (s *Server) Exited() bool {
	select {
	case <-s.done:
		return true
	default:
		return false
	}
}

// Err returns nil while the server runs or after it was asked to stop, and an *ExitError when
// it exited on its own, quoting its log.
func (s *Server) Err() error {
	if !s.Exited() || s.stopping.Load() {
		return nil
	}
	return &ExitError{Engine: s.engine, Status: s.exitStatus(), ExitCode: s.ExitCode(),
		Hint: s.log.hints.hint(), LogTail: s.log.lines(), Log: s.log.name}
}

// Wait blocks until the server process exits and returns Err.
func (s *Server) Wait() error {
	<-s.done
	return s.Err()
}

// ExitCode returns the exit status of the server process once it has exited; -1 while it
// runs, when a signal ended it, or when there is no process.
func (s *Server) ExitCode() int {
	s.exitMu.Lock()
	defer s.exitMu.Unlock()
	if s.state == nil {
		return -1
	}
	return s.state.ExitCode()
}

// exitStatus describes how the process ended, e.g. "status 1" or "signal killed".
func (s *Server) exitStatus() string {
	s.exitMu.Lock()
	defer s.exitMu.Unlock()
	if s.state == nil {
		if s.cmd == nil {
			return "no process"
		}
		return "still running"
	}
	if ws, ok := s.state.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "signal " + ws.Signal().String()
	}
	return fmt.Sprintf("status %d", s.state.ExitCode())
}
