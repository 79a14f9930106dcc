package main

import (
	"bytes"
	"os"
	"regexp"
	"strings"
	"testing"
)

// allCommands is every command, as the short usage lists them (TestShortUsageDispatched
// checks that each is dispatched).
var allCommands = strings.Fields(strings.TrimPrefix(strings.Split(shortUsage, "\n")[1], "commands:"))

// TestEveryFlagDocumented: every flag of every command (as its --help lists them, which
// is every flag its parser has) is named in the main usage's synopsis of the command
// and in the README; --json, which every command but demo and toolexec takes, is said
// once for all.
func TestEveryFlagDocumented(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	flagLine := regexp.MustCompile(`(?m)^  -([a-z][a-z-]*)`)
	for _, cmd := range allCommands {
		var out, errb bytes.Buffer
		if err := run([]string{cmd, "--help"}, &out, &errb); exitCode(err) != exitOK {
			t.Errorf("%s --help: %v", cmd, err)
			continue
		}
		syn := synopsis(cmd)
		for _, m := range flagLine.FindAllStringSubmatch(out.String(), -1) {
			f := m[1]
			if f == "json" {
				continue
			}
			named := regexp.MustCompile(`(^|[\s\[(|` + "`" + `'])--?` + regexp.QuoteMeta(f) + `\b`)
			if !named.MatchString(syn) {
				t.Errorf("sdtctl --help: %s's synopsis does not name -%s: %q", cmd, f, syn)
			}
			if !named.Match(readme) {
				t.Errorf("README names no -%s (of sdtctl %s)", f, cmd)
			}
		}
	}
	for _, cmd := range allCommands {
		if !strings.Contains(usage, "\n  "+cmd+" ") && !strings.Contains(usage, "\n  "+cmd+"|") {
			t.Errorf("sdtctl --help does not describe %s", cmd)
		}
	}
}

// TestShortUsageDispatched: every command the short usage lists is one sdtctl runs, so
// that the tests over allCommands cover every command there is.
func TestShortUsageDispatched(t *testing.T) {
	for _, cmd := range allCommands {
		var out, errb bytes.Buffer
		err := runCommand([]string{cmd, "--help"}, &out, &errb)
		if err != nil && strings.Contains(err.Error(), "unknown command") {
			t.Errorf("the short usage lists %q, which sdtctl does not run: %v", cmd, err)
		}
	}
	if len(allCommands) < 12 {
		t.Errorf("the short usage lists %d commands: %q", len(allCommands), allCommands)
	}
}
