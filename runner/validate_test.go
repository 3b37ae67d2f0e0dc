package main

import (
	"flag"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestValidateGolden checks the whole report of runner validate for files with problems, next
// to a valid one: stdout, stderr and the exit status.
func TestValidateGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
	}{
		{"invalid", []string{"validate", "testdata/validate/invalid.yaml"}},
		{"semantic", []string{"validate", "testdata/validate/semantic.yaml"}},
		{"mixed", []string{"validate", "testdata/plan/single.yaml", "testdata/validate/invalid.yaml", "testdata/plan/sweep.yaml", "testdata/validate/semantic.yaml"}},
		{"valid", []string{"validate", "testdata/plan/single.yaml", "testdata/plan/sweep.yaml", "testdata/plan/endpoint.yaml"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, errOut, code := runCmd(t, tc.args...)
			got := fmt.Sprintf("exit %d\n--- stdout\n%s--- stderr\n%s", code, out, errOut)
			checkGolden(t, "testdata/validate/"+tc.name+".golden", []byte(got))
			if wantCode := map[bool]int{true: 0, false: 2}[tc.name == "valid"]; code != wantCode {
				t.Errorf("exit %d, want %d", code, wantCode)
			}
		})
	}
}

func TestValidateUsage(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no file", []string{"validate"}, 2, "validate: no experiment file given"},
		{"missing file", []string{"validate", "testdata/validate/missing.yaml"}, 2, "runner: validate: read experiment: open testdata/validate/missing.yaml: no such file or directory"},
		{"help", []string{"validate", "--help"}, 0, "Usage: runner validate FILE..."},
		{"help command", []string{"help", "validate"}, 0, "FILE:LINE:COLUMN: FIELD: MESSAGE"},
		{"version help", []string{"version", "-h"}, 0, "Usage: runner version"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, errOut, code := runCmd(t, tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d", code, tc.code)
			}
			if !strings.Contains(errOut, tc.want) {
				t.Errorf("stderr does not contain %q:\n%s", tc.want, errOut)
			}
		})
	}
}

func TestFlagsAndFiles(t *testing.T) {
	tests := []struct {
		args   []string
		files  []string
		format string
	}{
		{[]string{"a.yaml"}, []string{"a.yaml"}, "text"},
		{[]string{"--format", "json", "a.yaml"}, []string{"a.yaml"}, "json"},
		{[]string{"a.yaml", "--format", "csv"}, []string{"a.yaml"}, "csv"},
		{[]string{"a.yaml", "-format=csv", "b.yaml"}, []string{"a.yaml", "b.yaml"}, "csv"},
		{[]string{"a.yaml", "--", "--format", "-x.yaml"}, []string{"a.yaml", "--format", "-x.yaml"}, "text"},
		{[]string{"-", "a.yaml"}, []string{"-", "a.yaml"}, "text"},
		{nil, nil, "text"},
	}
	for _, tc := range tests {
		fs := flag.NewFlagSet("t", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		format := fs.String("format", "text", "")
		files, helped, err := flagsAndFiles(fs, tc.args)
		if err != nil || helped {
			t.Errorf("%q: helped %v, err %v", tc.args, helped, err)
			continue
		}
		if !reflect.DeepEqual(files, tc.files) || *format != tc.format {
			t.Errorf("%q: files %q format %q, want %q %q", tc.args, files, *format, tc.files, tc.format)
		}
	}
}

// TestValidateWarnsPromptFloor checks that runner validate warns of a prompt_tokens below the
// simulator's known floor, naming the file and the config, and that the file stays valid.
func TestValidateWarnsPromptFloor(t *testing.T) {
	out, errOut, code := runCmd(t, "validate", "testdata/validate/floor.yaml")
	if code != 0 || !strings.Contains(out, "testdata/validate/floor.yaml: ok (3 configs, 1 server)") {
		t.Errorf("exit %d, stdout %q, want the file valid", code, out)
	}
	want := "testdata/validate/floor.yaml: warning: config prompt_tokens=1: prompt_tokens 1 is below the 4 tokens engine sim bills for its shortest completions prompt, so its requests will fail as prompt_too_short\n"
	if errOut != want {
		t.Errorf("stderr %q, want %q", errOut, want)
	}
}
