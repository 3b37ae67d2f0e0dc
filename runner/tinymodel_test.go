package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
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
			err := dispatch(context.Background(), args, &stdout, &stderr)
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

// TestCmdTinyModelRefusesSpecialFiles checks that the output path is written only when it is a
// regular file or new: anything else stays as it was and the command exits with status 2.
func TestCmdTinyModelRefusesSpecialFiles(t *testing.T) {
	const small = "embd=16,layers=1,heads=2,kv_heads=2,ff=8,ctx=32"
	devNull, err := os.Stat("/dev/null")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	target := filepath.Join(dir, "target.gguf")
	if err := os.WriteFile(target, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		make func(path string) error // creates what is at the path; nil: nothing
		want string                  // the refusal, or "" when the model must be written
		kind fs.FileMode             // the type the path must still have after a refusal
	}{
		{"new path", nil, "", 0},
		{"regular file", func(p string) error { return os.WriteFile(p, []byte("old"), 0o644) }, "", 0},
		{"symbolic link", func(p string) error { return os.Symlink(target, p) }, "is a symbolic link", fs.ModeSymlink},
		{"dangling symbolic link", func(p string) error { return os.Symlink(filepath.Join(dir, "nowhere"), p) }, "is a symbolic link", fs.ModeSymlink},
		{"named pipe", func(p string) error { return syscall.Mkfifo(p, 0o644) }, "is a named pipe", fs.ModeNamedPipe},
		{"directory", func(p string) error { return os.Mkdir(p, 0o755) }, "is a directory", fs.ModeDir},
		// A node with /dev/null's own device number, made in the test's directory: the real
		// /dev/null is only looked at. Making a device node needs privileges.
		{"character device", func(p string) error {
			st := devNull.Sys().(*syscall.Stat_t)
			return syscall.Mknod(p, syscall.S_IFCHR|0o666, int(st.Rdev))
		}, "is a character device", fs.ModeDevice | fs.ModeCharDevice},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, fmt.Sprintf("out%d.gguf", i))
			if tt.make != nil {
				if err := tt.make(path); err != nil {
					if errors.Is(err, syscall.EPERM) {
						t.Skipf("cannot make it here: %v", err)
					}
					t.Fatal(err)
				}
			}
			var stdout, stderr bytes.Buffer
			err := dispatch(context.Background(), []string{"tinymodel", path, "--params", small}, &stdout, &stderr)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("run: %v", err)
				}
				if st, err := os.Lstat(path); err != nil || !st.Mode().IsRegular() || st.Size() == 0 {
					t.Fatalf("no model written at %s: %v", path, err)
				}
				return
			}
			var ee *exitError
			if !errors.As(err, &ee) || ee.code != 2 || !strings.Contains(ee.Error(), tt.want) || !strings.Contains(ee.Error(), path) {
				t.Fatalf("error = %v, want exit status 2 saying %q", err, tt.want)
			}
			st, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Type() != tt.kind {
				t.Errorf("%s is now %v, want it left as %v", path, st.Mode().Type(), tt.kind)
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range entries {
				if strings.HasPrefix(e.Name(), ".") {
					t.Errorf("a temporary file %s was left behind", e.Name())
				}
			}
		})
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "keep me" {
		t.Errorf("the link's target changed: %q, %v", b, err)
	}
	if st, err := os.Stat("/dev/null"); err != nil || st.Mode().Type() != devNull.Mode().Type() {
		t.Errorf("/dev/null is no longer a device: %v, %v", st, err)
	}
}
