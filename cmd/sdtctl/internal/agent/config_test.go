package agent

import (
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	c, err := Parse([]byte(`
probes:
  - service: checkout            # glob on the service name
    specs: ["fbt:example.com/checkout/store::"]
    export: spans
    ttl: 10m
    budget: {cpu: 2%}
  - name: "bill*"
    specs: ["sdt:::"]
    budget: {fires: 50000/s}
`))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Probes) != 2 {
		t.Fatalf("%d sets", len(c.Probes))
	}
	e := c.Probes[0]
	if e.Service != "checkout" || e.Export != "spans" || e.TTLDuration() != 10*time.Minute || e.Budget.CPU != 2 || e.Lost() != DefaultServerTTL {
		t.Errorf("first set: %+v", e)
	}
	if !e.Spans() || e.Metrics() || !e.Matches("checkout", "anything") || e.Matches("checkouts", "x") {
		t.Errorf("first set: spans %v metrics %v", e.Spans(), e.Metrics())
	}
	f := c.Probes[1]
	if f.Export != "both" || f.TTLDuration() != DefaultTTL || f.Budget.Fires != 50000 || !f.Matches("x", "billing") || f.Matches("billing", "x") {
		t.Errorf("second set: %+v", f)
	}
	if e.Key() == f.Key() {
		t.Error("two sets, one key")
	}
	if c, err := Parse(nil); err != nil || len(c.Probes) != 0 {
		t.Errorf("empty: %v %v", c, err)
	}
	if c, err := Parse([]byte("# nothing\n")); err != nil || len(c.Probes) != 0 {
		t.Errorf("comment only: %v %v", c, err)
	}
}

func TestParseRefuses(t *testing.T) {
	set := func(extra string) string {
		return "probes:\n  - service: checkout\n    specs: [\"fbt:a/b::\"]\n" + extra
	}
	for _, tc := range []struct{ body, want string }{
		{set("    command: /bin/sh\n"), "field command not found"},
		{set("    library: /tmp/x.so\n"), "field library not found"},
		{"probes: []\nexec: rm\n", "field exec not found"},
		{set("    ttl: 0s\n"), "line 4: 0s: out of range"},
		{set("    ttl: 25h\n"), "out of range"},
		{set("    ttl: -1m\n"), "out of range"},
		{set("    ttl: soon\n"), "not a duration"},
		{set("    server_timeout: 100ms\n"), "out of range"},
		{set("    budget: {cpu: 0%}\n"), "out of range"},
		{set("    budget: {cpu: 150%}\n"), "out of range"},
		{set("    budget: {cpu: 2}\n"), "percentage"},
		{set("    budget: {fires: 0/s}\n"), "out of range"},
		{set("    budget: {fires: 5e12/s}\n"), "out of range"},
		{set("    budget: {fires: 100}\n"), "fires per second"},
		{set("    budget: {cpu: 1%, fires: 10/s}\n"), "not both"},
		{set("    budget: {memory: 1%}\n"), "field memory not found"},
		{set("    export: logs\n"), "export"},
		{"probes:\n  - specs: [\"sdt:::\"]\n", "names no process"},
		{"probes:\n  - service: \"[\"\n    specs: [\"sdt:::\"]\n", "syntax error in pattern"},
		{"probes:\n  - service: x\n", "no specs"},
		{"probes:\n  - service: x\n    specs: [\"a:b:c:d:e\"]\n", "spec"},
		{"probes:\n  - service: x\n    specs: [\"\"]\n", "spec"},
		{"probes: [1, 2]\n", "cannot unmarshal"},
		{"\x00\x01garbage\xff", ""},
		{"probes: []\n---\nprobes: []\n", "one YAML document"},
		{"probes:\n" + strings.Repeat("  - {service: x, specs: [\"sdt:::\"]}\n", MaxEntries+1), "at most"},
	} {
		c, err := Parse([]byte(tc.body))
		if err == nil {
			t.Errorf("%q: taken (%+v)", tc.body, c)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want it to say %q", tc.body, err, tc.want)
		}
	}
}
