package results

import (
	"io"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// EventRow is one row of events.csv: one streamed event of one request.
type EventRow struct {
	RequestID string // RequestID(config id, seq) of the request it belongs to
	record.Event
}

var eventsTable = &table[EventRow]{file: EventsFile, cols: []column[EventRow]{
	strCol("request_id", func(e *EventRow) *string { return &e.RequestID }),
	intCol("event_seq", func(e *EventRow) *int { return &e.Seq }),
	reqMsCol("since_t0_ms", func(e *EventRow) *time.Duration { return &e.SinceT0 }),
	intCol("wire_bytes", func(e *EventRow) *int { return &e.Bytes }),
	intCol("text_bytes", func(e *EventRow) *int { return &e.TextLen }),
	optIntCol("tokens", func(e *EventRow) **int { return &e.Tokens }),
	boolCol("is_text", func(e *EventRow) *bool { return &e.Text }),
}}

// EventColumns returns the columns of events.csv in file order.
func EventColumns() []Column { return eventsTable.Columns() }

// NewEventEncoder returns an encoder of events.csv rows.
func NewEventEncoder(w io.Writer) *Encoder[EventRow] {
	return &Encoder[EventRow]{w: w, t: eventsTable}
}

// NewEventScanner returns a scanner of events.csv rows read from r; name is the file name that
// errors carry.
func NewEventScanner(r io.Reader, name string) *Scanner[EventRow] {
	return newCSVScanner(r, name, eventsTable, nil)
}
