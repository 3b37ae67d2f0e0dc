package results

import (
	"fmt"

	"github.com/onelayerdown/runner/runner/internal/record"
)

// EachRequest calls fn with every request row of the folder in file (measured) order, with its
// error text joined in, one row at a time: unlike Requests it keeps no row, and it reads neither
// events.csv nor outputs.jsonl, so a row has no events and no generated text. It is for readers
// that need the figures of each request, not its stream: a folder of millions of events is
// read in the memory of its requests' ids. The request fn is given is reused for the next row.
func (r *Reader) EachRequest(fn func(q *record.Request) error) error {
	errs := map[string]string{}
	n, err := scanAll(r.dir, ErrorsFile, ErrorsJSONL.NewScanner, r.tolerant(), func(e ErrorRow, _ int) error {
		errs[e.RequestID] = e.Error
		return nil
	})
	if err != nil {
		return err
	}
	errNote := n
	// seen holds each config's seqs, to refuse a request that appears twice as Requests does.
	seen := map[string]map[int]bool{}
	n, err = scanAll(r.dir, RequestsFile, RequestsCSV.NewScanner, r.tolerant(), func(rec record.Request, line int) error {
		seqs := seen[rec.ConfigID]
		if seqs == nil {
			seqs = map[int]bool{}
			seen[rec.ConfigID] = seqs
		}
		if seqs[rec.Seq] {
			return requestTwice(line, &rec)
		}
		seqs[rec.Seq] = true
		if len(errs) > 0 {
			rec.Error = errs[RequestID(rec.ConfigID, rec.Seq)]
		}
		return fn(&rec)
	})
	if err != nil {
		return err
	}
	r.note(n)
	r.note(errNote)
	return nil
}

// ReadDigest opens the result folder dir and reads what its summary and comparisons need, as
// ReadAll does, except that Requests is nil and Digest holds the requests' figures per config
// (see EachRequest and Digest): a folder of any size is read in the memory of a few numbers per
// request.
func ReadDigest(dir string) (*Contents, error) {
	r, err := Open(dir)
	if err != nil {
		return nil, err
	}
	return r.ReadDigest(nil)
}

// ReadDigest reads the folder as the function ReadDigest does. each, if not nil, is given every
// request row too, as EachRequest gives them, for a reader that gathers more than the Digest.
func (r *Reader) ReadDigest(each func(q *record.Request)) (*Contents, error) {
	dir := r.dir
	d := NewDigest(r.man.Configs)
	if err := r.EachRequest(func(q *record.Request) error {
		d.Add(q)
		if each != nil {
			each(q)
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("%s: %w", dir, err)
	}
	c, err := r.contents(func() ([]LoadRow, error) {
		server, err := r.LoadServer()
		if err != nil {
			return nil, err
		}
		load := d.Load()
		JoinLoadServer(load, server)
		return load, nil
	})
	if err != nil {
		return nil, err
	}
	c.Digest = d
	return c, nil
}

// EachEvent calls fn with every row of events.csv in file order, one row at a time, keeping
// none; a torn last line is noted as Requests notes it. The row fn is given is reused for the
// next one.
func (r *Reader) EachEvent(fn func(e *EventRow) error) error {
	n, err := scanAll(r.dir, EventsFile, EventsCSV.NewScanner, r.tolerant(), func(e EventRow, _ int) error {
		return fn(&e)
	})
	if err != nil {
		return err
	}
	r.note(n)
	return nil
}

// Note adds a note on what a reader of the folder skipped, one sentence, to those Notes
// returns.
func (r *Reader) Note(n string) { r.note(n) }

// requestTwice is the error of every reader of requests.csv for a row, at line, whose request an
// earlier row already gave.
func requestTwice(line int, rec *record.Request) error {
	return fmt.Errorf("%s:%d: request %s appears twice", RequestsFile, line, RequestID(rec.ConfigID, rec.Seq))
}
