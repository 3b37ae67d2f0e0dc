package sim

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"
)

// Chunk and response bodies, field for field and in vLLM's order. vLLM serialises completions
// chunks with every field (nulls included) and chat chunks with only the fields it set, so the
// two APIs differ in which null keys appear; these types reproduce that.

type usageFull struct {
	PromptTokens        int            `json:"prompt_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	PromptTokensDetails *tokensDetails `json:"prompt_tokens_details"`
}

type usageSet struct {
	PromptTokens        int            `json:"prompt_tokens"`
	TotalTokens         int            `json:"total_tokens"`
	CompletionTokens    int            `json:"completion_tokens"`
	PromptTokensDetails *tokensDetails `json:"prompt_tokens_details,omitempty"`
}

type tokensDetails struct {
	CachedTokens int `json:"cached_tokens"`
}

// envelope is what every chunk and response body opens with, in vLLM's order. Embedding it
// places its fields first in the JSON, as encoding/json writes an embedded struct's fields where
// the struct stands.
type envelope[C any] struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []C    `json:"choices"`
}

// newEnvelope opens a body of the given object kind for rc's request.
func newEnvelope[C any](rc *requestCtx, object, model string, choices []C) envelope[C] {
	return envelope[C]{ID: rc.id, Object: object, Created: rc.created, Model: model, Choices: choices}
}

type cmplChunk struct {
	envelope[cmplChoice]
	Usage *usageFull `json:"usage"`
}

type cmplChoice struct {
	Index          int       `json:"index"`
	Text           string    `json:"text"`
	Logprobs       *struct{} `json:"logprobs"`
	FinishReason   *string   `json:"finish_reason"`
	StopReason     *string   `json:"stop_reason"`
	PromptTokenIDs []int     `json:"prompt_token_ids"`
	TokenIDs       []int     `json:"token_ids"`
}

type cmplUsageChunk struct {
	envelope[struct{}]
	Usage usageSet `json:"usage"`
}

type chatChunk struct {
	envelope[chatChoice]
	Usage          *usageSet       `json:"usage,omitempty"`
	PromptTokenIDs json.RawMessage `json:"prompt_token_ids,omitempty"`
}

type chatChoice struct {
	Index        int             `json:"index"`
	Delta        chatDelta       `json:"delta"`
	Logprobs     *struct{}       `json:"logprobs"`
	FinishReason *string         `json:"finish_reason"`
	StopReason   json.RawMessage `json:"stop_reason,omitempty"`
	TokenIDs     json.RawMessage `json:"token_ids,omitempty"`
}

type chatDelta struct {
	Role    string  `json:"role,omitempty"`
	Content *string `json:"content,omitempty"`
}

// response is what both non-streamed bodies share: the envelope, then the service tier, the
// system fingerprint (both always null here) and the usage.
type response[C any] struct {
	envelope[C]
	ServiceTier       *string   `json:"service_tier"`
	SystemFingerprint *string   `json:"system_fingerprint"`
	Usage             usageFull `json:"usage"`
}

type cmplResponse struct {
	response[cmplRespChoice]
	KVTransferParams *struct{} `json:"kv_transfer_params"`
}

type cmplRespChoice struct {
	Index int    `json:"index"`
	Text  string `json:"text"`
	outcome
	PromptLogprobs *struct{} `json:"prompt_logprobs"`
	PromptTokenIDs []int     `json:"prompt_token_ids"`
}

// outcome is how a non-streamed choice's generation ended, the same in both APIs and written
// right after the choice's content.
type outcome struct {
	Logprobs     *struct{} `json:"logprobs"`
	FinishReason string    `json:"finish_reason"`
	StopReason   *string   `json:"stop_reason"`
	TokenIDs     []int     `json:"token_ids"`
}

type chatResponse struct {
	response[chatRespChoice]
	PromptLogprobs   *struct{} `json:"prompt_logprobs"`
	PromptTokenIDs   []int     `json:"prompt_token_ids"`
	KVTransferParams *struct{} `json:"kv_transfer_params"`
}

type chatRespChoice struct {
	Index   int            `json:"index"`
	Message chatMessageOut `json:"message"`
	outcome
}

type chatMessageOut struct {
	Role             string     `json:"role"`
	Content          string     `json:"content"`
	Refusal          *string    `json:"refusal"`
	Annotations      *struct{}  `json:"annotations"`
	Audio            *struct{}  `json:"audio"`
	FunctionCall     *struct{}  `json:"function_call"`
	ToolCalls        []struct{} `json:"tool_calls"`
	ReasoningContent *string    `json:"reasoning_content"`
}

// stamp is the ground-truth field added to streamed chunks on request.
type stamp struct {
	SentNS           int64 `json:"sent_ns"`           // wall clock, Unix nanoseconds, just before the write
	Event            int   `json:"event"`             // the event's index in the response
	Tokens           int   `json:"tokens"`            // new tokens this event carries
	CompletionTokens int   `json:"completion_tokens"` // tokens generated so far
}

// item kinds of a stream.
const (
	itemRole = iota
	itemText
	itemUsage
	itemDone
)

type item struct {
	kind int
	due  *genEvent // the event whose time the item goes out with
	ev   *genEvent // the event it carries; nil for role, usage and [DONE]
	last bool
}

// items lays out every event of a streamed response in order.
func (rc *requestCtx) items(p *plan) []item {
	its := make([]item, 0, len(p.events)+3)
	first, last := &p.events[0], &p.events[len(p.events)-1]
	if rc.chat {
		its = append(its, item{kind: itemRole, due: first})
	}
	for i := range p.events {
		its = append(its, item{kind: itemText, due: &p.events[i], ev: &p.events[i], last: i == len(p.events)-1})
	}
	if rc.includeUsage {
		its = append(its, item{kind: itemUsage, due: last})
	}
	return append(its, item{kind: itemDone, due: last})
}

// due waits until event ev may be sent, by the single-stream model's plan (q nil) or by the
// batching engine; false when the client left or the server closed first.
func (s *Server) due(r *http.Request, p *plan, q *seq, start time.Time, ev *genEvent) bool {
	if q == nil {
		return s.sleepUntil(r, start.Add(ev.at))
	}
	return s.await(r, q, ev)
}

// stream writes a streamed response, event by event, each at its planned time.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, rc *requestCtx, p *plan, q *seq, start time.Time) {
	flusher, _ := w.(http.Flusher)
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	if flusher != nil {
		flusher.Flush()
	}
	var firstText time.Time
	inserted := false
	for i, it := range rc.items(p) {
		if !s.due(r, p, q, start, it.due) {
			s.met.finished(requestTimes{finish: "abort", generated: tokensBefore(p, it)})
			abort()
		}
		// The batching engine caches a prompt when its prefill ends.
		if !inserted && s.cache != nil && q == nil {
			s.cache.insert(rc.promptIDs)
			inserted = true
		}
		malformed := false
		for _, f := range rc.faults {
			if !f.Kind.inStream() || f.At != i {
				continue
			}
			s.endAbruptly(r, f.Kind)
			switch f.Kind {
			case FaultTruncate:
				return
			case FaultError, FaultErrorEOF:
				s.write(w, flusher, rc, i, 0, tokensBefore(p, it), s.streamError(400, "BadRequestError",
					"injected fault: generation failed in the middle of the stream"), false)
				if f.Kind == FaultError {
					rc.leave()
					s.writeRaw(w, flusher, []byte("data: [DONE]\n\n"))
				}
				return
			case FaultMalformed:
				malformed = true
			}
		}
		switch it.kind {
		case itemDone:
			rc.leave()
			s.writeRaw(w, flusher, []byte("data: [DONE]\n\n"))
		default:
			tokens := 0
			if it.ev != nil {
				tokens = len(it.ev.ids)
			}
			// The first token's time is taken before its event is written, as vLLM's engine
			// stamps it before the API server sends it: the server's TTFT leaves out the
			// write, which is the client's side of the gap.
			if it.kind == itemText && firstText.IsZero() && it.ev.text != "" {
				firstText = time.Now()
			}
			if !s.write(w, flusher, rc, i, tokens, tokensBefore(p, it), s.chunk(rc, p, it), malformed) {
				s.met.finished(requestTimes{finish: "abort", generated: tokensBefore(p, it)})
				return
			}
		}
	}
	if firstText.IsZero() {
		firstText = time.Now()
	}
	s.finishTimes(rc, p, start, firstText, time.Now())
}

// tokensBefore returns the completion tokens generated when it is sent.
func tokensBefore(p *plan, it item) int {
	switch {
	case it.ev != nil:
		return it.ev.tokens
	case it.kind == itemRole:
		return 0
	}
	return len(p.ids)
}

// write sends one data event, stamped when asked; malformed cuts its JSON short instead. The
// event is built in the request's own buffer, so that a long stream does not allocate per event.
func (s *Server) write(w http.ResponseWriter, f http.Flusher, rc *requestCtx, index, tokens, total int, payload []byte, malformed bool) bool {
	buf := append(rc.buf[:0], "data: "...)
	switch {
	case malformed:
		buf = append(buf, payload[:len(payload)/2]...)
	case rc.stamp:
		buf = append(buf, payload[:len(payload)-1]...)
		buf = appendStamp(buf, stamp{SentNS: s.now().UnixNano(), Event: index, Tokens: tokens, CompletionTokens: total})
		buf = append(buf, '}')
	default:
		buf = append(buf, payload...)
	}
	buf = append(buf, "\n\n"...)
	rc.buf = buf
	return s.writeRaw(w, f, buf)
}

// appendStamp appends `,"sim":` and st as JSON, byte for byte what encoding/json writes.
func appendStamp(b []byte, st stamp) []byte {
	b = append(b, `,"sim":{"sent_ns":`...)
	b = strconv.AppendInt(b, st.SentNS, 10)
	b = append(b, `,"event":`...)
	b = strconv.AppendInt(b, int64(st.Event), 10)
	b = append(b, `,"tokens":`...)
	b = strconv.AppendInt(b, int64(st.Tokens), 10)
	b = append(b, `,"completion_tokens":`...)
	b = strconv.AppendInt(b, int64(st.CompletionTokens), 10)
	return append(b, '}')
}

func (s *Server) writeRaw(w http.ResponseWriter, f http.Flusher, b []byte) bool {
	if _, err := w.Write(b); err != nil {
		return false
	}
	if f != nil {
		f.Flush()
	}
	return true
}

// chunk encodes one stream event as vLLM would.
func (s *Server) chunk(rc *requestCtx, p *plan, it item) []byte {
	model := s.cfg.servedName()
	prompt := len(rc.promptIDs)
	completion := tokensBefore(p, it)
	var finish *string
	if it.last {
		finish = &p.finish
	}
	if !rc.chat {
		if it.kind == itemUsage {
			return marshal(cmplUsageChunk{envelope: newEnvelope(rc, "text_completion", model, []struct{}{}),
				Usage: s.finalUsage(rc, p)})
		}
		ch := cmplChoice{Text: it.ev.text, FinishReason: finish}
		if rc.returnTokenIDs {
			ch.TokenIDs = it.ev.ids
			if it.ev == &p.events[0] {
				ch.PromptTokenIDs = rc.promptIDs
			}
		}
		c := cmplChunk{envelope: newEnvelope(rc, "text_completion", model, []cmplChoice{ch})}
		if rc.continuous {
			c.Usage = &usageFull{PromptTokens: prompt, TotalTokens: prompt + completion, CompletionTokens: completion}
		}
		return rc.enc.encode(c)
	}
	c := chatChunk{envelope: newEnvelope[chatChoice](rc, "chat.completion.chunk", model, nil)}
	if rc.continuous && it.kind != itemUsage {
		c.Usage = &usageSet{PromptTokens: prompt, TotalTokens: prompt + completion, CompletionTokens: completion}
	}
	switch it.kind {
	case itemRole:
		empty := ""
		c.Choices = []chatChoice{{Delta: chatDelta{Role: "assistant", Content: &empty}}}
		c.PromptTokenIDs = json.RawMessage("null")
		if rc.returnTokenIDs {
			c.PromptTokenIDs = marshal(rc.promptIDs)
		}
	case itemUsage:
		c.Choices = []chatChoice{}
		u := s.finalUsage(rc, p)
		c.Usage = &u
	default:
		text := it.ev.text
		ch := chatChoice{Delta: chatDelta{Content: &text}, FinishReason: finish, TokenIDs: json.RawMessage("null")}
		if rc.returnTokenIDs {
			ch.TokenIDs = marshal(it.ev.ids)
		}
		if it.last {
			ch.StopReason = json.RawMessage("null")
		}
		c.Choices = []chatChoice{ch}
	}
	return rc.enc.encode(c)
}

// finalUsage is the usage of the final usage chunk.
func (s *Server) finalUsage(rc *requestCtx, p *plan) usageSet {
	u := usageSet{PromptTokens: len(rc.promptIDs), CompletionTokens: len(p.ids)}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if s.cfg.PromptTokensDetails {
		u.PromptTokensDetails = &tokensDetails{CachedTokens: p.cached}
	}
	return u
}

// respond writes a non-streamed response once the whole output is ready. Stream faults fire on
// its single event, whatever their index.
func (s *Server) respond(w http.ResponseWriter, r *http.Request, rc *requestCtx, p *plan, q *seq, start time.Time) {
	if !s.due(r, p, q, start, &p.events[len(p.events)-1]) {
		s.met.finished(requestTimes{finish: "abort"})
		abort()
	}
	if s.cache != nil && q == nil {
		s.cache.insert(rc.promptIDs)
	}
	body := s.responseBody(rc, p)
	for _, f := range rc.faults {
		s.endAbruptly(r, f.Kind)
		switch f.Kind {
		case FaultTruncate:
			// Promise the whole body, send half: the client sees the connection end early.
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Content-Length", strconv.Itoa(len(body)))
			w.WriteHeader(http.StatusOK)
			w.Write(body[:len(body)/2])
			return
		case FaultError, FaultErrorEOF:
			s.writeError(w, http.StatusInternalServerError, "InternalServerError",
				"injected fault: generation failed")
			return
		case FaultMalformed:
			body = body[:len(body)/2]
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(http.StatusOK)
	rc.leave()
	w.Write(body)
	now := time.Now()
	s.finishTimes(rc, p, start, now, now)
}

// responseBody encodes a non-streamed response as vLLM would.
func (s *Server) responseBody(rc *requestCtx, p *plan) []byte {
	text := s.textOf(p.ids)
	u := usageFull{PromptTokens: len(rc.promptIDs), CompletionTokens: len(p.ids)}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	if s.cfg.PromptTokensDetails {
		u.PromptTokensDetails = &tokensDetails{CachedTokens: p.cached}
	}
	end := outcome{FinishReason: p.finish}
	var promptIDs []int
	if rc.returnTokenIDs {
		end.TokenIDs, promptIDs = p.ids, rc.promptIDs
	}
	model := s.cfg.servedName()
	if !rc.chat {
		return marshal(cmplResponse{response: response[cmplRespChoice]{
			envelope: newEnvelope(rc, "text_completion", model, []cmplRespChoice{{
				Text: text, outcome: end, PromptTokenIDs: promptIDs,
			}}),
			Usage: u,
		}})
	}
	return marshal(chatResponse{response: response[chatRespChoice]{
		envelope: newEnvelope(rc, "chat.completion", model, []chatRespChoice{{
			Message: chatMessageOut{Role: "assistant", Content: text, ToolCalls: []struct{}{}},
			outcome: end,
		}}),
		Usage: u,
	}, PromptTokenIDs: promptIDs})
}
