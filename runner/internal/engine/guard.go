package engine

import (
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// guardEnv marks a process started by Start as the guard of a server. Its value is
// "PPID:GRACE_MS" or "PPID:GRACE_MS:DIR": the runner's pid, the stop grace period in
// milliseconds and, when the runner made one for the server, its scratch directory, which the
// guard removes once it has ended the group of a runner that died.
const guardEnv = "RUNNER_ENGINE_GUARD"

// guardDeathSignal is the parent-death signal of the guard. Its default action is to do nothing,
// unlike SIGTERM's: a runner that dies while the guard is still starting up (before it can
// catch signals) must not kill the guard before it has removed the scratch directory, which it
// does when it finds its parent gone.
const guardDeathSignal = syscall.SIGWINCH

// Why a guard: Linux's parent-death signal (Pdeathsig) reaches only the direct child of the
// runner, but a server is a tree of processes (vLLM's engine core, sglang's scheduler, a shell
// script's children). So Start does not run the server directly: it runs the runner's own
// executable as a guard, in a new process group, with a Pdeathsig. The guard runs the
// server in that same group and waits for it. When the runner stops the server it signals the
// whole group and the guard just waits for the server to exit. When the guard sees that the
// runner is gone (a parent-death signal, or its parent pid changed), it ends the whole group:
// SIGTERM, the grace period, SIGKILL. So no part of a server outlives the runner, even when the
// runner is killed with SIGKILL or crashes.
//
// The guard is the runner's own executable, so every program that starts servers (the runner,
// and the test binaries of packages whose tests start servers) must enter it explicitly, first
// thing in main or TestMain, by calling MaybeRunGuard. Start refuses to boot a server from a
// program that never did: its guard process would run the program itself instead.

// guardEntered records that MaybeRunGuard ran in this process and found it is not a guard.
var guardEntered atomic.Bool

// MaybeRunGuard makes this process the guard of a server and exits, when Start started it as
// one; otherwise it returns at once. Call it first thing in main, and in the TestMain of every
// test binary whose tests start servers, before anything else runs.
func MaybeRunGuard() {
	v, ok := os.LookupEnv(guardEnv)
	if !ok {
		guardEntered.Store(true)
		return
	}
	os.Exit(guardMain(v, os.Args[1:]))
}

// guardMain runs args[0] (a resolved path) with args[1:] as its argv and returns the exit
// status to leave with.
func guardMain(spec string, args []string) int {
	f := strings.SplitN(spec, ":", 3)
	if len(f) < 2 || len(args) < 2 {
		os.Stderr.WriteString("runner guard: bad invocation\n")
		return 2
	}
	ppid, err1 := strconv.Atoi(f[0])
	graceMS, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		os.Stderr.WriteString("runner guard: bad invocation\n")
		return 2
	}
	var dir string
	if len(f) == 3 {
		dir = f[2]
	}
	grace := time.Duration(graceMS) * time.Millisecond
	// Listen first, so that no parent-death signal is missed between the check and the loop.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, guardDeathSignal, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	if os.Getppid() != ppid {
		removeScratch(dir)
		return 1 // the runner died before the server could start
	}
	os.Unsetenv(guardEnv)

	cmd := &exec.Cmd{Path: args[0], Args: args[1:], Stdout: os.Stdout, Stderr: os.Stderr}
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	done := make(chan error, 1)
	go func() {
		// As in Start: the thread that starts the child must live as long as the child.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			done <- err
			return
		}
		done <- cmd.Wait()
	}()

	orphaned := func() bool { return os.Getppid() != ppid }
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if cmd.ProcessState == nil {
				os.Stderr.WriteString("runner guard: cannot start " + args[0] + ": " + err.Error() + "\n")
				return 127
			}
			if orphaned() {
				// The server may have died because the runner did (a write to the log pipe
				// the runner no longer reads), before the guard saw it: its children and the
				// scratch directory are still the guard's to end.
				return endGroup(grace, dir)
			}
			return exitCodeOf(cmd.ProcessState)
		case <-sigs:
			// A signal with the runner alive is the runner stopping the whole group: the server
			// got it too, and the guard waits for it to exit.
			if orphaned() {
				return endGroup(grace, dir)
			}
		case <-tick.C:
			if orphaned() {
				return endGroup(grace, dir)
			}
		}
	}
}

// endGroup ends the guard's process group after the runner died: SIGTERM, then SIGKILL to
// whatever is left after the grace period; then it removes the server's scratch directory
// (dir, when not empty), which the runner would have removed in Stop. Nothing is written to
// stdout or stderr here: their reader, the runner, is gone.
func endGroup(grace time.Duration, dir string) int {
	pgid := syscall.Getpgrp()
	self := os.Getpid()
	signal.Ignore(syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGPIPE)
	syscall.Kill(-pgid, syscall.SIGTERM)
	if waitOthersGone(pgid, self, time.Now().Add(grace)) {
		removeScratch(dir)
		return 1
	}
	// SIGKILL the others one by one rather than the group, so that the guard lives on to
	// remove the scratch directory once they are gone.
	for _, p := range groupMembers(pgid) {
		if p != self {
			syscall.Kill(p, syscall.SIGKILL)
		}
	}
	waitOthersGone(pgid, self, time.Now().Add(5*time.Second))
	removeScratch(dir)
	syscall.Kill(-pgid, syscall.SIGKILL) // whatever started meanwhile, and the guard too
	return 1
}

// waitOthersGone polls until no process of group pgid but self is left (true) or until the
// deadline (false).
func waitOthersGone(pgid, self int, deadline time.Time) bool {
	for {
		if others(groupMembers(pgid), self) == 0 {
			return true
		}
		if !time.Now().Before(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func removeScratch(dir string) {
	if dir != "" {
		os.RemoveAll(dir)
	}
}

// others counts the pids that are not self.
func others(pids []int, self int) int {
	n := 0
	for _, p := range pids {
		if p != self {
			n++
		}
	}
	return n
}

// exitCodeOf maps a process state to an exit status: its own, or 128+N for signal N, as a
// shell reports it.
func exitCodeOf(st *os.ProcessState) int {
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}
