package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/onelayerdown/runner/runner/internal/gguf"
)

func TestCmdTinyModel(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		params string // the params the file must describe; empty when the command must fail
		code   int
	}{
		{"flags after the path", []string{"a.gguf", "--seed", "5", "--params", "embd=32,layers=1,heads=2,kv_heads=1,ff=16,ctx=64"},
			"embd=32,layers=1,heads=2,kv_heads=1,ff=16,ctx=64,seed=5", 0},
		{"flags before the path", []string{"--params", "embd=16,heads=2,kv_heads=2,layers=1,ff=8,ctx=32", "b.gguf"},
			"embd=16,layers=1,heads=2,kv_heads=2,ff=8,ctx=32,seed=1", 0},
		{"no path", []string{"--seed", "1"}, "", 2},
		{"two paths", []string{"c.gguf", "d.gguf"}, "", 2},
		{"bad params", []string{"e.gguf", "--params", "heads=3"}, "", 2},
		{"unknown flag", []string{"f.gguf", "--size", "3"}, "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"tinymodel"}, tt.args...)
			for i, a := range args {
				if strings.HasSuffix(a, ".gguf") {
					args[i] = filepath.Join(dir, a)
				}
			}
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), args, &stdout, &stderr)
			if tt.code != 0 {
				var ee *exitError
				if !errors.As(err, &ee) || ee.code != tt.code {
					t.Fatalf("error = %v, want exit status %d", err, tt.code)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v (stderr %q)", err, stderr.String())
			}
			var path string
			for _, a := range args {
				if strings.HasSuffix(a, ".gguf") {
					path = a
				}
			}
			f, err := gguf.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			p, err := gguf.ParseParams(tt.params, gguf.DefaultParams())
			if err != nil {
				t.Fatal(err)
			}
			want, err := gguf.TinyLlama(p)
			if err != nil {
				t.Fatal(err)
			}
			var a, b bytes.Buffer
			if err := gguf.Write(&a, f); err != nil {
				t.Fatal(err)
			}
			if err := gguf.Write(&b, want); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(a.Bytes(), b.Bytes()) {
				t.Errorf("the file is not the model for %s", tt.params)
			}
			st, _ := os.Stat(path)
			if !strings.Contains(stdout.String(), path) || !strings.Contains(stdout.String(), tt.params) {
				t.Errorf("stdout %q does not name the file and its params", stdout.String())
			}
			if st.Mode().Perm() != 0o644 {
				t.Errorf("mode %v, want 0644", st.Mode().Perm())
			}
		})
	}
}
