package results

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"testing"
)

func readTestdata(t *testing.T, name string) string {
	b, err := os.ReadFile(filepath.Join("testdata", "machine", name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseMachineFiles(t *testing.T) {
	if got := parseOSRelease(readTestdata(t, "os-release")); got != "Debian GNU/Linux 12 (bookworm)" {
		t.Errorf("os-release: %q", got)
	}
	if got := parseCPUInfo(readTestdata(t, "cpuinfo")); got != "AMD EPYC 7B13" {
		t.Errorf("cpuinfo: %q", got)
	}
	if got := parseMemInfo(readTestdata(t, "meminfo")); got != 24576000*1024 {
		t.Errorf("meminfo: %d", got)
	}
	gpus, err := parseNvidiaSMI(readTestdata(t, "nvidia-smi.txt"))
	if err != nil {
		t.Fatal(err)
	}
	t4Limit := 70.0
	want := []GPU{
		{Index: 0, Name: "Tesla T4", Driver: "535.104.05", MemoryMiB: 15360, UUID: "GPU-5b8e2f4c-1111-2222-3333-444455556666", PowerLimitW: &t4Limit},
		{Index: 1, Name: "NVIDIA H100 80GB HBM3", Driver: "550.54.15", MemoryMiB: 0, UUID: "GPU-0aa1b2c3-1111-2222-3333-444455556666"},
	}
	if !reflect.DeepEqual(gpus, want) {
		t.Errorf("nvidia-smi:\n got %+v\nwant %+v", gpus, want)
	}
	for _, bad := range []string{"0, T4\n", "x, T4, 1, 2, 3, 4\n"} {
		if _, err := parseNvidiaSMI(bad); err == nil {
			t.Errorf("parseNvidiaSMI(%q) succeeded", bad)
		}
	}
	if gpus, err := parseNvidiaSMI(""); err != nil || len(gpus) != 0 {
		t.Errorf("no GPUs: %v, %v", gpus, err)
	}
}

// TestDetectMachine checks the live description against what the Go runtime knows, and the
// GPU list against nvidia-smi's presence.
func TestDetectMachine(t *testing.T) {
	m := DetectMachine(context.Background())
	if m.Arch != runtime.GOOS+"/"+runtime.GOARCH || m.CPUs != runtime.NumCPU() || m.OS == "" {
		t.Errorf("machine %+v", m)
	}
	if runtime.GOOS == "linux" && (m.MemoryBytes <= 0 || m.Kernel == "") {
		t.Errorf("linux machine without memory or kernel: %+v", m)
	}
	if _, err := exec.LookPath("nvidia-smi"); err == nil {
		if len(m.GPUs) == 0 && m.GPUError == "" {
			t.Errorf("nvidia-smi is present but no GPU and no error was recorded")
		}
	} else if len(m.GPUs) != 0 || m.GPUError != "" {
		t.Errorf("GPUs without nvidia-smi: %+v", m)
	}
}
