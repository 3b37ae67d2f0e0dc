package openai

import (
	"bytes"
)

// Drop names the option that Degrade removes.
type Drop string

// The rungs of the degradation ladder, in the order they are taken.
const (
	DropNone            Drop = ""
	DropReturnTokenIDs  Drop = "return_token_ids"       // first: the least common extension
	DropContinuousUsage Drop = "continuous_usage_stats" // then: per-chunk usage
	DropStreamOptions   Drop = "stream_options"         // last: the whole stream_options object
)

// Without returns o with the dropped option turned off.
func (o Options) Without(d Drop) Options {
	switch d {
	case DropReturnTokenIDs:
		o.ReturnTokenIDs = false
	case DropContinuousUsage:
		o.ContinuousUsage = false
	case DropStreamOptions:
		o.IncludeUsage, o.ContinuousUsage = false, false
	}
	return o
}

// unknownField holds phrases (lower case) with which servers and proxies reject a field they do
// not know: OpenAI ("Unrecognized request argument", "Unknown parameter"), pydantic models with
// extra="forbid" ("Extra inputs are not permitted"), serde-based servers ("unknown field").
var unknownField = [][]byte{
	[]byte("unrecognized request argument"),
	[]byte("unknown parameter"),
	[]byte("unknown field"),
	[]byte("extra inputs are not permitted"),
	[]byte("extra_forbidden"),
	[]byte("additional properties"),
	[]byte("unexpected keyword"),
	[]byte("unsupported parameter"),
}

// Degrade reads a rejected request's HTTP status and error body and says which option to drop
// before trying again, with the options that remain. It returns DropNone (and o unchanged) when
// the rejection is not about an option of o: the status is not 400 or 422, or the body neither
// names one of o's options nor reads like an unknown-field rejection.
//
// An error that names an option drops that option: "return_token_ids"; "continuous_usage_stats"
// (checked before "stream_options", since OpenAI names it "stream_options.continuous_usage_stats");
// "stream_options" or "include_usage" drops stream_options entirely. An unknown-field rejection
// that names none of them walks the ladder one rung per call: return_token_ids first, then
// continuous_usage_stats, then stream_options. A caller therefore retries at most three times.
func Degrade(status int, body []byte, o Options) (Options, Drop) {
	if status != 400 && status != 422 {
		return o, DropNone
	}
	msg := bytes.ToLower(body)
	usage := o.IncludeUsage || o.ContinuousUsage
	switch {
	case o.ReturnTokenIDs && bytes.Contains(msg, []byte("return_token_ids")):
		return o.Without(DropReturnTokenIDs), DropReturnTokenIDs
	case o.ContinuousUsage && bytes.Contains(msg, []byte("continuous_usage_stats")):
		return o.Without(DropContinuousUsage), DropContinuousUsage
	case usage && (bytes.Contains(msg, []byte("stream_options")) || bytes.Contains(msg, []byte("include_usage"))):
		return o.Without(DropStreamOptions), DropStreamOptions
	}
	generic := false
	for _, p := range unknownField {
		if bytes.Contains(msg, p) {
			generic = true
			break
		}
	}
	if !generic {
		return o, DropNone
	}
	switch {
	case o.ReturnTokenIDs:
		return o.Without(DropReturnTokenIDs), DropReturnTokenIDs
	case o.ContinuousUsage:
		return o.Without(DropContinuousUsage), DropContinuousUsage
	case usage:
		return o.Without(DropStreamOptions), DropStreamOptions
	}
	return o, DropNone
}
