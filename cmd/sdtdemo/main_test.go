package main

import (
	"bytes"
	"runtime"
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
	wants := []string{"handle:start", "handle:done", "enabled 2 sites", "0 events", "2000 events"}
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" { // no site matcher: probes work through their branch check
		wants = []string{"enabled 0 sites", "0 events", "2000 events"}
	}
	for _, want := range wants {
		if !strings.Contains(s, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if err := run([]string{"-protocol", "sideways"}, &out); err == nil {
		t.Error("a bad -protocol was accepted")
	}
}
