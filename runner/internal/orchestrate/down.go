package orchestrate

import (
	"context"
	"io"
	"net/http"
	"sync"
	"time"

	"github.com/onelayerdown/runner/runner/internal/engine"
)

// exitWait bounds how long goingDown waits for a server that does not answer to exit. A
// variable so that a test can make a wait that should not happen obvious.
var exitWait = time.Second

// process is what goingDown needs of a server; *engine.Server is one.
type process interface {
	Exited() bool
	Done() <-chan struct{}
	PID() int
	BaseURL() string
}

var _ process = (*engine.Server)(nil)

// goingDown reports whether the server process has exited, after a request failed the way a
// dying server makes it fail (a stream cut off, a connection refused or reset). The client can
// see its connection drop a moment before the process is reaped, so goingDown waits for the
// exit, up to exitWait, but only until the server answers an HTTP request (any status): a
// server that answers is alive, and the run goes on at once. A server without a process
// (engine: endpoint) has no exit to wait for. When ctx ends, so does the wait. This way the
// rest of a dead server's requests fail at once with the reason, not one by one as refused
// connections, and a failure on a live server costs no pause.
func goingDown(ctx context.Context, srv process) bool {
	if srv.Exited() {
		return true
	}
	if srv.PID() == 0 {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, exitWait)
	defer cancel()
	alive := make(chan struct{})
	go func() {
		if answers(ctx, srv.BaseURL()) {
			close(alive)
		}
	}()
	select {
	case <-srv.Done():
		return true
	case <-alive:
		return false
	case <-ctx.Done():
		return srv.Exited()
	}
}

// answers reports whether the server at baseURL answers a GET of its root over a new
// connection, with any status. A pooled connection could be one the server dropped, and a TCP
// connection alone proves little: a dying process's listening socket can still complete a
// handshake for a moment.
func answers(ctx context.Context, baseURL string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, baseURL+"/", nil)
	if err != nil {
		return false
	}
	tr := &http.Transport{Proxy: nil, DisableKeepAlives: true}
	defer tr.CloseIdleConnections()
	resp, err := (&http.Client{Transport: tr}).Do(req)
	if err != nil {
		return false
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<12))
	resp.Body.Close()
	return true
}

// probeDown is the check a downWatch makes: goingDown. A variable so that a test can count the
// checks, or stop the run while one waits.
var probeDown = goingDown

// downWatch shares the decision whether a server is going down among the failed requests that
// ask. Under load, hundreds of requests can fail at once (connections refused when the client
// runs out of file descriptors), and each would otherwise wait for its own check, up to exitWait
// each, one after another. A decision taken by a check that began after a request started
// answers for that request too: the server was alive, or not yet gone, after the request was
// on its way. A request that started after the last check gets a check of its own. Its methods
// are safe for concurrent use: a caller that finds a check under way waits for it and takes
// its answer.
type downWatch struct {
	srv     process
	mu      sync.Mutex // held while a check runs
	checked time.Time  // when the last finished check began; zero before the first
	down    bool       // what it decided
}

// goingDown reports whether the server is going down, after a request that started at since
// failed the way a dying server makes it fail (see goingDown). An exited server is gone at
// once; otherwise the last decision answers when its check began at or after since, and a new
// check is made when none did. A check cut short by ctx is not kept as a decision.
func (w *downWatch) goingDown(ctx context.Context, since time.Time) bool {
	if w.srv.Exited() {
		return true
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.checked.IsZero() && !since.After(w.checked) {
		return w.down || w.srv.Exited()
	}
	began := time.Now()
	down := probeDown(ctx, w.srv)
	if ctx.Err() == nil {
		w.checked, w.down = began, down
	}
	return down
}
