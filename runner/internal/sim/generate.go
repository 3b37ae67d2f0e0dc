package sim

import (
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// genRequest is the part of a completions or chat request body the simulator reads.
type genRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	MinTokens           int             `json:"min_tokens"`
	IgnoreEOS           bool            `json:"ignore_eos"`
	Stream              bool            `json:"stream"`
	StreamOptions       *streamOptions  `json:"stream_options"`
	Seed                *int64          `json:"seed"`
	N                   *int            `json:"n"`
	Echo                bool            `json:"echo"`
	ReturnTokenIDs      bool            `json:"return_token_ids"`
	AddSpecialTokens    *bool           `json:"add_special_tokens"`
	AddGenerationPrompt *bool           `json:"add_generation_prompt"`
}

type streamOptions struct {
	IncludeUsage         *bool `json:"include_usage"`
	ContinuousUsageStats *bool `json:"continuous_usage_stats"`
}

// chatMessage is one message of a chat request; content is a string or a list of parts.
type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// Request fields the simulator knows, by endpoint: sampling parameters it accepts and ignores
// are listed too, so that only truly unknown fields draw vLLM's warning.
var (
	commonFields = []string{"model", "max_tokens", "min_tokens", "ignore_eos", "stream", "stream_options",
		"seed", "n", "return_token_ids", "add_special_tokens", "temperature", "top_p", "top_k", "min_p",
		"stop", "stop_token_ids", "presence_penalty", "frequency_penalty", "repetition_penalty",
		"logprobs", "user", "logit_bias", "skip_special_tokens", "spaces_between_special_tokens",
		"include_stop_str_in_output", "priority", "request_id", "best_of", "use_beam_search",
		"length_penalty", "truncate_prompt_tokens", "response_format", "guided_json", "guided_regex",
		"structured_outputs", "cache_salt", "kv_transfer_params", "vllm_xargs"}
	knownCompletionFields = fieldSet(commonFields, "prompt", "echo", "suffix", "prompt_logprobs")
	knownChatFields       = fieldSet(commonFields, "messages", "max_completion_tokens", "add_generation_prompt",
		"continue_final_message", "top_logprobs", "tools", "tool_choice", "parallel_tool_calls",
		"chat_template", "chat_template_kwargs", "documents", "echo", "modalities", "reasoning_effort",
		"include_reasoning", "metadata", "store", "service_tier", "prediction")
	knownTokenizeFields = fieldSet(nil, "model", "prompt", "messages", "add_special_tokens",
		"add_generation_prompt", "continue_final_message", "return_token_strs", "chat_template",
		"chat_template_kwargs", "tools", "mm_processor_kwargs")
)

func fieldSet(base []string, more ...string) map[string]bool {
	m := make(map[string]bool, len(base)+len(more))
	for _, f := range append(slices.Clone(base), more...) {
		m[f] = true
	}
	return m
}

// requestCtx is one generation request as read and checked.
type requestCtx struct {
	chat           bool
	req            genRequest
	promptIDs      []int
	maxTokens      int
	includeUsage   bool
	continuous     bool
	stamp          bool
	faults         []Fault
	seq            uint64
	id             string
	created        int64
	arrival        time.Time
	returnTokenIDs bool
	leaving        []func() // run once by leave
	left           bool

	buf []byte     // the event being written
	enc jsonBuffer // encodes the chunks, so that a long stream does not allocate a buffer per event
}

// handleGenerate serves POST /v1/completions (chat false) and /v1/chat/completions (chat true).
func (s *Server) handleGenerate(w http.ResponseWriter, r *http.Request, chat bool) {
	rc := &requestCtx{chat: chat, arrival: time.Now()}
	faults, err := ParseFaults(r.Header.Get("X-Sim-Fault"))
	if err != nil {
		s.writeError(w, http.StatusBadRequest, "BadRequestError", "X-Sim-Fault: "+err.Error())
		return
	}
	rc.faults = append(slices.Clone(s.cfg.Faults), faults...)
	rc.stamp = s.cfg.Stamp || isTrue(r.Header.Get("X-Sim-Stamp"))

	if !s.readRequest(w, r, rc) {
		return
	}
	if s.dead.Load() {
		s.writeError(w, http.StatusInternalServerError, "InternalServerError",
			"EngineCore encountered an issue. See stack trace (above) for the root cause.")
		return
	}

	seq, hex := s.next()
	rc.seq = seq
	base := hex
	if h := r.Header.Get("X-Request-Id"); h != "" {
		base = h
	}
	if chat {
		rc.id = "chatcmpl-" + base
	} else {
		rc.id = "cmpl-" + base
	}
	rc.created = s.now().Unix()

	s.inFlight.add(1)
	rc.leaving = append(rc.leaving, func() { s.inFlight.add(-1) })
	defer rc.leave()
	textSeed := s.cfg.Seed ^ rc.seq*0x9e3779b97f4a7c15
	if rc.req.Seed != nil {
		textSeed = uint64(*rc.req.Seed)
	}
	in := planInput{
		promptTokens: len(rc.promptIDs),
		maxTokens:    rc.maxTokens,
		minTokens:    rc.req.MinTokens,
		ignoreEOS:    rc.req.IgnoreEOS,
		textSeed:     textSeed,
		jitterSeed:   s.cfg.Seed ^ rc.seq*0xbf58476d1ce4e5b9,
	}
	if s.eng != nil {
		s.generateBatched(w, r, rc, in)
		return
	}

	// Without batching, every request is timed on its own by the single-stream model, once it
	// has one of MaxConcurrency slots.
	s.waiting.add(1)
	admitted := s.acquire(r)
	s.waiting.add(-1)
	if !admitted {
		s.met.finished(requestTimes{finish: "abort"})
		return
	}
	s.running.add(1)
	rc.leaving = append(rc.leaving, func() {
		s.running.add(-1)
		s.release()
	})
	start := time.Now()
	if s.cache != nil {
		in.cachedTokens = s.cache.lookup(rc.promptIDs)
	}
	s.met.addPrompt(len(rc.promptIDs))
	p := s.makePlan(in)
	if rc.req.Stream {
		s.stream(w, r, rc, &p, nil, start)
	} else {
		s.respond(w, r, rc, &p, nil, start)
	}
}

// generateBatched serves a request through the batching engine: it waits in the engine's queue,
// and the engine's steps time its tokens.
func (s *Server) generateBatched(w http.ResponseWriter, r *http.Request, rc *requestCtx, in planInput) {
	p := s.makeOutput(in)
	// The queue delay draws first from the request's jitter stream, as in the single-stream model.
	queue := jitter(s.cfg.Jitter, rand.New(rand.NewPCG(in.jitterSeed, 0x5a17)), s.cfg.QueueDelay)
	q := &seq{id: rc.id, p: &p, prompt: rc.promptIDs, notify: make(chan struct{}, 1)}
	s.waiting.add(1)
	s.eng.submit(q, queue)
	rc.leaving = append(rc.leaving, func() { s.eng.leave(q) })
	if rc.req.Stream {
		s.stream(w, r, rc, &p, q, q.start)
	} else {
		s.respond(w, r, rc, &p, q, q.start)
	}
}

// leave takes the request off the in-flight count, and out of the engine, once. It runs just
// before the response's last bytes are written, so that a client that sends its next request as
// soon as one ends never finds its last one still counted.
func (rc *requestCtx) leave() {
	if rc.left {
		return
	}
	rc.left = true
	for _, f := range rc.leaving {
		f()
	}
}

// readRequest reads and checks the body, applying the ignore and refuse faults; it answers the
// request itself and returns false when it must not go on.
func (s *Server) readRequest(w http.ResponseWriter, r *http.Request, rc *requestCtx) bool {
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if err != nil {
		s.writeError(w, http.StatusBadRequest, "BadRequestError", "reading the request body: "+err.Error())
		return false
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil || fields == nil {
		msg := "the request body is not a JSON object"
		if err != nil {
			msg += ": " + err.Error()
		}
		s.writeError(w, http.StatusBadRequest, "BadRequestError", msg)
		return false
	}
	for _, f := range rc.faults {
		if f.Kind == FaultIgnore {
			dropOption(fields, f.Arg)
		}
	}
	for _, f := range rc.faults {
		if f.Kind == FaultRefuse && hasOption(fields, f.Arg) {
			s.writeError(w, http.StatusBadRequest, "BadRequestError",
				fmt.Sprintf("Unrecognized request argument supplied: %s", f.Arg))
			return false
		}
	}
	for _, f := range rc.faults {
		if f.Kind == FaultStatus {
			code, _ := strconv.Atoi(f.Arg)
			typ := strings.ReplaceAll(http.StatusText(code), " ", "") + "Error"
			if code >= 500 {
				typ = "InternalServerError"
			}
			if code == http.StatusServiceUnavailable {
				typ = "ServiceUnavailableError"
			}
			s.writeError(w, code, typ, fmt.Sprintf("injected fault: HTTP %d before the stream", code))
			return false
		}
	}
	if rc.chat {
		s.warnUnknown(fields, knownChatFields)
	} else {
		s.warnUnknown(fields, knownCompletionFields)
	}
	clean := marshal(fields)
	if err := json.Unmarshal(clean, &rc.req); err != nil {
		s.writeError(w, http.StatusBadRequest, "BadRequestError", "invalid request: "+err.Error())
		return false
	}
	req := &rc.req
	if !s.checkModel(w, req.Model) {
		return false
	}
	bad := func(format string, args ...any) bool {
		s.writeError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf(format, args...))
		return false
	}
	if req.N != nil && *req.N != 1 {
		return bad("n=%d is not supported by the simulator; only n=1 is", *req.N)
	}
	if req.Echo {
		return bad("echo is not supported by the simulator")
	}
	if req.StreamOptions != nil && !req.Stream {
		return bad("Stream options can only be defined when `stream=True`.")
	}
	if req.StreamOptions != nil {
		rc.includeUsage = boolOr(req.StreamOptions.IncludeUsage, true)
		rc.continuous = rc.includeUsage && boolOr(req.StreamOptions.ContinuousUsageStats, false)
	}
	rc.returnTokenIDs = req.ReturnTokenIDs

	if rc.chat {
		if len(req.Messages) == 0 {
			return bad("messages must be a non-empty list")
		}
		text, err := chatPrompt(req.Messages, boolOr(req.AddGenerationPrompt, true))
		if err != nil {
			return bad("%v", err)
		}
		rc.promptIDs = s.tok.encode(text, boolOr(req.AddSpecialTokens, false))
	} else {
		ids, err := s.completionPrompt(req.Prompt, boolOr(req.AddSpecialTokens, true))
		if err != nil {
			return bad("%v", err)
		}
		rc.promptIDs = ids
	}

	n := len(rc.promptIDs)
	limit := req.MaxTokens
	if rc.chat && req.MaxCompletionTokens != nil {
		limit = req.MaxCompletionTokens
	}
	switch {
	case limit != nil:
		rc.maxTokens = *limit
	case rc.chat:
		rc.maxTokens = s.cfg.MaxModelLen - n
	default:
		rc.maxTokens = 16 // vLLM's default for the completions API
	}
	if n >= s.cfg.MaxModelLen {
		return bad("This model's maximum context length is %d tokens, but the prompt has %d tokens. Please shorten the prompt.",
			s.cfg.MaxModelLen, n)
	}
	if n+rc.maxTokens > s.cfg.MaxModelLen {
		return bad("This model's maximum context length is %d tokens. However, you requested %d tokens (%d in the prompt, %d in the completion). Please reduce the length of the prompt or completion.",
			s.cfg.MaxModelLen, n+rc.maxTokens, n, rc.maxTokens)
	}
	if rc.maxTokens < 1 {
		return bad("max_tokens must be at least 1, got %d.", rc.maxTokens)
	}
	if req.MinTokens < 0 || req.MinTokens > rc.maxTokens {
		return bad("min_tokens must be in [0, max_tokens=%d], got %d.", rc.maxTokens, req.MinTokens)
	}
	return true
}

// completionPrompt reads a completions prompt: a string, a list of one string, a list of token
// ids, or a list of one list of token ids.
func (s *Server) completionPrompt(raw json.RawMessage, addSpecial bool) ([]int, error) {
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		return s.tok.encode(text, addSpecial), nil
	}
	var texts []string
	if err := json.Unmarshal(raw, &texts); err == nil {
		if len(texts) != 1 {
			return nil, fmt.Errorf("the simulator serves one prompt per request, got %d", len(texts))
		}
		return s.tok.encode(texts[0], addSpecial), nil
	}
	var ids []int
	if err := json.Unmarshal(raw, &ids); err == nil && len(ids) > 0 {
		return ids, s.checkIDs(ids)
	}
	var lists [][]int
	if err := json.Unmarshal(raw, &lists); err == nil && len(lists) > 0 {
		if len(lists) != 1 {
			return nil, fmt.Errorf("the simulator serves one prompt per request, got %d", len(lists))
		}
		return lists[0], s.checkIDs(lists[0])
	}
	if len(raw) == 0 || string(raw) == "null" {
		return nil, fmt.Errorf("prompt is required")
	}
	return nil, fmt.Errorf("prompt must be a string, a list of strings or a list of token ids")
}

func (s *Server) checkIDs(ids []int) error {
	if len(ids) == 0 {
		return fmt.Errorf("prompt has no tokens")
	}
	for _, id := range ids {
		if _, err := s.tok.piece(id); err != nil {
			return fmt.Errorf("prompt: %w", err)
		}
	}
	return nil
}

// chatPrompt renders messages with the simulator's own chat template:
// <s><|role|>\ncontent<|end|>\n ... and, with addGenerationPrompt, <|assistant|>\n.
func chatPrompt(msgs []chatMessage, addGenerationPrompt bool) (string, error) {
	var b strings.Builder
	b.WriteString(specialTokens[bosID])
	for i, m := range msgs {
		if m.Role == "" {
			return "", fmt.Errorf("messages[%d]: role is missing", i)
		}
		text, err := messageText(m.Content)
		if err != nil {
			return "", fmt.Errorf("messages[%d]: %w", i, err)
		}
		b.WriteString("<|" + m.Role + "|>\n" + text + specialTokens[6] + "\n")
	}
	if addGenerationPrompt {
		b.WriteString(specialTokens[5] + "\n")
	}
	return b.String(), nil
}

// messageText returns a message's text: its content string, or its text parts joined by
// newlines.
func messageText(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or a list of parts")
	}
	var texts []string
	for _, p := range parts {
		if p.Type != "text" {
			return "", fmt.Errorf("content part type %q is not supported by the simulator", p.Type)
		}
		texts = append(texts, p.Text)
	}
	return strings.Join(texts, "\n"), nil
}

// hasOption reports whether the request uses option name: a top-level field that is present and
// not false or null, or include_usage / continuous_usage_stats inside stream_options.
func hasOption(fields map[string]json.RawMessage, name string) bool {
	if name == "include_usage" || name == "continuous_usage_stats" {
		var so map[string]json.RawMessage
		if json.Unmarshal(fields["stream_options"], &so) != nil {
			return false
		}
		return truthy(so[name])
	}
	return truthy(fields[name])
}

// dropOption removes option name from the request, as a server that does not know it would.
func dropOption(fields map[string]json.RawMessage, name string) {
	if name == "include_usage" || name == "continuous_usage_stats" {
		var so map[string]json.RawMessage
		if json.Unmarshal(fields["stream_options"], &so) != nil || so == nil {
			return
		}
		delete(so, name)
		fields["stream_options"] = marshal(so)
		return
	}
	delete(fields, name)
}

func truthy(raw json.RawMessage) bool {
	s := strings.TrimSpace(string(raw))
	return s != "" && s != "null" && s != "false"
}

func isTrue(s string) bool {
	b, err := strconv.ParseBool(strings.TrimSpace(s))
	return err == nil && b
}

// acquire waits for a generation slot; false when the client left or the server closed first.
func (s *Server) acquire(r *http.Request) bool {
	if s.slots == nil {
		return true
	}
	select {
	case s.slots <- struct{}{}:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closed:
		return false
	}
}

func (s *Server) release() {
	if s.slots != nil {
		<-s.slots
	}
}

// sleepUntil waits until t; false when the client left or the server closed first.
func (s *Server) sleepUntil(r *http.Request, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		select {
		case <-r.Context().Done():
			return false
		case <-s.closed:
			return false
		default:
			return true
		}
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-r.Context().Done():
		return false
	case <-s.closed:
		return false
	}
}

// abort cuts the connection: the client sees the stream end without a proper HTTP ending.
func abort() { panic(http.ErrAbortHandler) }

// endAbruptly carries out a crash, hang or abort fault, the faults that end a response the same
// way streamed or not: none of them returns. It does nothing for the other kinds, which the
// caller carries out.
func (s *Server) endAbruptly(r *http.Request, kind FaultKind) {
	switch kind {
	case FaultCrash:
		s.crash()
	case FaultHang:
		s.hang(r)
	case FaultAbort:
		abort()
	}
}

// crash simulates the engine process dying.
func (s *Server) crash() {
	s.logf("ERROR", "core_client", "Engine core proc died unexpectedly (injected crash fault), shutting down the API server.")
	if s.cfg.Crash != nil {
		s.cfg.Crash()
	}
	s.dead.Store(true)
	abort()
}

// hang blocks until the client leaves or the server closes, then cuts the connection.
func (s *Server) hang(r *http.Request) {
	select {
	case <-r.Context().Done():
	case <-s.closed:
	}
	abort()
}

// finishTimes records a finished request's engine-side times.
func (s *Server) finishTimes(rc *requestCtx, p *plan, start time.Time, firstText, end time.Time) {
	t := requestTimes{
		ttft:      firstText.Sub(rc.arrival),
		e2e:       end.Sub(rc.arrival),
		queue:     start.Sub(rc.arrival) + p.queue,
		prefill:   p.tokenAt[0] - p.queue,
		decode:    p.tokenAt[len(p.ids)-1] - p.tokenAt[0],
		finish:    p.finish,
		generated: len(p.ids),
	}
	for k := 1; k < len(p.ids); k++ {
		t.itls = append(t.itls, p.tokenAt[k]-p.tokenAt[k-1])
	}
	s.met.finished(t)
}
