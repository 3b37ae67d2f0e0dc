package results

import (
	"bufio"
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// Machine describes the computer a run measured from, and the GPUs that nvidia-smi reports.
type Machine struct {
	Hostname    string `json:"hostname,omitempty"`
	OS          string `json:"os,omitempty"`     // e.g. "Debian GNU/Linux 12 (bookworm)"
	Kernel      string `json:"kernel,omitempty"` // e.g. "6.1.0-18-amd64"
	Arch        string `json:"arch"`             // GOOS/GOARCH, e.g. "linux/amd64"
	CPU         string `json:"cpu,omitempty"`    // model name
	CPUs        int    `json:"cpus"`             // logical CPUs
	MemoryBytes int64  `json:"memory_bytes,omitempty"`
	GPUs        []GPU  `json:"gpus,omitempty"`
	// GPUError says why nvidia-smi, though present, gave no answer.
	GPUError string `json:"gpu_error,omitempty"`
}

// GPU is one GPU as nvidia-smi reports it.
type GPU struct {
	Index     int    `json:"index"`
	Name      string `json:"name"`
	Driver    string `json:"driver,omitempty"`
	MemoryMiB int    `json:"memory_mib,omitempty"`
	UUID      string `json:"uuid,omitempty"`
	// PowerLimitW is the power limit in force when the run began, in watts; a T4's is 70 W,
	// and a GPU at its limit lowers its clocks. Nil where nvidia-smi cannot read it.
	PowerLimitW *float64 `json:"power_limit_w,omitempty"`
}

// DetectMachine describes this machine. It reads /etc/os-release, /proc/cpuinfo and
// /proc/meminfo where they exist, and asks nvidia-smi for the GPUs where it is on the PATH;
// what it cannot find stays empty.
func DetectMachine(ctx context.Context) Machine {
	m := Machine{Arch: runtime.GOOS + "/" + runtime.GOARCH, CPUs: runtime.NumCPU()}
	m.Hostname, _ = os.Hostname()
	if b, err := os.ReadFile("/etc/os-release"); err == nil {
		m.OS = parseOSRelease(string(b))
	}
	if m.OS == "" {
		m.OS = runtime.GOOS
	}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		m.CPU = parseCPUInfo(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		m.MemoryBytes = parseMemInfo(string(b))
	}
	if path, err := exec.LookPath("nvidia-smi"); err == nil {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		out, err := exec.CommandContext(ctx, path, "--query-gpu="+nvidiaSMIFields, "--format=csv,noheader,nounits").Output()
		if err == nil {
			m.GPUs, err = parseNvidiaSMI(string(out))
		}
		if err != nil {
			m.GPUError = "nvidia-smi: " + err.Error()
		}
	}
	return m
}

// nvidiaSMIFields are the fields DetectMachine asks nvidia-smi for, in the order
// parseNvidiaSMI reads them.
const nvidiaSMIFields = "index,name,driver_version,memory.total,uuid,power.limit"

// parseNvidiaSMI reads the output of
// nvidia-smi --query-gpu=index,name,driver_version,memory.total,uuid,power.limit --format=csv,noheader,nounits.
func parseNvidiaSMI(out string) ([]GPU, error) {
	r := csv.NewReader(strings.NewReader(out))
	r.TrimLeadingSpace = true
	r.FieldsPerRecord = 6
	recs, err := r.ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read GPU list: %w", err)
	}
	var gpus []GPU
	for _, f := range recs {
		idx, err := strconv.Atoi(strings.TrimSpace(f[0]))
		if err != nil {
			return nil, fmt.Errorf("read GPU list: index %q", f[0])
		}
		g := GPU{Index: idx, Name: strings.TrimSpace(f[1]), Driver: strings.TrimSpace(f[2]), UUID: strings.TrimSpace(f[4])}
		// A value nvidia-smi cannot read is "[N/A]" or similar; leave it out rather than fail.
		g.MemoryMiB, _ = strconv.Atoi(strings.TrimSpace(f[3]))
		if w, err := strconv.ParseFloat(strings.TrimSpace(f[5]), 64); err == nil {
			g.PowerLimitW = &w
		}
		gpus = append(gpus, g)
	}
	return gpus, nil
}

// parseOSRelease returns PRETTY_NAME of an os-release file.
func parseOSRelease(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "PRETTY_NAME="); ok {
			if u, err := strconv.Unquote(v); err == nil {
				return u
			}
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}

// parseCPUInfo returns the first "model name" of /proc/cpuinfo.
func parseCPUInfo(s string) string {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// parseMemInfo returns MemTotal of /proc/meminfo in bytes.
func parseMemInfo(s string) int64 {
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			f := strings.Fields(v)
			if len(f) >= 1 {
				n, err := strconv.ParseInt(f[0], 10, 64)
				if err == nil && len(f) >= 2 && f[1] == "kB" {
					return n * 1024
				}
				if err == nil {
					return n
				}
			}
		}
	}
	return 0
}
