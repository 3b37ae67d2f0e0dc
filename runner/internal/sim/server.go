package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Server is a simulated vLLM OpenAI-compatible server. It is an http.Handler: serve it with
// net/http or httptest.
type Server struct {
	cfg   Config
	tok   *tokenizer
	cache *prefixCache // nil when prefix caching is off
	met   *metrics
	eng   *engine       // nil without batching: each request is timed on its own
	slots chan struct{} // nil when concurrency is unbounded or the engine batches

	closed    chan struct{}
	closeOnce sync.Once
	dead      atomic.Bool

	running, waiting, inFlight gauge
	steps                      atomic.Int64

	mu  sync.Mutex // guards rng and seq
	rng *rand.Rand
	seq uint64

	logMu sync.Mutex

	// traceSeq, when set (by tests), is called from the engine's loop with each request that
	// has its last token planned and delivered.
	traceSeq func(*seq)
}

var _ http.Handler = (*Server)(nil)

// New returns a server for cfg, or the reason cfg cannot work.
func New(cfg Config) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:    cfg,
		tok:    newTokenizer(),
		met:    newMetrics(),
		closed: make(chan struct{}),
		rng:    rand.New(rand.NewPCG(cfg.Seed, 0x1d5)),
	}
	s.met.freeze(faultArgs(cfg.Faults, FaultFreezeMetric))
	if cfg.PrefixCaching {
		s.cache = newPrefixCache(cfg.BlockSize, cfg.CacheBlocks)
	}
	if cfg.batching() {
		s.eng = newEngine(s)
	} else if cfg.MaxConcurrency > 0 {
		s.slots = make(chan struct{}, cfg.MaxConcurrency)
	}
	return s, nil
}

// Close releases every request that is waiting, sleeping or hanging: their connections are cut.
// Call it when shutting down, after in-flight requests had their chance to finish.
func (s *Server) Close() {
	s.closeOnce.Do(func() { close(s.closed) })
}

// ResetPrefixCache empties the prefix cache, as POST /reset_prefix_cache does.
func (s *Server) ResetPrefixCache() {
	if s.cache != nil {
		s.cache.reset()
	}
}

// Dead reports whether a simulated in-process crash has killed the engine.
func (s *Server) Dead() bool { return s.dead.Load() }

func (s *Server) now() time.Time { return s.cfg.now() }

// next returns a new request sequence number and a 32-hex-digit request id drawn from the seed.
func (s *Server) next() (seq uint64, hex string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return s.seq, fmt.Sprintf("%016x%016x", s.rng.Uint64(), s.rng.Uint64())
}

// ServeHTTP routes a request to vLLM's endpoints.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	sw := &statusWriter{ResponseWriter: w}
	defer func() {
		if sw.status != 0 {
			s.access(r, sw.status)
		}
	}()
	w = sw
	w.Header().Set("Server", "uvicorn")

	if s.cfg.APIKey != "" && strings.HasPrefix(r.URL.Path, "/v1") &&
		r.Header.Get("Authorization") != "Bearer "+s.cfg.APIKey {
		writeJSON(w, http.StatusUnauthorized, map[string]string{"error": "Unauthorized"})
		return
	}
	method, h := s.route(r.URL.Path)
	switch {
	case h == nil:
		writeJSON(w, http.StatusNotFound, map[string]string{"detail": "Not Found"})
	case r.Method != method:
		w.Header().Set("Allow", method)
		writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"detail": "Method Not Allowed"})
	default:
		h(w, r)
	}
}

// route returns the method and handler of path, or a nil handler for an unknown path.
func (s *Server) route(path string) (string, func(http.ResponseWriter, *http.Request)) {
	if faultArgs(s.cfg.Faults, FaultNoRoute)[path] {
		return "", nil
	}
	switch path {
	case "/health", "/ping":
		return http.MethodGet, s.handleHealth
	case "/version":
		return http.MethodGet, s.handleVersion
	case "/v1/models":
		return http.MethodGet, s.handleModels
	case "/metrics":
		return http.MethodGet, s.handleMetrics
	case "/tokenize":
		return http.MethodPost, s.handleTokenize
	case "/detokenize":
		return http.MethodPost, s.handleDetokenize
	case "/v1/completions":
		return http.MethodPost, func(w http.ResponseWriter, r *http.Request) { s.handleGenerate(w, r, false) }
	case "/v1/chat/completions":
		return http.MethodPost, func(w http.ResponseWriter, r *http.Request) { s.handleGenerate(w, r, true) }
	case "/reset_prefix_cache":
		if s.cfg.DevMode {
			return http.MethodPost, s.handleResetPrefixCache
		}
	}
	return "", nil
}

func (s *Server) handleHealth(w http.ResponseWriter, r *http.Request) {
	if s.dead.Load() {
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

func (s *Server) handleVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, struct {
		Version string `json:"version"`
	}{s.cfg.Version})
}

func (s *Server) handleResetPrefixCache(w http.ResponseWriter, r *http.Request) {
	if slices.ContainsFunc(s.cfg.Faults, func(f Fault) bool { return f.Kind == FaultResetNoop }) {
		// The reset is declined, and the answer says nothing of it.
		s.logf("INFO", "api_server", "Resetting prefix cache")
		w.Header().Set("Content-Length", "0")
		w.WriteHeader(http.StatusOK)
		return
	}
	s.ResetPrefixCache()
	s.logf("INFO", "api_server", "Resetting prefix cache")
	w.Header().Set("Content-Length", "0")
	w.WriteHeader(http.StatusOK)
}

func (s *Server) handleModels(w http.ResponseWriter, r *http.Request) {
	created := s.now().Unix()
	_, permID := s.next()
	type permission struct {
		ID                 string  `json:"id"`
		Object             string  `json:"object"`
		Created            int64   `json:"created"`
		AllowCreateEngine  bool    `json:"allow_create_engine"`
		AllowSampling      bool    `json:"allow_sampling"`
		AllowLogprobs      bool    `json:"allow_logprobs"`
		AllowSearchIndices bool    `json:"allow_search_indices"`
		AllowView          bool    `json:"allow_view"`
		AllowFineTuning    bool    `json:"allow_fine_tuning"`
		Organization       string  `json:"organization"`
		Group              *string `json:"group"`
		IsBlocking         bool    `json:"is_blocking"`
	}
	type card struct {
		ID          string       `json:"id"`
		Object      string       `json:"object"`
		Created     int64        `json:"created"`
		OwnedBy     string       `json:"owned_by"`
		Root        string       `json:"root"`
		Parent      *string      `json:"parent"`
		MaxModelLen int          `json:"max_model_len"`
		Permission  []permission `json:"permission"`
	}
	writeJSON(w, http.StatusOK, struct {
		Object string `json:"object"`
		Data   []card `json:"data"`
	}{"list", []card{{
		ID: s.cfg.servedName(), Object: "model", Created: created, OwnedBy: "vllm",
		Root: s.cfg.Model, MaxModelLen: s.cfg.MaxModelLen,
		Permission: []permission{{
			ID: "modelperm-" + permID, Object: "model_permission", Created: created,
			AllowSampling: true, AllowLogprobs: true, AllowView: true, Organization: "*",
		}},
	}}})
}

func (s *Server) handleMetrics(w http.ResponseWriter, r *http.Request) {
	var g gauges
	g.running, g.waiting = s.running.Load(), s.waiting.Load()
	if s.cache != nil {
		g.cacheQueries, g.cacheHits, g.cacheBlocks = s.cache.stats()
		g.cacheBlocks0 = s.cfg.CacheBlocks
	}
	var b bytes.Buffer
	if err := s.met.write(&b, s.cfg.servedName(), g); err != nil {
		s.writeError(w, http.StatusInternalServerError, "InternalServerError", err.Error())
		return
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	w.Write(hideMetrics(b.Bytes(), faultArgs(s.cfg.Faults, FaultHideMetric)))
}

// tokenizeRequest is the body of POST /tokenize: a prompt, or chat messages.
type tokenizeRequest struct {
	Model               string        `json:"model"`
	Prompt              *string       `json:"prompt"`
	Messages            []chatMessage `json:"messages"`
	AddSpecialTokens    *bool         `json:"add_special_tokens"`
	AddGenerationPrompt *bool         `json:"add_generation_prompt"`
	ReturnTokenStrs     bool          `json:"return_token_strs"`
}

func (s *Server) handleTokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if !s.readJSON(w, r, &req, knownTokenizeFields) || !s.checkModel(w, req.Model) {
		return
	}
	var ids []int
	switch {
	case req.Prompt != nil && req.Messages == nil:
		ids = s.tok.encode(*req.Prompt, boolOr(req.AddSpecialTokens, true))
	case req.Messages != nil && req.Prompt == nil && s.tokenizesMessages():
		text, err := chatPrompt(req.Messages, boolOr(req.AddGenerationPrompt, true))
		if err != nil {
			s.writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
			return
		}
		ids = s.tok.encode(text, boolOr(req.AddSpecialTokens, false))
	default:
		s.writeError(w, http.StatusBadRequest, "BadRequestError", "either prompt or messages must be given, not both")
		return
	}
	var strs []string
	if req.ReturnTokenStrs {
		strs, _ = s.tok.pieces(ids)
	}
	writeJSON(w, http.StatusOK, struct {
		Count       int      `json:"count"`
		MaxModelLen int      `json:"max_model_len"`
		Tokens      []int    `json:"tokens"`
		TokenStrs   []string `json:"token_strs"`
	}{len(ids), s.cfg.MaxModelLen, ids, strs})
}

// tokenizesMessages reports whether /tokenize counts chat messages: not under the
// tokenize-prompt-only fault, where it answers 400 as SGLang's does.
func (s *Server) tokenizesMessages() bool {
	return !slices.ContainsFunc(s.cfg.Faults, func(f Fault) bool { return f.Kind == FaultTokenizePromptOnly })
}

func (s *Server) handleDetokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Tokens []int  `json:"tokens"`
	}
	if !s.readJSON(w, r, &req, map[string]bool{"model": true, "tokens": true}) || !s.checkModel(w, req.Model) {
		return
	}
	text, err := s.tok.decode(req.Tokens, false)
	if err != nil {
		s.writeError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	writeJSON(w, http.StatusOK, struct {
		Prompt string `json:"prompt"`
	}{text})
}

// readJSON decodes the request body into v, warning about fields outside known as vLLM does,
// and answers 400 when the body is not valid JSON of the right shape.
func (s *Server) readJSON(w http.ResponseWriter, r *http.Request, v any, known map[string]bool) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		s.writeError(w, http.StatusBadRequest, "BadRequestError", "reading the request body: "+err.Error())
		return false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		s.writeError(w, http.StatusBadRequest, "BadRequestError", "the request body is not a JSON object: "+err.Error())
		return false
	}
	s.warnUnknown(fields, known)
	if err := json.Unmarshal(body, v); err != nil {
		s.writeError(w, http.StatusBadRequest, "BadRequestError", "invalid request: "+err.Error())
		return false
	}
	return true
}

// warnUnknown logs the fields vLLM would ignore.
func (s *Server) warnUnknown(fields map[string]json.RawMessage, known map[string]bool) {
	var extra []string
	for k := range fields {
		if !known[k] {
			extra = append(extra, "'"+k+"'")
		}
	}
	if len(extra) > 0 {
		slices.Sort(extra)
		s.logf("WARNING", "protocol", "The following fields were present in the request but ignored: {%s}", strings.Join(extra, ", "))
	}
}

// checkModel answers 404 when model names another model; an empty model is the served one.
func (s *Server) checkModel(w http.ResponseWriter, model string) bool {
	if model == "" || model == s.cfg.servedName() {
		return true
	}
	s.writeError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", model))
	return false
}

// writeError writes an error in the configured vLLM shape.
func (s *Server) writeError(w http.ResponseWriter, status int, typ, msg string) {
	if s.cfg.ErrorFormat == "nested" {
		writeJSON(w, status, nestedError{Error: errorInfo{Message: msg, Type: typ, Code: status}})
		return
	}
	writeJSON(w, status, flatError{Object: "error", Message: msg, Type: typ, Code: status})
}

type flatError struct {
	Object  string  `json:"object"`
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

type errorInfo struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    int     `json:"code"`
}

type nestedError struct {
	Error errorInfo `json:"error"`
}

// streamError returns the in-band error event vLLM sends inside a stream, serialised the way
// Python's json.dumps does it (", " and ": " separators, non-ASCII escaped).
func (s *Server) streamError(status int, typ, msg string) []byte {
	inner := `"message": ` + pyQuote(msg) + `, "type": ` + pyQuote(typ) + `, "param": null, "code": ` + strconv.Itoa(status)
	if s.cfg.ErrorFormat != "nested" {
		inner = `"object": "error", ` + inner
	}
	return []byte(`{"error": {` + inner + `}}`)
}

// writeJSON writes v as compact JSON, without Go's HTML escaping (Python's json does not do it).
func writeJSON(w http.ResponseWriter, status int, v any) {
	b := marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(status)
	w.Write(b)
}

// marshal encodes v as compact JSON without HTML escaping and without a trailing newline.
func marshal(v any) []byte {
	return new(jsonBuffer).encode(v)
}

// jsonBuffer encodes values as marshal does, reusing its buffer from one call to the next. The
// zero value is ready to use.
type jsonBuffer struct {
	buf bytes.Buffer
	enc *json.Encoder // encodes into buf, created on first use
}

// encode encodes v as marshal describes; the result is valid until the next call.
func (j *jsonBuffer) encode(v any) []byte {
	if j.enc == nil {
		j.enc = json.NewEncoder(&j.buf)
		j.enc.SetEscapeHTML(false)
	}
	j.buf.Reset()
	if err := j.enc.Encode(v); err != nil {
		panic("sim: encoding a response: " + err.Error())
	}
	return bytes.TrimSuffix(j.buf.Bytes(), []byte("\n"))
}

// pyQuote quotes s as a JSON string the way Python's json.dumps does by default (ASCII only).
func pyQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r > 0x7f && r < 0x10000:
			fmt.Fprintf(&b, `\u%04x`, r)
		case r >= 0x10000:
			r -= 0x10000
			fmt.Fprintf(&b, `\u%04x\u%04x`, 0xd800+(r>>10), 0xdc00+(r&0x3ff))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// statusWriter remembers the status for the access log and passes Flush through.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}
