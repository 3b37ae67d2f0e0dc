package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// DefaultInterval is how often the sampler asks for a sample: about ten times a second.
const DefaultInterval = 100 * time.Millisecond

// Options configure a Sampler.
type Options struct {
	// Path is the nvidia-smi to run; empty looks "nvidia-smi" up in the PATH.
	Path string
	// ServerID is the server config the samples are taken for.
	ServerID string
	// Interval between samples; zero means DefaultInterval.
	Interval time.Duration
	// ProbeTimeout bounds the first query, which tells whether there is a GPU and which name
	// the throttle reasons go by; zero means 10 seconds.
	ProbeTimeout time.Duration
	// Stall is how long the sampler may go without a sample before it is reported as hanging;
	// zero means 20 intervals, at least 2 seconds.
	Stall time.Duration
	// ProcessGroup, when above 1, is the process group the sampler joins: the server's, so
	// that whatever ends the server's group (its stop, or its guard when the runner dies) ends
	// the sampler with it. Otherwise the sampler gets a group of its own.
	ProcessGroup int
}

// Sampler runs nvidia-smi as a child process and keeps its samples. The zero of *Sampler, nil,
// is a sampler of a machine without GPUs: it has no samples and nothing to warn about. Its
// methods are safe for concurrent use.
type Sampler struct {
	o       Options
	maxAge  time.Duration
	reasons string // the name the throttle reasons were asked by; "" when the probe failed

	mu       sync.Mutex
	samples  []record.GPUSample
	drained  int
	changed  chan struct{} // closed and replaced when a sample arrives or the process ends
	bad      int           // lines that were not samples
	firstBad string
	warnings []string // problems found before the process ran
	exited   bool
	waitErr  error
	stopping bool
	unasked  bool   // the process exited before Stop asked it to
	stalled  string // how long it had gone without a sample when Stop was called, if too long
	started  time.Time

	cmd      *exec.Cmd
	stderr   limitedBuffer
	done     chan struct{} // closed once the process is reaped and its output read
	stopOnce sync.Once
}

// Start starts sampling the GPUs, or returns nil where there is nothing to sample: no
// nvidia-smi on the PATH, or one that lists no GPU. A nvidia-smi that fails or does not answer
// its first query yields a Sampler without samples whose Warning says why. The sampler stops
// when ctx is done or Stop is called.
func Start(ctx context.Context, o Options) *Sampler {
	if o.Interval <= 0 {
		o.Interval = DefaultInterval
	}
	if o.ProbeTimeout <= 0 {
		o.ProbeTimeout = 10 * time.Second
	}
	if o.Stall <= 0 {
		o.Stall = max(20*o.Interval, 2*time.Second)
	}
	path := o.Path
	if path == "" {
		p, err := exec.LookPath("nvidia-smi")
		if err != nil {
			return nil // no NVIDIA driver tools: no GPU to sample, and nothing wrong
		}
		path = p
	}
	s := &Sampler{o: o, maxAge: max(10*o.Interval, time.Second), changed: make(chan struct{}), done: make(chan struct{}), started: time.Now()}
	field, gpus, err := probe(ctx, path, o.ProbeTimeout)
	switch {
	case err != nil:
		s.warnings = append(s.warnings, err.Error())
		s.exited = true
		close(s.done)
		return s
	case gpus == 0:
		return nil
	}
	s.reasons = field
	args := []string{"--query-gpu=" + Query(field), "--format=csv,noheader,nounits", "-lms", fmt.Sprint(o.Interval.Milliseconds())}
	// nvidia-smi prints its timestamps in local time without a zone, as the C library's
	// localtime reads TZ. Reading them back in the runner's time.Local would be wrong whenever
	// the two disagree (a TZ that Go cannot load falls back to UTC, a zone set for one process
	// and not the other) and ambiguous for the hour a daylight-saving change repeats. With TZ=UTC
	// in its environment (the last value of a name wins) it prints UTC, a clock with no zone and
	// no repeated hour. Its own timestamp is kept rather than the moment a line arrives, because
	// that is when the driver was asked, and its output may reach the runner in bursts.
	s.cmd = &exec.Cmd{Path: path, Args: append([]string{path}, args...), Stderr: &s.stderr, Env: append(os.Environ(), "TZ=UTC")}
	s.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pgid: max(o.ProcessGroup, 0), Pdeathsig: syscall.SIGKILL}
	if o.ProcessGroup <= 1 {
		s.cmd.SysProcAttr.Pgid = 0
	}
	// Samples come through a pipe of the sampler's own rather than StdoutPipe: Wait would
	// close that as soon as the process exits and lose the last lines, and a reader of it
	// could block for good on a child nvidia-smi left behind holding its end.
	pr, pw, err := os.Pipe()
	if err != nil {
		s.fail(fmt.Sprintf("nvidia-smi: %v", err))
		return s
	}
	s.cmd.Stdout = pw
	s.cmd.WaitDelay = time.Second
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that started the child exits, not the process
		// (golang.org/issue/27505): this goroutine keeps its thread until the child is reaped.
		runtime.LockOSThread()
		err := s.cmd.Start()
		pw.Close()
		if err != nil {
			pr.Close()
			started <- err
			return
		}
		started <- nil
		read := make(chan struct{})
		go func() { s.read(pr); close(read) }()
		err = s.cmd.Wait()
		t := time.NewTimer(time.Second)
		select {
		case <-read:
		case <-t.C:
			pr.Close() // a leftover child holds the pipe open: stop reading
			<-read
		}
		t.Stop()
		pr.Close()
		s.mu.Lock()
		s.exited, s.waitErr = true, err
		s.unasked = !s.stopping
		s.notify()
		s.mu.Unlock()
		close(s.done)
	}()
	if err := <-started; err != nil {
		s.fail(fmt.Sprintf("cannot start nvidia-smi: %v", err))
		return s
	}
	go func() {
		select {
		case <-ctx.Done():
			s.Stop()
		case <-s.done:
		}
	}()
	return s
}

// fail marks a sampler whose process could not run.
func (s *Sampler) fail(w string) {
	s.warnings = append(s.warnings, w)
	s.exited = true
	close(s.done)
}

// read reads the sampler's output until it ends.
func (s *Sampler) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 4096), 64<<10)
	for sc.Scan() {
		line := sc.Text()
		if strings.TrimSpace(line) == "" {
			continue
		}
		smp, err := ParseLine(line, time.UTC)
		s.mu.Lock()
		if err != nil {
			if s.bad == 0 {
				s.firstBad = fmt.Sprintf("%q (%v)", shorten(line, 120), err)
			}
			s.bad++
		} else {
			smp.ServerID = s.o.ServerID
			s.samples = append(s.samples, smp)
			s.notify()
		}
		s.mu.Unlock()
	}
	io.Copy(io.Discard, r) // a line too long for the scanner: drain, so nvidia-smi is not blocked
}

// notify wakes the waiters of Join; s.mu is held.
func (s *Sampler) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// Stop ends the sampler: SIGTERM to nvidia-smi, SIGKILL a second later if it is still there,
// and waits until it is reaped. Stop is idempotent, and safe on a nil Sampler.
func (s *Sampler) Stop() {
	if s == nil {
		return
	}
	s.stopOnce.Do(func() {
		s.mu.Lock()
		if !s.exited {
			s.stalled = s.stall()
		}
		s.stopping = true
		s.mu.Unlock()
		if s.cmd == nil || s.cmd.Process == nil {
			<-s.done
			return
		}
		select {
		case <-s.done:
			return
		default:
		}
		s.cmd.Process.Signal(syscall.SIGTERM)
		t := time.NewTimer(time.Second)
		defer t.Stop()
		select {
		case <-s.done:
		case <-t.C:
			s.cmd.Process.Kill()
			<-s.done
		}
	})
}

// ReasonsField returns the name nvidia-smi answered for the active throttle reasons,
// EventReasonsField or ThrottleReasonsField (drivers before 535), and "" when it answered
// neither or on a nil Sampler: then no sample is taken.
func (s *Sampler) ReasonsField() string {
	if s == nil {
		return ""
	}
	return s.reasons
}

// BadLines returns how many lines of nvidia-smi's output were not samples (a timestamp or a
// value that does not parse, a field count that does not match), and the first of them with
// why; 0 and "" on a nil Sampler.
func (s *Sampler) BadLines() (n int, first string) {
	if s == nil {
		return 0, ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bad, s.firstBad
}

// Done returns a channel closed once the sampler's process is gone.
func (s *Sampler) Done() <-chan struct{} {
	if s == nil {
		c := make(chan struct{})
		close(c)
		return c
	}
	return s.done
}

// PID returns the process id of the sampler's nvidia-smi; 0 when none runs or ran.
func (s *Sampler) PID() int {
	if s == nil || s.cmd == nil || s.cmd.Process == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Drain returns the samples taken since the last Drain, in time order.
func (s *Sampler) Drain() []record.GPUSample {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := append([]record.GPUSample(nil), s.samples[s.drained:]...)
	s.drained = len(s.samples)
	return out
}

// Join fills the GPU fields of rec from the samples over its span, t0 to its end (to t0 alone
// when it has no end). Samples travel through a pipe, so Join first waits, for about two
// intervals at most, for a sample taken after the span's end: every sample inside the span is
// then at hand. A request no sample describes keeps its fields nil.
func (s *Sampler) Join(rec *record.Request) {
	if s == nil || rec.Start.IsZero() {
		return
	}
	end := rec.Start
	if rec.E2E != nil {
		end = rec.Start.Add(*rec.E2E)
	}
	deadline := time.NewTimer(2*s.o.Interval + 50*time.Millisecond)
	defer deadline.Stop()
	for {
		s.mu.Lock()
		n := len(s.samples)
		caughtUp := s.exited || s.stopping || (n > 0 && s.samples[n-1].Time.After(end))
		changed := s.changed
		if caughtUp {
			sp := Join(s.samples, rec.Start, end, s.maxAge)
			s.mu.Unlock()
			rec.GPUSMClockMeanMHz, rec.GPUTempMaxC, rec.GPUThrottled = sp.SMClockMeanMHz, sp.TempMaxC, sp.Throttled
			return
		}
		s.mu.Unlock()
		select {
		case <-changed:
			continue
		case <-deadline.C:
		}
		s.mu.Lock()
		sp := Join(s.samples, rec.Start, end, s.maxAge)
		s.mu.Unlock()
		rec.GPUSMClockMeanMHz, rec.GPUTempMaxC, rec.GPUThrottled = sp.SMClockMeanMHz, sp.TempMaxC, sp.Throttled
		return
	}
}

// Warning says, in one sentence, what went wrong with the sampler: a nvidia-smi that failed,
// exited while the server ran, stopped answering, or printed lines that are not samples.
// It is empty when nothing did, and on a nil Sampler.
func (s *Sampler) Warning() string {
	if s == nil {
		return ""
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	w := append([]string(nil), s.warnings...)
	switch {
	case s.unasked:
		msg := fmt.Sprintf("nvidia-smi exited (%s) after %d samples, while the server ran", exitText(s.waitErr), len(s.samples))
		if e := firstLine(s.stderr.String()); e != "" {
			msg += ": " + e
		}
		w = append(w, msg)
	case s.stalled != "":
		w = append(w, s.stalled)
	case !s.exited && !s.stopping:
		if st := s.stall(); st != "" {
			w = append(w, st)
		}
	}
	if s.bad > 0 {
		w = append(w, fmt.Sprintf("%d lines of nvidia-smi output were not samples, the first %s", s.bad, s.firstBad))
	}
	if len(w) == 0 {
		return ""
	}
	return "GPU telemetry: " + strings.Join(w, "; ")
}

// stall describes a sampler that has gone without a sample for longer than Options.Stall, and
// is empty for one that has not; s.mu is held.
func (s *Sampler) stall() string {
	last := s.started
	if n := len(s.samples); n > 0 {
		last = s.samples[n-1].Time
	}
	gap := time.Since(last)
	if gap <= s.o.Stall {
		return ""
	}
	return fmt.Sprintf("nvidia-smi gave no sample for %s (after %d samples): it hangs", gap.Round(100*time.Millisecond), len(s.samples))
}

// probe runs one query of the GPUs' indexes and throttle reasons and returns the name the
// reasons go by and how many GPUs answered. Drivers before 535 know only the throttle name:
// when the event name is refused, the throttle name is tried. No GPU ("No devices were found")
// is no error.
func probe(ctx context.Context, path string, timeout time.Duration) (field string, gpus int, err error) {
	var out string
	for _, f := range []string{EventReasonsField, ThrottleReasonsField} {
		out, err = run(ctx, timeout, path, "--query-gpu=index,"+f, "--format=csv,noheader,nounits")
		if err == nil {
			n := 0
			for _, l := range strings.Split(out, "\n") {
				if strings.TrimSpace(l) != "" {
					n++
				}
			}
			return f, n, nil
		}
		if strings.Contains(out, "No devices were found") {
			return "", 0, nil
		}
		if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
			break
		}
	}
	return "", 0, err
}

// run runs nvidia-smi once with a timeout, in a process group of its own that the timeout
// ends whole, and returns its output.
func run(ctx context.Context, timeout time.Duration, path string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	var buf limitedBuffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	err := cmd.Run()
	out := buf.String()
	switch {
	case ctx.Err() == context.DeadlineExceeded:
		return out, fmt.Errorf("nvidia-smi did not answer within %s: %w", timeout, context.DeadlineExceeded)
	case err != nil:
		msg := fmt.Sprintf("nvidia-smi failed (%s)", exitText(err))
		if l := firstLine(out); l != "" {
			msg += ": " + l
		}
		return out, errors.New(msg)
	}
	return out, nil
}

// exitText describes how a process ended.
func exitText(err error) string {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "signal " + ws.Signal().String()
		}
		return fmt.Sprintf("status %d", ee.ExitCode())
	}
	if err == nil {
		return "status 0"
	}
	return err.Error()
}

func firstLine(s string) string {
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return shorten(l, 200)
		}
	}
	return ""
}

func shorten(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}

// limitedBuffer keeps the first 64 KiB written to it and discards the rest.
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := 64<<10 - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *limitedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

var _ io.Writer = (*limitedBuffer)(nil)
