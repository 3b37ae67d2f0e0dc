package results

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/redact"
)

// Status is the state of a result folder.
type Status string

// The states of a result folder.
const (
	// StatusRunning: a process is writing the folder. A folder whose manifest says running
	// but whose writer is gone reads as StatusInterrupted.
	StatusRunning Status = "running"
	// StatusComplete: every planned request was sent and recorded.
	StatusComplete Status = "complete"
	// StatusInterrupted: the run stopped early (a signal, a crash); Resume can finish it.
	StatusInterrupted Status = "interrupted"
	// StatusIncomplete is a merged folder that lacks the configs of shards that were missing
	// or not complete (runner merge --partial); the manifest's merged.missing_configs lists them.
	StatusIncomplete Status = "incomplete"
	// StatusFailed: the run gave up (for example, no server would boot).
	StatusFailed Status = "failed"
)

// Manifest is manifest.json: what was run, where, how, and how it ended.
type Manifest struct {
	SchemaVersion int    `json:"schema_version"`
	Status        Status `json:"status"`

	Runner     RunnerInfo     `json:"runner"`
	Command    []string       `json:"command,omitempty"` // the runner's own argv, secrets redacted
	Experiment ExperimentFile `json:"experiment"`
	// Configs are the expanded configs, as the experiment package types them, with secret
	// environment values and arguments redacted.
	Configs []experiment.Config `json:"configs"`
	Servers []ServerInfo        `json:"servers"`
	Machine Machine             `json:"machine"`
	Process Process             `json:"process"`

	Start   time.Time   `json:"start_time"`
	End     *time.Time  `json:"end_time,omitempty"`
	Resumes []time.Time `json:"resume_times,omitempty"` // when each resume began
	// Discarded lists the configs whose rows a resume moved to discarded/, in order.
	Discarded []Discarded `json:"discarded,omitempty"`
	// Shard is set in the folder of one shard of a sharded run (runner FILE --shard I/N): the
	// folder holds that shard's configs only. Nil for a run of the whole plan.
	Shard *Shard `json:"shard,omitempty"`
	// Merged is set in a folder that runner merge made from shard folders.
	Merged *Merged `json:"merged,omitempty"`
}

// Shard says which part of an experiment's plan a folder holds.
type Shard struct {
	Index int `json:"index"` // from 0
	Count int `json:"count"`
	// Fingerprint identifies the plan the shards split: the experiment file's sha256 and the
	// shard count. Shards merge only with shards of the same fingerprint.
	Fingerprint string `json:"fingerprint"`
	// Configs are the ids of the configs of this shard, in plan order; empty for a shard that
	// got none (more shards than server configs).
	Configs []string `json:"configs"`
	// Source says where the index came from: "flag", "JOB_COMPLETION_INDEX" (a Kubernetes
	// Indexed Job) or "SLURM_ARRAY_TASK_ID" (a Slurm job array).
	Source string `json:"source,omitempty"`
	// Host is the machine the shard ran on (os.Hostname): the last one, where a resume
	// finished it on another machine.
	Host string `json:"host,omitempty"`
	// EarlierHosts are the machines the shard ran on before a resume moved it to Host, in
	// order; empty while it has run on one machine.
	EarlierHosts []string `json:"earlier_hosts,omitempty"`
}

// Merged records the shard folders a merged folder was made from.
type Merged struct {
	Fingerprint string        `json:"fingerprint"`
	Count       int           `json:"count"` // shards in the plan
	Shards      []MergedShard `json:"shards"`
	// Missing lists the configs of shards that were missing or not complete, when the merge
	// was asked to be partial; the folder's status is then incomplete.
	Missing []string `json:"missing_configs,omitempty"`
}

// MergedShard is one shard folder of a merge.
type MergedShard struct {
	Index  int    `json:"index"`
	Folder string `json:"folder"` // the shard folder's path as given to runner merge
	Host   string `json:"host,omitempty"`
	Status Status `json:"status"`
	// Machine is the machine the shard ran on, as its manifest records it: the merged
	// manifest's own machine is one shard's (see package merge), and the shards' may differ.
	Machine Machine `json:"machine"`
}

// RunnerInfo identifies the runner build that wrote a folder.
type RunnerInfo struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	// Schedule names the algorithm of the shuffled request order (measure.ScheduleVersion);
	// empty in folders written before it was recorded.
	Schedule string `json:"schedule,omitempty"`
}

// ExperimentFile is a copy of the experiment file a run was started from. Source is the file
// with each secret it holds (see package redact) replaced by redact.Marker where it stood;
// Redacted names the fields that held one. SHA256 is that of the original file, so that a
// resume from it is accepted.
type ExperimentFile struct {
	Name     string   `json:"name"`
	Path     string   `json:"path,omitempty"`
	SHA256   string   `json:"sha256"`
	Source   string   `json:"source"`
	Redacted []string `json:"redacted_fields,omitempty"`
}

// Process identifies the process that last wrote a folder, for people reading the manifest.
type Process struct {
	PID  int    `json:"pid"`
	Host string `json:"host,omitempty"`
}

// SHA256 returns the hex SHA-256 of b, as the manifest records the experiment file's.
func SHA256(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// CheckExperiment reports whether source is the experiment file the folder was written from,
// which a resume must insist on.
func (m *Manifest) CheckExperiment(source []byte) error {
	if got := SHA256(source); got != m.Experiment.SHA256 {
		return fmt.Errorf("the experiment file has changed since the run began (sha256 %s, the folder has %s)",
			got[:12], short(m.Experiment.SHA256))
	}
	return nil
}

func short(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

// writeManifest replaces dir/manifest.json atomically: it writes a temporary file beside it,
// syncs it and renames it over the old one, so a reader sees the old or the new manifest,
// never half of one.
func writeManifest(dir string, m *Manifest) error {
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return fmt.Errorf("encode manifest: %w", err)
	}
	return writeAtomic(dir, ManifestFile, append(b, '\n'))
}

// writeAtomic replaces dir/name with data through a temporary file and a rename.
func writeAtomic(dir, name string, data []byte) error {
	tmp, err := os.CreateTemp(dir, "."+name+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), 0o644)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), filepath.Join(dir, name))
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", name, err)
	}
	syncDir(dir)
	return nil
}

// syncDir makes a rename in dir durable where the platform allows it.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}

// ReadManifest reads dir/manifest.json. It refuses a schema_version it does not know. The
// status is as written; Open reports a running folder whose writer is gone as interrupted.
func ReadManifest(dir string) (*Manifest, error) {
	path := filepath.Join(dir, ManifestFile)
	b, err := ReadRegular(path, MaxManifestBytes)
	if err != nil {
		if st, serr := os.Stat(dir); serr != nil && os.IsNotExist(serr) {
			return nil, fmt.Errorf("%s: no such folder", dir)
		} else if serr == nil && !st.IsDir() {
			return nil, fmt.Errorf("%s: a file, not a result folder", dir)
		}
		if os.IsNotExist(err) {
			return nil, fmt.Errorf("%s: no %s: not a result folder", dir, ManifestFile)
		}
		return nil, err
	}
	return decodeManifest(b, path)
}

func decodeManifest(b []byte, path string) (*Manifest, error) {
	var head struct {
		Version json.RawMessage `json:"schema_version"`
	}
	if err := json.Unmarshal(b, &head); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if head.Version == nil {
		return nil, fmt.Errorf("%s: no schema_version field: not a result manifest of this format", path)
	}
	if v := string(bytes.TrimSpace(head.Version)); v != fmt.Sprint(FormatVersion) {
		return nil, &VersionError{File: path, Version: v}
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch m.Status {
	case StatusRunning, StatusComplete, StatusInterrupted, StatusFailed, StatusIncomplete:
	default:
		return nil, fmt.Errorf("%s: unknown status %q", path, m.Status)
	}
	return &m, nil
}

// redactConfigs returns copies of configs whose server environment and arguments, and request
// extra fields, have their secrets redacted.
func redactConfigs(configs []experiment.Config) []experiment.Config {
	out := make([]experiment.Config, len(configs))
	for i, c := range configs {
		c.Server.Env = redact.Env(c.Server.Env)
		c.Server.Args = redact.Args(c.Server.Args)
		c.Server.Command = redact.Args(c.Server.Command)
		if c.Request.Extra != nil {
			c.Request.Extra = redact.Tree("", c.Request.Extra).(map[string]any)
		}
		out[i] = c
	}
	return out
}

// configSecrets returns the secret values that configs hold, for hiding them in any other
// text the folder records.
func configSecrets(configs []experiment.Config) []string {
	var out []string
	for _, c := range configs {
		out = append(out, redact.EnvSecrets(c.Server.Env)...)
		out = append(out, redact.ArgSecrets(c.Server.Args)...)
		out = append(out, redact.ArgSecrets(c.Server.Command)...)
		out = append(out, redact.URLSecrets(c.Server.URL)...)
		if c.Server.APIKeyEnv != "" {
			// The key itself is in the runner's environment, not in the file; a server that
			// echoes it in an error must not put it in the folder.
			out = append(out, os.Getenv(c.Server.APIKeyEnv))
		}
		if c.Request.Extra != nil {
			out = append(out, redact.TreeSecrets("", map[string]any(c.Request.Extra))...)
		}
	}
	return out
}
