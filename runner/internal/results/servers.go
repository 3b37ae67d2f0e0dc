package results

import (
	"slices"
	"time"
)

// ServerInfo describes one boot of one server config: what ran, how long it took to become
// ready, and how it ended. SetServer records it in servers.csv and in the manifest; Argv and
// Error are kept in the manifest only.
type ServerInfo struct {
	ServerID      string `json:"server_id"`
	Resume        int    `json:"resume"` // 0 for the first run of the folder, n for its nth resume; set by the folder
	Engine        string `json:"engine"`
	EngineVersion string `json:"engine_version,omitempty"`
	Model         string `json:"model,omitempty"`
	// Argv is the exact command line (with secrets redacted: SetServer redacts it again).
	Argv        []string  `json:"argv,omitempty"`
	BootStart   time.Time `json:"boot_start_time"`
	BootSeconds *float64  `json:"boot_s,omitempty"`      // nil when it never became ready
	ExitCode    *int      `json:"exit_code,omitempty"`   // nil while running or when killed by a signal
	ExitSignal  string    `json:"exit_signal,omitempty"` // e.g. "terminated", when a signal ended it
	LogFile     string    `json:"log_file,omitempty"`    // path of its log inside the folder
	Error       string    `json:"error,omitempty"`       // why it failed to boot or died, in full
	// CacheReset says how the server's prefix cache is emptied for cache: reset, e.g. "POST
	// /reset_prefix_cache", or, for llama-server, that every request asks not to reuse it;
	// empty when the server offers no reset. In the manifest only.
	CacheReset string `json:"cache_reset,omitempty"`
	// ServerMetrics says where the server-side cells of its requests came from (which
	// /metrics names were read) or why they are empty (an engine without metrics, a scrape
	// that failed). In the manifest only, once per server.
	ServerMetrics string `json:"server_metrics,omitempty"`
	// TelemetryWarning says what went wrong with the GPU sampling of this boot (a nvidia-smi
	// that failed, exited or hung), whose requests then have empty GPU cells; empty when
	// nothing did or no GPU was sampled. In the manifest only.
	TelemetryWarning string `json:"telemetry_warning,omitempty"`
	// Shard is the index of the shard whose run booted the server, in a folder that runner
	// merge made from shard folders; nil in any other folder.
	Shard *int `json:"shard,omitempty"`
	// Host is the machine the server ran on, in a merged folder (the shard's host); empty in
	// any other folder, whose manifest names its one machine.
	Host string `json:"host,omitempty"`
}

// ServersCSV is servers.csv: one row per boot of a server config. The shard and host columns
// came later: a file written before them reads as boots without them. Rows have no Argv or
// Error: those are in the manifest.
var ServersCSV = &Table[ServerInfo]{file: ServersFile, cols: slices.Concat([]column[ServerInfo]{
	strCol("server_id", func(s *ServerInfo) *string { return &s.ServerID }),
	intCol("resume", func(s *ServerInfo) *int { return &s.Resume }),
	strCol("engine", func(s *ServerInfo) *string { return &s.Engine }),
	strCol("engine_version", func(s *ServerInfo) *string { return &s.EngineVersion }),
	strCol("model", func(s *ServerInfo) *string { return &s.Model }),
	timeCol("boot_start_time", func(s *ServerInfo) *time.Time { return &s.BootStart }),
	optFloatCol("boot_s", 6, func(s *ServerInfo) **float64 { return &s.BootSeconds }),
	optIntCol("exit_code", func(s *ServerInfo) **int { return &s.ExitCode }),
	strCol("exit_signal", func(s *ServerInfo) *string { return &s.ExitSignal }),
	strCol("log_file", func(s *ServerInfo) *string { return &s.LogFile }),
}, addedLater(
	// Which shard and machine each boot ran on, in a merged folder; empty elsewhere.
	optIntCol("shard", func(s *ServerInfo) **int { return &s.Shard }),
	strCol("host", func(s *ServerInfo) *string { return &s.Host }),
))}
