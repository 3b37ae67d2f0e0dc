//go:build linux

package measure

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/openai"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// The simulator's settings for BenchmarkLoad. Each stream gets one event per benchDecode on
// average, so 1,024 streams ask the simulator for about 10,000 events a second: a load both
// processes carry on 2 shared cores (each spends about 30 µs of CPU per event at 1,024
// streams) with room to spare, so that what the table shows is the
// client's delay and not a saturated machine's. The jitter (each token's delay scaled by a
// factor in [0.5, 1.5]) spreads the streams' events in time the way independent requests
// spread; without it every stream would send in the same microsecond forever.
const (
	benchTokens = 32
	benchDecode = 100 * time.Millisecond
	benchQueue  = 20 * time.Millisecond
	benchJitter = 0.5
	benchRate   = 100.0 // requests per second of the open-loop point
	benchOpenN  = 300
)

// The targets the table is read against; never asserted.
const (
	targetAddedP99At64 = time.Millisecond
	targetRSSAt1024    = 100 << 20
	targetSendLagP99   = time.Millisecond
)

// benchPoint is one row of BenchmarkLoad's table.
type benchPoint struct {
	streams     int // closed loop; 0 for the open-loop point
	requests    int
	events      int
	failed      int
	unpaired    int // requests whose stamps and events did not pair one to one
	newConns    int // requests that did not reuse a connection
	wall        time.Duration
	added       *histogram
	clientCPU   time.Duration
	simCPU      time.Duration
	rssBase     int64 // bytes
	rssPeak     int64
	heapAtPeak  int64 // Go heap objects at the peak, live and not yet swept
	stackAtPeak int64 // goroutine stacks at the peak
	loadAvg     string
	sendLag     []time.Duration // open loop
	maxInFlight int
}

// BenchmarkLoad measures the client at 1, 64, 256 and 1,024 concurrent streams, and an open
// loop at 100 requests/s, against `runner sim` in a separate process with ground-truth stamps:
// the delay the client adds to each event (its timestamp minus the simulator's send stamp),
// events per second, the client's CPU time per 1,000 events and its resident memory per
// stream. It prints one table beside the targets.
//
// It needs a runner binary: RUNNER_BIN=path, as `make bench-load` sets it. Without one it is
// skipped, so `make bench` and `go test -bench .` stay quick.
func BenchmarkLoad(b *testing.B) {
	bin := os.Getenv("RUNNER_BIN")
	if bin == "" {
		b.Skip("set RUNNER_BIN to a runner binary to run the load benchmark (make bench-load does)")
	}
	const most = 1024
	need := uint64(2*most + 256) // a connection per stream, with room for connections closing
	if err := raiseNoFile(need); err != nil {
		b.Fatal(err)
	}
	url, pid := startSimProcess(b, bin, need)

	var rows []benchPoint
	for _, streams := range []int{1, 64, 256, most} {
		// Enough requests that every point has a steady middle: a closed loop of N starts
		// its last requests once all but N have been sent.
		waves := map[int]int{1: 8, 64: 4, 256: 3, most: 3}[streams]
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			var p benchPoint
			for range b.N {
				p = runPoint(b, url, pid, Load{Concurrency: streams}, streams*waves)
			}
			p.streams = streams
			reportPoint(b, p)
			rows = append(rows, p)
		})
	}
	b.Run(fmt.Sprintf("open-rate=%g", benchRate), func(b *testing.B) {
		var p benchPoint
		for range b.N {
			p = runPoint(b, url, pid, Load{Rate: benchRate, Arrival: ArrivalPoisson, Seed: 1}, benchOpenN)
		}
		reportPoint(b, p)
		rows = append(rows, p)
	})
	printTable(os.Stdout, rows)
}

// runPoint runs one load point through Client and RunLoad, exactly as the runner does, and
// measures it.
func runPoint(b *testing.B, url string, pid int, l Load, n int) benchPoint {
	b.Helper()
	hc := NewHTTP()
	tap := newStampTap(hc.Transport)
	hc.Transport = tap
	api := &openai.Client{BaseURL: url, HTTP: hc}
	c := &Client{API: api, HTTP: hc}
	// As orchestrate sets it up: every per-event option, and the server's own tokenizer over
	// the measuring client's connections.
	c.SetOptions(openai.Options{IncludeUsage: true, ContinuousUsage: true, ReturnTokenIDs: true})
	c.Tokenize = func(ctx context.Context, text string) (int, error) {
		no := false
		r, err := api.Tokenize(ctx, openai.TokenizeRequest{Model: "sim-model", Prompt: text, AddSpecialTokens: &no})
		return r.Count, err
	}
	defer hc.CloseIdleConnections()
	prepare := func(_ context.Context, i int) (Spec, error) {
		yes := true
		return Spec{
			Params: openai.Params{API: openai.Completions, Model: "sim-model", Prompt: taggedPrompt(i),
				MaxTokens: benchTokens, IgnoreEOS: &yes},
			Timeout: time.Minute,
		}, nil
	}

	p := benchPoint{requests: n, added: newHistogram()}
	streams := l.Concurrency
	var done atomic.Int64
	// What was left of the last point is collected and handed back to the kernel first, so
	// that the baseline is this point's.
	runtime.GC()
	debug.FreeOSMemory()
	p.rssBase = vmRSS(b, "self")
	cpu0, sim0 := cpuTime(b), simCPU(b, pid)

	stopSampler := make(chan struct{})
	var sampler sync.WaitGroup
	if !l.Open() {
		sampler.Add(1)
		go func() {
			defer sampler.Done()
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stopSampler:
					return
				case <-tick.C:
				}
				// The steady state: every stream has finished its first request (its
				// connection and buffers exist) and none has yet started its last.
				if d := int(done.Load()); d >= streams && d <= n-streams || streams == n {
					if rss := vmRSS(b, "self"); rss > p.rssPeak {
						p.rssPeak = rss
						p.heapAtPeak, p.stackAtPeak = goMemory()
					}
				}
			}
		}()
	}

	start := time.Now()
	err := RunLoad(context.Background(), c, l, n, prepare, func(r LoadResult) error {
		done.Add(1)
		rec := r.Record
		if r.Err != nil || rec.Status != record.StatusOK {
			p.failed++
			if p.failed == 1 {
				b.Errorf("request %d: %v %s %s", r.Index, r.Err, rec.ErrorClass, rec.Error)
			}
			return nil
		}
		sent := tap.take(r.Index)
		if len(sent) != len(rec.EventList) {
			p.unpaired++
			return nil
		}
		for k, e := range rec.EventList {
			p.added.add(time.Duration(rec.Start.Add(e.SinceT0).UnixNano() - sent[k]))
		}
		p.events += len(rec.EventList)
		if !rec.ConnReused {
			p.newConns++
		}
		p.maxInFlight = max(p.maxInFlight, rec.InFlight)
		if l.Open() && rec.SendLag != nil {
			p.sendLag = append(p.sendLag, *rec.SendLag)
		}
		return nil
	})
	p.wall = time.Since(start)
	close(stopSampler)
	sampler.Wait()
	p.clientCPU, p.simCPU = cpuTime(b)-cpu0, simCPU(b, pid)-sim0
	p.loadAvg = loadAvg(b)
	if err != nil {
		b.Fatalf("RunLoad: %v", err)
	}
	if p.unpaired > 0 {
		b.Errorf("%d requests: the simulator's stamps and the client's events did not pair one to one", p.unpaired)
	}
	return p
}

// reportPoint reports a point's figures as benchmark metrics.
func reportPoint(b *testing.B, p benchPoint) {
	b.ReportMetric(millis(p.added.quantile(0.5)), "added-p50-ms")
	b.ReportMetric(millis(p.added.quantile(0.99)), "added-p99-ms")
	b.ReportMetric(float64(p.events)/p.wall.Seconds(), "events/s")
	b.ReportMetric(cpuPer1k(p.clientCPU, p.events), "cpu-ms/1k-events")
	if p.streams > 0 {
		b.ReportMetric(float64(p.rssPeak-p.rssBase)/float64(p.streams)/1024, "rss-KiB/stream")
	}
	if len(p.sendLag) > 0 {
		b.ReportMetric(millis(quantile(p.sendLag, 0.5)), "send-lag-p50-ms")
		b.ReportMetric(millis(quantile(p.sendLag, 0.99)), "send-lag-p99-ms")
	}
}

// printTable writes the benchmark's table and the targets beside it.
func printTable(w io.Writer, rows []benchPoint) {
	fmt.Fprintf(w, "\nclient under load: runner sim in its own process, completions of %d tokens, decode %v per token (jitter ±%.0f%%), queue %v, stamps on\n",
		benchTokens, benchDecode, benchJitter*100, benchQueue)
	fmt.Fprintf(w, "machine: %d CPUs (GOMAXPROCS %d)\n\n", runtime.NumCPU(), runtime.GOMAXPROCS(0))
	tw := &table{}
	tw.row("streams", "added p50", "added p99", "events/s", "sim offers", "CPU ms/1k events", "RSS/stream",
		"RSS total", "heap+stacks/stream", "sim CPU ms/1k events", "cores busy client+sim", "load avg", "new conns", "failed")
	for _, p := range rows {
		if p.streams == 0 {
			continue
		}
		offered := float64(p.streams) * float64(benchTokens+1) / (benchQueue + benchDecode*(benchTokens-1)).Seconds()
		tw.row(strconv.Itoa(p.streams),
			fmtMillis(p.added.quantile(0.5)), fmtMillis(p.added.quantile(0.99)),
			fmt.Sprintf("%.0f", float64(p.events)/p.wall.Seconds()),
			fmt.Sprintf("%.0f", offered),
			fmt.Sprintf("%.1f", cpuPer1k(p.clientCPU, p.events)),
			fmt.Sprintf("%.1f KiB", float64(p.rssPeak-p.rssBase)/float64(p.streams)/1024),
			fmt.Sprintf("%.1f MiB", float64(p.rssPeak)/(1<<20)),
			fmt.Sprintf("%.0f+%.0f KiB", float64(p.heapAtPeak)/float64(p.streams)/1024, float64(p.stackAtPeak)/float64(p.streams)/1024),
			fmt.Sprintf("%.1f", cpuPer1k(p.simCPU, p.events)),
			fmt.Sprintf("%.2f+%.2f", p.clientCPU.Seconds()/p.wall.Seconds(), p.simCPU.Seconds()/p.wall.Seconds()),
			p.loadAvg, strconv.Itoa(p.newConns), strconv.Itoa(p.failed))
	}
	tw.write(w)
	for _, p := range rows {
		if p.streams != 0 {
			continue
		}
		fmt.Fprintf(w, "\nopen loop: %d requests at %g/s (Poisson): send_lag p50 %s p99 %s max %s; added p50 %s p99 %s; %.0f events/s, at most %d in flight, %d failed\n",
			p.requests, benchRate, fmtMillis(quantile(p.sendLag, 0.5)), fmtMillis(quantile(p.sendLag, 0.99)), fmtMillis(quantile(p.sendLag, 1)),
			fmtMillis(p.added.quantile(0.5)), fmtMillis(p.added.quantile(0.99)), float64(p.events)/p.wall.Seconds(), p.maxInFlight, p.failed)
	}
	fmt.Fprintf(w, "\ntargets: added p99 at 64 streams <= %v; RSS at 1024 streams < %d MiB in all; open-loop send_lag p99 < %v\n",
		targetAddedP99At64, targetRSSAt1024>>20, targetSendLagP99)
	fmt.Fprintf(w, "added: the client's timestamp of an event minus the simulator's send stamp; RSS: peak VmRSS in the steady state minus the point's baseline;\n"+
		"heap+stacks: the Go heap's objects (live and garbage not yet swept) and goroutine stacks at that peak; sim offers: events/s the simulator's pacing allows;\n"+
		"cores busy: CPU time over wall time of each process; load avg: the machine's, at the end of the point (other work on it shows here);\n"+
		"at 1 stream, RSS/stream is mostly the Go heap's 4 MiB minimum growing back after the collection that precedes the baseline\n")
}

// table lays out columns separated by " | ".
type table struct{ rows [][]string }

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

func (t *table) write(w io.Writer) {
	width := make([]int, len(t.rows[0]))
	for _, r := range t.rows {
		for i, c := range r {
			width[i] = max(width[i], len(c))
		}
	}
	for _, r := range t.rows {
		cells := make([]string, len(r))
		for i, c := range r {
			cells[i] = fmt.Sprintf("%*s", width[i], c)
		}
		fmt.Fprintln(w, strings.Join(cells, " | "))
	}
}

// histogram counts durations at a resolution of one microsecond up to histMax, so that the
// quantiles of millions of events cost a fixed few hundred kilobytes allocated before the
// baseline is taken, instead of memory that grows with the events and counts as the client's.
type histogram struct {
	counts []uint32
	over   int   // above histMax
	under  int   // negative: the stamp after the client's timestamp (clock steps)
	max    int64 // nanoseconds
	n      int
}

const histMax = 200 * time.Millisecond

func newHistogram() *histogram {
	h := &histogram{counts: make([]uint32, histMax/time.Microsecond)}
	for i := range h.counts {
		h.counts[i] = 0 // touch every page now, so it is resident in the baseline
	}
	return h
}

func (h *histogram) add(d time.Duration) {
	h.n++
	h.max = max(h.max, int64(d))
	switch {
	case d < 0:
		h.under++
		h.counts[0]++
	case d >= histMax:
		h.over++
	default:
		h.counts[d/time.Microsecond]++
	}
}

// quantile returns the q-quantile, to the microsecond; histMax or more when it lies above.
func (h *histogram) quantile(q float64) time.Duration {
	if h.n == 0 {
		return 0
	}
	rank := int(q*float64(h.n-1)) + 1
	seen := 0
	for i, c := range h.counts {
		seen += int(c)
		if seen >= rank {
			return time.Duration(i) * time.Microsecond
		}
	}
	return time.Duration(h.max)
}

func quantile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[int(q*float64(len(s)-1))]
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func cpuPer1k(d time.Duration, events int) float64 {
	if events == 0 {
		return 0
	}
	return millis(d) * 1000 / float64(events)
}

func fmtMillis(d time.Duration) string {
	if d >= histMax {
		return ">" + histMax.String()
	}
	return fmt.Sprintf("%.3f ms", millis(d))
}

// startSimProcess starts `runner sim` on a free loopback port, with stamps on, and returns its
// URL and process id. The process runs in its own process group, dies with this one (a
// parent-death signal), and is killed at the end of the benchmark whatever happens.
func startSimProcess(b *testing.B, bin string, noFile uint64) (string, int) {
	b.Helper()
	logPath := filepath.Join(b.TempDir(), "sim.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		b.Fatal(err)
	}
	cmd := exec.Command(bin, "sim", "--host", "127.0.0.1", "--port", "0", "--stamp",
		"--model", "sim-model", "--seed", "1",
		"--queue-delay", benchQueue.String(), "--decode-per-token", benchDecode.String(),
		"--jitter", strconv.FormatFloat(benchJitter, 'f', -1, 64))
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatalf("start %s sim: %v", bin, err)
	}
	b.Cleanup(func() {
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		_ = cmd.Wait()
		logFile.Close()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if u, ok := strings.CutPrefix(sc.Text(), "listening on "); ok {
				line <- u
				break
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	var url string
	select {
	case url = <-line:
	case <-time.After(30 * time.Second):
		log, _ := os.ReadFile(logPath)
		b.Fatalf("%s sim did not say where it listens within 30s; its log:\n%s", bin, log)
	}
	// A Go program raises its soft limit on open files to the hard limit as it starts, but
	// check: a simulator that cannot accept 1,024 connections would look like a slow client.
	if got, err := softNoFile(cmd.Process.Pid); err != nil {
		b.Fatal(err)
	} else if got < noFile {
		b.Fatalf("the simulator may open %d files, the benchmark needs %d: raise ulimit -n", got, noFile)
	}
	return url, cmd.Process.Pid
}

// raiseNoFile raises this process's soft limit on open files to at least need.
func raiseNoFile(need uint64) error {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("read the limit on open files: %w", err)
	}
	if lim.Cur >= need {
		return nil
	}
	if lim.Max < need {
		return fmt.Errorf("the hard limit on open files is %d, the benchmark needs %d: raise ulimit -Hn", lim.Max, need)
	}
	lim.Cur = need
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return fmt.Errorf("raise the limit on open files to %d: %w", need, err)
	}
	return nil
}

// softNoFile reads a process's soft limit on open files from /proc.
func softNoFile(pid int) (uint64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/limits", pid))
	if err != nil {
		return 0, fmt.Errorf("read the limits of process %d: %w", pid, err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "Max open files"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				break
			}
			if f[0] == "unlimited" {
				return 1 << 62, nil
			}
			return strconv.ParseUint(f[0], 10, 64)
		}
	}
	return 0, fmt.Errorf("/proc/%d/limits: no line for open files", pid)
}

// vmRSS returns the resident memory of a process ("self" or a pid) from /proc, in bytes.
func vmRSS(b *testing.B, pid string) int64 {
	data, err := os.ReadFile("/proc/" + pid + "/status")
	if err != nil {
		b.Fatalf("read /proc/%s/status: %v", pid, err)
	}
	for _, l := range bytes.Split(data, []byte("\n")) {
		if rest, ok := bytes.CutPrefix(l, []byte("VmRSS:")); ok {
			f := strings.Fields(string(rest)) // "12345 kB"
			kb, err := strconv.ParseInt(f[0], 10, 64)
			if err != nil {
				b.Fatalf("/proc/%s/status: VmRSS %q: %v", pid, rest, err)
			}
			return kb << 10
		}
	}
	b.Fatalf("/proc/%s/status: no VmRSS", pid)
	return 0
}

// cpuTime returns the user and system CPU time this process has used.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// simCPU returns the user and system CPU time of process pid, all its threads, from
// /proc/PID/stat (in clock ticks of 1/100 s, USER_HZ on every Linux the project runs on).
func simCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatalf("read /proc/%d/stat: %v", pid, err)
	}
	// The command name, in parentheses, may hold spaces: count fields after its end.
	s := string(data)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	// After the name: state is field 3, so utime (14) and stime (15) are f[11] and f[12].
	utime, err1 := strconv.ParseInt(f[11], 10, 64)
	stime, err2 := strconv.ParseInt(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		b.Fatalf("/proc/%d/stat: utime %q stime %q", pid, f[11], f[12])
	}
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// goMemory returns the bytes of the Go heap's objects and of goroutine stacks, read without
// stopping the world.
func goMemory() (heap, stacks int64) {
	m := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(m)
	return int64(m[0].Value.Uint64()), int64(m[1].Value.Uint64())
}

// loadAvg returns the machine's load averages over 1, 5 and 15 minutes.
func loadAvg(b *testing.B) string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		b.Fatalf("read /proc/loadavg: %v", err)
	}
	return strings.Join(strings.Fields(string(data))[:3], " ")
}
