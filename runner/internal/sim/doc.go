// Package sim is a simulated vLLM OpenAI-compatible server with an explicit latency model.
//
// A Server (an http.Handler built by New from a Config) answers /v1/completions and
// /v1/chat/completions, streamed or not, in vLLM's dialect: the same chunk shapes, key order and
// null keys, role and finish chunks, final and continuous usage, per-event token ids, and vLLM's
// error bodies. It also serves /health, /v1/models, /version, /tokenize, /detokenize, /metrics
// (vllm:* histograms and counters) and, in dev mode, /reset_prefix_cache.
//
// Text comes from a toy tokenizer (vocabulary words and single characters) and is generated
// deterministically from a seed. Token k of a request is ready at
//
//	queue delay + prefill per token × (prompt tokens not in the prefix cache) + decode per token × k
//
// after the request arrives, each delay scaled by a seeded jitter factor; an event is sent when its
// last token is ready, TokensPerEvent tokens at a time. A block-level LRU prefix cache makes a
// repeated prompt's prefill shorter.
//
// With MaxNumSeqs, DecodePerSeq or MaxNumBatchedTokens set, requests go through a batching engine
// instead, as vLLM V1's scheduler: one loop per server admits at most MaxNumSeqs requests from a
// first-in, first-out queue and runs steps that advance every running request by one token; a
// step's time grows with the decoding requests and with the prompt tokens it prefills (in chunks
// within MaxNumBatchedTokens), so TPOT rises with the batch and a new prompt stalls the others.
// Stats reports the scheduler's running, waiting and in-flight counts and their peaks.
//
// For tests of clients, each streamed chunk can carry its own send time (the "sim" field), and
// faults can be injected per server or per request: crash, hang, abort, truncate, in-band error,
// malformed JSON, an HTTP error status, and refused or ignored options. Boot plays vLLM's
// start-up, with a delay before the port opens and optional start-up failures.
package sim
