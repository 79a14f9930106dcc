package main

import (
	"bytes"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	var out bytes.Buffer
	if err := run([]string{"-n", "1000"}, &out); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	t.Log(s)
	wants := []string{"handle:start", "handle:done", "enabled 2 sites"}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" { // no site matcher: probes work through their branch check
		wants = []string{"enabled 0 sites"}
	}
	for _, want := range wants {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// The three measurements, in order: disabled, enabled, disabled again; each line
	// ends with its event count, which must be exact (2 probes, 1000 calls).
	var events []int
	for _, line := range strings.Split(s, "\n") {
		f := strings.Fields(line)
		if len(f) == 5 && f[4] == "events" && (f[0] == "disabled" || f[0] == "enabled") {
			n, err := strconv.Atoi(f[3])
			if err != nil {
				t.Fatalf("line %q: %v", line, err)
			}
			events = append(events, n)
		}
	}
	if want := []int{0, 2000, 0}; !slices.Equal(events, want) {
		t.Errorf("events disabled, enabled, disabled: %v, want %v", events, want)
	}
	if err := run([]string{"-protocol", "sideways"}, &out); err == nil {
		t.Error("a bad -protocol was accepted")
	}
}
