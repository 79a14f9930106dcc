package main

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestExitCodesListed: every exit code is in --help's list and the README's table,
// each once.
func TestExitCodesListed(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, list, _ := strings.Cut(usage, "\nExit codes:\n")
	for _, code := range []int{exitOK, exitError, exitUsage, exitNoProcess, exitNotGosdt, exitPermission, exitNoMatch, exitBadSpec, exitExited, exitStart} {
		if n := strings.Count(list, fmt.Sprintf("\n  %d ", code)) + strings.Count(list[:4], fmt.Sprintf("  %d ", code)); n != 1 {
			t.Errorf("exit %d is in --help's list %d times", code, n)
		}
		if n := strings.Count(string(readme), fmt.Sprintf("\n| %d | ", code)); n != 1 {
			t.Errorf("exit %d is in the README's table %d times", code, n)
		}
	}
}
