package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/record"
	"github.com/onelayerdown/runner/runner/internal/redact"
	"github.com/onelayerdown/runner/runner/internal/results"
)

// secretsExperiment is a simulator experiment with secrets planted in server.args, server.env
// (by a secret name, and in a proxy URL) and request.extra. extraArgs go after the key.
func secretsExperiment(marker, extraArgs string) string {
	return fmt.Sprintf(`
version: 1
name: secrets
server:
  engine: sim
  model: %s
  max_model_len: 512
  args: ["--api-key", "sk-e2e-args-0123456789", "--decode-per-token", "1ms"%s]
  env:
    HF_TOKEN: hf_e2e_env_abcdefgh
    MY_API_KEY: 'my-e2e-api-key-value'
    HTTPS_PROXY: "http://proxy:e2e-proxy-pw-4321@127.0.0.1:3128"
    TOKENIZERS_PARALLELISM: "false"
request:
  api: completions
  prompt_tokens: 16
  ignore_eos: true
  extra:
    api_key: e2e-extra-key-abcdef
matrix:
  request.max_tokens: [4, 8]
warmup: 1
repetitions: 2
`, marker, extraArgs)
}

// e2eSecrets are the values secretsExperiment plants.
var e2eSecrets = []string{"sk-e2e-args-0123456789", "hf_e2e_env_abcdefgh", "my-e2e-api-key-value",
	"e2e-proxy-pw-4321", "e2e-extra-key-abcdef"}

// TestRunKeepsSecretsOutOfTheFolder runs experiments that hold secrets against the simulator,
// one that boots and one that fails to, and reads every byte of every file of each result
// folder: no secret may be in any of them, nor in what the runner prints.
func TestRunKeepsSecretsOutOfTheFolder(t *testing.T) {
	t.Parallel()
	bin := buildRunner(t)
	tests := []struct {
		name      string
		extraArgs string
		code      int
	}{
		{"served", "", 0},
		{"boot fails", `, "--boot-fail", "oom"`, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			marker := fmt.Sprintf("secrets-model-%d", time.Now().UnixNano())
			file := writeExperiment(t, dir, "secrets", secretsExperiment(marker, tt.extraArgs))
			root := filepath.Join(dir, "results")
			code, stdout, stderr := runBinary(t, bin, file, "--results", root)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.code, stdout, stderr)
			}
			checkNoSurvivors(t, marker)
			for _, s := range e2eSecrets {
				if strings.Contains(stdout+stderr, s) {
					t.Errorf("the runner printed the secret %q:\n%s\n%s", s, stdout, stderr)
				}
			}
			folder := onlyFolder(t, root, "secrets")
			files := 0
			err := filepath.WalkDir(folder, func(path string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				files++
				for _, s := range e2eSecrets {
					if bytes.Contains(b, []byte(s)) {
						t.Errorf("%s holds the secret %q", path, s)
					}
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if files < 8 {
				t.Errorf("%d files in %s, want the whole folder", files, folder)
			}

			man, err := results.ReadManifest(folder)
			if err != nil {
				t.Fatal(err)
			}
			// The copy keeps what is no secret, and the original file still resumes the folder.
			if !strings.Contains(man.Experiment.Source, `TOKENIZERS_PARALLELISM: "false"`) ||
				!strings.Contains(man.Experiment.Source, `"--api-key", "`+redact.Marker+`"`) {
				t.Errorf("experiment copy:\n%s", man.Experiment.Source)
			}
			src, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := man.CheckExperiment(src); err != nil {
				t.Errorf("the original file no longer matches the folder: %v", err)
			}
			if len(man.Servers) != 1 || !strings.Contains(strings.Join(man.Servers[0].Argv, " "), "--api-key "+redact.Marker) {
				t.Errorf("servers %+v, want the command line with the key redacted", man.Servers)
			}
			for _, q := range readRequests(t, folder) {
				if ok := q.Status == record.StatusOK; ok != (tt.code == 0) {
					t.Errorf("request %s-%d: %s %s", q.ConfigID, q.Seq, q.Status, q.Error)
				}
			}
		})
	}
}
