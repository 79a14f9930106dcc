package sdt_test

import (
	"os"
	"strings"
	"testing"

	"github.com/gosdt/gosdt/internal/testbin"
	"github.com/gosdt/gosdt/internal/testutil"
)

// importBudget is what importing sdt may add to hello world on linux/amd64, in bytes
// of the binary as go build writes it (symbols and DWARF included).
const importBudget = 1_560_000 // 1.5 MB until sdtctl trace|stat -- CMD (SDT_FOLLOW) and stat --by stack, which every traced program must carry

// TestImportCost builds hello world with and without one probe and checks what the
// probe's import costs: at most importBudget on linux/amd64, and no disassembler
// (golang.org/x/arch) on either architecture: discovery decodes with its own tables.
func TestImportCost(t *testing.T) {
	if testing.Short() {
		t.Skip("builds four programs")
	}
	if testutil.Emulated() {
		t.Skip("under an emulator: the native run builds both architectures")
	}
	for _, goarch := range []string{"amd64", "arm64"} {
		t.Run(goarch, func(t *testing.T) {
			plain := testbin.Build(t, "", goarch, "./testdata/hello/plain")
			probe := testbin.Build(t, "", goarch, "./testdata/hello/probe")
			added := fileSize(t, probe) - fileSize(t, plain)
			t.Logf("hello world %d bytes, with a probe %d (+%d)", fileSize(t, plain), fileSize(t, probe), added)
			if goarch == "amd64" && added > importBudget {
				t.Errorf("importing sdt adds %d bytes to hello world, more than %d", added, importBudget)
			}
			if sym := symbolWithPrefix(t, probe, "golang.org/x/arch/"); sym != "" {
				t.Errorf("linux/%s hello world links %s", goarch, sym)
			}
		})
	}
}

func fileSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// symbolWithPrefix returns a symbol of the binary whose name starts with prefix, or "".
func symbolWithPrefix(t *testing.T, path, prefix string) string {
	t.Helper()
	for _, s := range testbin.Symbols(t, path) {
		if strings.HasPrefix(s.Name, prefix) {
			return s.Name
		}
	}
	return ""
}
