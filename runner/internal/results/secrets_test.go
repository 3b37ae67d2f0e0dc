package results

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/onelayerdown/runner/runner/internal/experiment"
	"github.com/onelayerdown/runner/runner/internal/record"
)

// secretExperiment is an experiment file that holds secrets in every place one can stand, each
// written in a different YAML style.
const secretExperiment = `# yaml-language-server: $schema=../schema/experiment.schema.json
# The key below is sk-args-0123456789 (a comment that repeats it).
version: 1
name: secrets
server:
  engine: sim
  model: tiny
  args: ["--api-key", "sk-args-0123456789", '--hf-token=hf_flag_abcdef', --download, "http://me:url-pw-5678@127.0.0.1:9/m?token=url-tok-999&rev=main"]
  env:
    HF_TOKEN: hf_env_abcdefgh
    MY_API_KEY: 'my-api-key-value'
    HTTPS_PROXY: http://proxy:proxy-pw-4321@127.0.0.1:3128
    TOKENIZERS_PARALLELISM: "false"
    MAX_TOKENS: "4096"
request:
  api: completions
  prompt_tokens: 8
  max_tokens: 4
  extra:
    api_key: extra-key-abcdef
    metadata: {user: bob}
repetitions: 1
warmup: 0
`

// plantedSecrets are the secret values of secretExperiment.
var plantedSecrets = []string{"sk-args-0123456789", "hf_flag_abcdef", "url-pw-5678", "url-tok-999", "hf_env_abcdefgh",
	"my-api-key-value", "proxy-pw-4321", "extra-key-abcdef"}

// assertNoSecrets reads every file under dir and fails on any secret it finds.
func assertNoSecrets(t *testing.T, dir string, secrets []string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		n++
		for _, s := range secrets {
			if bytes.Contains(b, []byte(s)) {
				t.Errorf("%s holds the secret %q", path, s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no files under %s", dir)
	}
}

func TestCreateRedactsSecrets(t *testing.T) {
	src := []byte(secretExperiment)
	exp, err := experiment.Parse("experiments/secrets.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	configs, err := exp.Expand()
	if err != nil {
		t.Fatal(err)
	}
	run := testRunInfo()
	run.Command = []string{"runner", "experiments/secrets.yaml", "--api-key", "sk-args-0123456789"}
	f, err := Create(t.TempDir(), exp, configs, run)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.SetServer(ServerInfo{ServerID: configs[0].ServerID, Engine: "sim", BootStart: t0,
		Argv: append([]string{"runner", "sim"}, configs[0].Server.Args...)}); err != nil {
		t.Fatal(err)
	}
	if err := f.Append(fakeRequest(configs[0], 0)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, f.Dir(), plantedSecrets)

	man, err := ReadManifest(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	// The manifest keeps the original file's sha256, so a resume from that file is accepted.
	if err := man.CheckExperiment(src); err != nil {
		t.Errorf("CheckExperiment(original file): %v", err)
	}
	wantFields := []string{"request.extra.api_key", "server.args[1]", "server.args[2]", "server.args[4]",
		"server.env.HF_TOKEN", "server.env.HTTPS_PROXY", "server.env.MY_API_KEY"}
	if got := slices.Sorted(slices.Values(man.Experiment.Redacted)); !slices.Equal(got, wantFields) {
		t.Errorf("redacted fields %q, want %q", got, wantFields)
	}
	// The copy is the file with each secret replaced where it stood: it still loads, and the
	// rest of it is unchanged.
	copySrc := man.Experiment.Source
	if _, err := experiment.Parse("copy.yaml", []byte(copySrc)); err != nil {
		t.Errorf("the redacted copy does not load: %v", err)
	}
	for _, keep := range []string{`TOKENIZERS_PARALLELISM: "false"`, `MAX_TOKENS: "4096"`, "metadata: {user: bob}",
		`"--api-key", "REDACTED", '--hf-token=REDACTED'`, "http://me:REDACTED@127.0.0.1:9/m?token=REDACTED&rev=main",
		"HF_TOKEN: REDACTED\n", "MY_API_KEY: 'REDACTED'\n", "# The key below is REDACTED (a comment"} {
		if !strings.Contains(copySrc, keep) {
			t.Errorf("the copy lacks %q:\n%s", keep, copySrc)
		}
	}
	if len(copySrc) != len(src)+countDelta(src, plantedSecrets) {
		t.Errorf("the copy is %d bytes, want the file's %d with only the secrets replaced", len(copySrc), len(src))
	}
}

// countDelta returns how many bytes replacing each occurrence of the secrets by the marker adds.
func countDelta(src []byte, secrets []string) int {
	d := 0
	for _, s := range secrets {
		d += bytes.Count(src, []byte(s)) * (len("REDACTED") - len(s))
	}
	return d
}

// TestResumedFolderHidesSecrets checks that a resumed folder, told the run's secrets, hides them
// in what it records after the resume as a new one does: errors a server echoes a key in, and a
// server's error in the manifest. The key of server.api_key_env, which no file holds, is hidden
// too.
func TestResumedFolderHidesSecrets(t *testing.T) {
	t.Setenv("RESULTS_TEST_KEY", "sk-env-key-0123456789")
	src := []byte(strings.Replace(secretExperiment, "repetitions: 1", "repetitions: 3", 1))
	exp, err := experiment.Parse("experiments/secrets.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	configs, err := exp.Expand()
	if err != nil {
		t.Fatal(err)
	}
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	echo := func(seq int) record.Request {
		r := failedRequest(configs[0], seq)
		r.Error = "401: bad key sk-args-0123456789 (also tried extra-key-abcdef)"
		return r
	}
	if err := f.Append(echo(0)); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(StatusInterrupted); err != nil {
		t.Fatal(err)
	}
	g, _, err := Resume(f.Dir())
	if err != nil {
		t.Fatal(err)
	}
	withKey := append([]experiment.Config(nil), configs...)
	withKey[0].Server.APIKeyEnv = "RESULTS_TEST_KEY"
	g.HideSecrets(withKey)
	if err := g.Append(echo(1)); err != nil {
		t.Fatal(err)
	}
	r := echo(2)
	r.Error = "the server echoed sk-env-key-0123456789"
	if err := g.Append(r); err != nil {
		t.Fatal(err)
	}
	if err := g.SetServer(ServerInfo{ServerID: configs[0].ServerID, Engine: "sim", BootStart: t0,
		Error: "exited: --api-key sk-args-0123456789 refused"}); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, f.Dir(), append(plantedSecrets, "sk-env-key-0123456789"))
}

// TestMarkInterruptedFreezes checks that no write after MarkInterrupted puts running back into
// the manifest: the process is about to exit.
func TestMarkInterruptedFreezes(t *testing.T) {
	exp, configs := testExperiment()
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.MarkInterrupted(time.Second); err != nil {
		t.Fatal(err)
	}
	if err := f.SetServer(ServerInfo{ServerID: "s0-77aa", Engine: "sim", BootStart: t0}); err == nil {
		t.Error("SetServer after MarkInterrupted succeeded")
	}
	if err := f.Append(fakeRequest(configs[0], 0)); err == nil {
		t.Error("Append after MarkInterrupted succeeded")
	}
	if m, err := ReadManifest(f.Dir()); err != nil || m.Status != StatusInterrupted {
		t.Errorf("manifest status %v, %v; want interrupted", m.Status, err)
	}
	f.abandon()
}

// TestOutputsHideSecrets checks that a server which echoes the bearer key in its generated text
// leaves no key in outputs.jsonl, as errors.jsonl holds none when it echoes one in an error:
// both are hidden by the folder's one Replacer.
func TestOutputsHideSecrets(t *testing.T) {
	t.Setenv("RESULTS_TEST_KEY", "sk-env-key-0123456789")
	exp, err := experiment.Parse("experiments/secrets.yaml", []byte(strings.Replace(secretExperiment, "repetitions: 1", "repetitions: 2", 1)))
	if err != nil {
		t.Fatal(err)
	}
	configs, err := exp.Expand()
	if err != nil {
		t.Fatal(err)
	}
	configs[0].Server.APIKeyEnv = "RESULTS_TEST_KEY"
	f, err := Create(t.TempDir(), exp, configs, testRunInfo())
	if err != nil {
		t.Fatal(err)
	}
	f.HideSecrets(configs)
	ok := fakeRequest(configs[0], 0)
	ok.OutputText = "Authorization: Bearer sk-env-key-0123456789, and --api-key sk-args-0123456789"
	bad := failedRequest(configs[0], 1)
	bad.Error = "401: bad key sk-env-key-0123456789"
	for _, r := range []record.Request{ok, bad} {
		if err := f.Append(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := f.Close(StatusComplete); err != nil {
		t.Fatal(err)
	}
	assertNoSecrets(t, f.Dir(), append(plantedSecrets, "sk-env-key-0123456789"))
	b, err := os.ReadFile(filepath.Join(f.Dir(), OutputsFile))
	if err != nil {
		t.Fatal(err)
	}
	if want := "Authorization: Bearer REDACTED, and --api-key REDACTED"; !strings.Contains(string(b), want) {
		t.Errorf("%s = %s, want the text with the keys hidden: %q", OutputsFile, b, want)
	}
}
