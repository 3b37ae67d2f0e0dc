package main

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/experiment"
)

func TestExitCode(t *testing.T) {
	list := experiment.ErrorList{{File: "x.yaml", Line: 3, Col: 5, Path: "request.max_tokens", Msg: "must be positive"}}
	tests := []struct {
		name   string
		err    error
		code   int
		stderr string
	}{
		{"success", nil, 0, ""},
		{"a plain error gets the prefix", errors.New("open x: denied"), 1, "runner: open x: denied\n"},
		{"on its first line only", errors.New("boom\nhint: retry"), 1, "runner: boom\nhint: retry\n"},
		{"a server's control characters are shown, not sent", errors.New("vllm: answered \x1b]0;owned\x07\x1b[2J\nlog tail"), 1, "runner: vllm: answered \\x1b]0;owned\\x07\\x1b[2J\nlog tail\n"},
		{"usage already printed", &exitError{code: 2}, 2, ""},
		{"a usage error", usageError("plan: want one file, got %d", 2), 2, "runner: plan: want one file, got 2\n"},
		{"located problems stand alone", &exitError{code: 2, err: list}, 2, "x.yaml:3:5: request.max_tokens: must be positive\n"},
		{"wrapped keeps its code", fmt.Errorf("context: %w", &exitError{code: 130, err: errors.New("interrupted")}), 130, "runner: interrupted\n"},
		{"a list of problems, each as alone", &exitError{code: 2, err: errorLines{
			&exitError{code: 2, err: list}, &exitError{code: 2, err: errors.New("open y.yaml: no such file")}, errors.New("validate: 2 of 2 files are invalid"),
		}}, 2, "x.yaml:3:5: request.max_tokens: must be positive\nrunner: open y.yaml: no such file\nrunner: validate: 2 of 2 files are invalid\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr bytes.Buffer
			if code := exitCode(tt.err, &stderr); code != tt.code || stderr.String() != tt.stderr {
				t.Errorf("exit %d, stderr %q; want %d, %q", code, stderr.String(), tt.code, tt.stderr)
			}
		})
	}
}

func TestExitErrorUnwraps(t *testing.T) {
	err := &exitError{code: 2, err: fmt.Errorf("summary: %w", fs.ErrNotExist)}
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%v does not unwrap to its cause", err)
	}
	var list experiment.ErrorList
	if !errors.As(error(&exitError{code: 2, err: errorLines{&exitError{code: 2, err: experiment.ErrorList{{Msg: "x"}}}}}), &list) {
		t.Error("a list of problems does not unwrap to its parts")
	}
	if got := (&exitError{code: 2}).Error(); got != "exit status 2" {
		t.Errorf("Error() = %q", got)
	}
}
