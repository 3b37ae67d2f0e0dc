package results

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"
)

// LoadServer is what a server's /metrics says about one load point: the differences between a
// scrape just before the load point's first request (after its cache reset) and one just after
// its last request ended. Several requests run at once under load, so no difference belongs to
// one request: the histograms give means over the requests the server finished between the
// two scrapes, which are the load point's warm-ups and measured requests together (they run in
// one block). A nil field is one the server does not serve, or a difference that went
// backwards (the server restarted).
type LoadServer struct {
	// Requests is how many requests the server finished between the scrapes, from the count of
	// its end-to-end (or TTFT) histogram: warm-ups included.
	Requests *int
	// Means over those requests: each histogram's sum difference over its count difference.
	TTFTMean, E2EMean, QueueMean, PrefillMean, DecodeMean *time.Duration
	// Token counters: prompt tokens processed, tokens generated, and the prefix cache's queried
	// and hit tokens, over the same window.
	PromptTokens, GenerationTokens, CacheQueries, CacheHits *int
	// ClientOverheadMean is the mean client TTFT minus the mean server TTFT over the same
	// requests: the client's mean is over every request of the load point (warm-ups included,
	// failed ones too) that has a client TTFT, and it is set only when that is as many requests
	// as the server's TTFT histogram counted in the window, so that both means are over the
	// same requests.
	ClientOverheadMean *time.Duration
}

// empty reports whether s holds no figure at all.
func (s *LoadServer) empty() bool {
	return s.Requests == nil && s.TTFTMean == nil && s.E2EMean == nil && s.QueueMean == nil && s.PrefillMean == nil &&
		s.DecodeMean == nil && s.PromptTokens == nil && s.GenerationTokens == nil && s.CacheQueries == nil &&
		s.CacheHits == nil && s.ClientOverheadMean == nil
}

// LoadServerRow is one row of load_server.csv: the server's own figures for one load point,
// written as soon as the load point has ended.
type LoadServerRow struct {
	ConfigID string
	ServerID string
	Before   time.Time // when the scrape before the first request was taken
	After    time.Time // when the scrape after the last request was taken
	LoadServer
}

// loadServerCols are the columns of a LoadServer, as load_server.csv and load.csv both carry
// them.
func loadServerCols[T any](get func(*T) *LoadServer) []column[T] {
	return []column[T]{
		optIntCol("server_requests", func(v *T) **int { return &get(v).Requests }),
		msCol("server_ttft_mean_ms", func(v *T) **time.Duration { return &get(v).TTFTMean }),
		msCol("server_e2e_mean_ms", func(v *T) **time.Duration { return &get(v).E2EMean }),
		msCol("server_queue_mean_ms", func(v *T) **time.Duration { return &get(v).QueueMean }),
		msCol("server_prefill_mean_ms", func(v *T) **time.Duration { return &get(v).PrefillMean }),
		msCol("server_decode_mean_ms", func(v *T) **time.Duration { return &get(v).DecodeMean }),
		optIntCol("server_prompt_tokens", func(v *T) **int { return &get(v).PromptTokens }),
		optIntCol("server_generation_tokens", func(v *T) **int { return &get(v).GenerationTokens }),
		optIntCol("prefix_cache_queries", func(v *T) **int { return &get(v).CacheQueries }),
		optIntCol("prefix_cache_hits", func(v *T) **int { return &get(v).CacheHits }),
		signedMsCol("client_overhead_mean_ms", func(v *T) **time.Duration { return &get(v).ClientOverheadMean }),
	}
}

type loadServerRow = LoadServerRow

// LoadServerCSV is load_server.csv: one row per load point whose server was scraped before and
// after it, in the order the load points ended, written only where one was.
var LoadServerCSV = &Table[loadServerRow]{file: LoadServerFile, optional: true, cols: slices.Concat([]column[loadServerRow]{
	strCol("config_id", func(r *loadServerRow) *string { return &r.ConfigID }),
	strCol("server_id", func(r *loadServerRow) *string { return &r.ServerID }),
	timeCol("scrape_before_time", func(r *loadServerRow) *time.Time { return &r.Before }),
	timeCol("scrape_after_time", func(r *loadServerRow) *time.Time { return &r.After }),
}, loadServerCols(func(r *loadServerRow) *LoadServer { return &r.LoadServer }))}

// JoinLoadServer sets the server figures of each load row from the load_server.csv row of its
// config; a config without one keeps none.
func JoinLoadServer(rows []LoadRow, server []LoadServerRow) {
	by := make(map[string]LoadServer, len(server))
	for _, s := range server {
		by[s.ConfigID] = s.LoadServer
	}
	for i := range rows {
		if s, ok := by[rows[i].ConfigID]; ok {
			rows[i].Server = s
		}
	}
}

// AppendLoadServer records the server's figures for a load point that has ended, in
// load_server.csv, creating the file with its header on the first row: a run that scraped no
// load point has none. A config the folder does not know, or one it already has a row for, is
// refused: a load point run again after a resume had its row discarded with its requests.
func (f *Folder) AppendLoadServer(row LoadServerRow) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.closed:
		return fmt.Errorf("append %s of %s: folder is closed", LoadServerFile, row.ConfigID)
	case f.err != nil:
		return fmt.Errorf("append %s of %s: an earlier write failed: %w", LoadServerFile, row.ConfigID, f.err)
	case !f.configs[row.ConfigID]:
		return fmt.Errorf("append %s: unknown config id %q", LoadServerFile, row.ConfigID)
	}
	for _, r := range f.loadServerRows {
		if r.ConfigID == row.ConfigID {
			return fmt.Errorf("append %s: the folder already has the load point of config %s", LoadServerFile, row.ConfigID)
		}
	}
	if f.loadServer == nil {
		file, err := openWithHeader(filepath.Join(f.dir, LoadServerFile), LoadServerCSV.header())
		if err != nil {
			return fmt.Errorf("append %s: %w", LoadServerFile, err)
		}
		f.loadServer = file
	}
	row.Before, row.After = row.Before.UTC(), row.After.UTC()
	if err := f.write(f.loadServer, LoadServerFile, encodeCSV(LoadServerCSV.row(&row))); err != nil {
		return err
	}
	f.loadServerRows = append(f.loadServerRows, row)
	return nil
}

// openWithHeader opens path for appending, creating it, and writes header first when the file
// is empty.
func openWithHeader(path string, header []string) (*os.File, error) {
	file, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	st, err := file.Stat()
	if err == nil && st.Size() == 0 {
		_, err = file.Write(encodeCSV(header))
	}
	if err != nil {
		file.Close()
		return nil, err
	}
	return file, nil
}

// repairLoadServer drops a torn last line of load_server.csv, and a second row of a config
// (which this writer never writes), where the folder has the file, and loads its rows.
func (f *Folder) repairLoadServer() error {
	if !hasFile(f.dir, LoadServerFile) {
		return nil
	}
	seen := map[string]bool{}
	f.loadServerRows = nil
	return filterFile(f.dir, LoadServerFile, LoadServerCSV.header(), LoadServerCSV.NewScanner, func(r LoadServerRow) bool {
		if seen[r.ConfigID] {
			return false
		}
		seen[r.ConfigID] = true
		f.loadServerRows = append(f.loadServerRows, r)
		return true
	})
}

// LoadServer returns the rows of load_server.csv; nil, and no error, for a folder without
// one. A config with two rows is an error: its load point would be described twice.
func (r *Reader) LoadServer() ([]LoadServerRow, error) {
	var rows []LoadServerRow
	seen := map[string]bool{}
	err := scanOptional(r, LoadServerFile, LoadServerCSV.NewScanner, func(s LoadServerRow, line int) error {
		if seen[s.ConfigID] {
			return fmt.Errorf("%s:%d: config %s appears twice", LoadServerFile, line, s.ConfigID)
		}
		seen[s.ConfigID] = true
		rows = append(rows, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rows, nil
}
