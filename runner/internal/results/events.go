package results

import (
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// EventRow is one row of events.csv: one streamed event of one request.
type EventRow struct {
	RequestID string // RequestID(config id, seq) of the request it belongs to
	record.Event
}

// EventsCSV is events.csv: one row per streamed event, the events of a request in order.
var EventsCSV = &Table[EventRow]{file: EventsFile, cols: []column[EventRow]{
	strCol("request_id", func(e *EventRow) *string { return &e.RequestID }),
	intCol("event_seq", func(e *EventRow) *int { return &e.Seq }),
	reqMsCol("since_t0_ms", func(e *EventRow) *time.Duration { return &e.SinceT0 }),
	intCol("wire_bytes", func(e *EventRow) *int { return &e.Bytes }),
	intCol("text_bytes", func(e *EventRow) *int { return &e.TextLen }),
	optIntCol("tokens", func(e *EventRow) **int { return &e.Tokens }),
	boolCol("is_text", func(e *EventRow) *bool { return &e.Text }),
}}
