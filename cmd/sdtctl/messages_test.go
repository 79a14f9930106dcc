package main

import (
	"bytes"
	"encoding/json"
	"runtime"
	"strings"
	"testing"
)

// TestMessagesRead: the error comes first and the usage is a short hint; a value given
// to a flag that takes none is named; more specs than a request carries are refused
// before any process is asked; version says the module, the Go and the Go releases
// supported.
func TestMessagesRead(t *testing.T) {
	t.Setenv("XDG_RUNTIME_DIR", t.TempDir())
	for _, args := range [][]string{{"bogus"}, {}} {
		var out, errb bytes.Buffer
		err := run(args, &out, &errb)
		if exitCode(err) != exitUsage || errb.Len() > 0 || strings.Count(err.Error(), "\n") > 4 || !strings.Contains(err.Error(), "sdtctl --help") {
			t.Errorf("sdtctl %v: %q (exit %d), stderr %d bytes: want the error, then a short hint", args, err, exitCode(err), errb.Len())
		}
	}
	var out, errb bytes.Buffer
	for _, cmd := range []string{"trace", "stat"} {
		err := run([]string{cmd, "-p", "1", "fbt:x::", "--many", "100000"}, &out, &errb)
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), `"100000" is no spec`) && !strings.Contains(err.Error(), "100000 is no spec") {
			t.Errorf("%s --many 100000: %v", cmd, err)
		}
	}
	specs := make([]string, 3000)
	for i := range specs {
		specs[i] = "x:::y"
	}
	for _, cmd := range []string{"enable", "disable", "export"} {
		err := run(append([]string{cmd, "-p", "999999999"}, specs...), &out, &errb)
		if exitCode(err) != exitUsage || !strings.Contains(err.Error(), "3000 specs: at most 64") {
			t.Errorf("%s of 3000 specs: %v (exit %d)", cmd, err, exitCode(err))
		}
	}
	out.Reset()
	if err := run([]string{"version"}, &out, &errb); err != nil || !strings.Contains(out.String(), runtime.Version()) || !strings.Contains(out.String(), "1.26, 1.27") || !strings.Contains(out.String(), "github.com/gosdt/gosdt") {
		t.Errorf("version: %v\n%s", err, out.String())
	}
	out.Reset()
	var v struct {
		Module, Version, Go string
		Supported           []string `json:"supported_go"`
	}
	if err := run([]string{"version", "--json"}, &out, &errb); err != nil || json.Unmarshal(out.Bytes(), &v) != nil || v.Go != runtime.Version() || len(v.Supported) != 2 || v.Version == "" {
		t.Errorf("version --json: %v %s", err, out.String())
	}
}
