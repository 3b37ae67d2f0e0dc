package engine

import (
	"bytes"
	"os"
	"sort"
	"strconv"
)

// groupMembers returns the live processes (zombies excluded) of process group pgid, read from
// /proc. A zombie holds no resources and waits only for its parent to reap it, which, once
// the runner is gone, may be an init that never does.
func groupMembers(pgid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		st, err := readStat(pid)
		if err != nil {
			continue
		}
		if st.pgrp == pgid && st.state != 'Z' && st.state != 'X' {
			out = append(out, pid)
		}
	}
	sort.Ints(out)
	return out
}

// procStat is the part of /proc/PID/stat the runner reads.
type procStat struct {
	state byte
	ppid  int
	pgrp  int
}

// readStat reads /proc/PID/stat.
func readStat(pid int) (procStat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return procStat{}, err
	}
	return parseStat(b)
}

// parseStat parses the text of /proc/PID/stat: "pid (comm) state ppid pgrp ...". The command
// name may hold spaces and parentheses, so the fields are read after its last ')'.
func parseStat(b []byte) (procStat, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return procStat{}, errStat
	}
	f := bytes.Fields(b[i+1:])
	if len(f) < 3 || len(f[0]) != 1 {
		return procStat{}, errStat
	}
	ppid, err1 := strconv.Atoi(string(f[1]))
	pgrp, err2 := strconv.Atoi(string(f[2]))
	if err1 != nil || err2 != nil {
		return procStat{}, errStat
	}
	return procStat{state: f[0][0], ppid: ppid, pgrp: pgrp}, nil
}

type statError struct{}

func (statError) Error() string { return "malformed /proc stat line" }

var errStat error = statError{}
