package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"
)

// supportedGo are the Go releases whose layouts (function table, g, stack maps,
// prologues, DWARF) gosdt has been checked against; README's "Run it" names them too.
var supportedGo = []string{"1.26", "1.27"}

// cmdVersion says which gosdt this sdtctl is, the Go that built it, and the Go
// releases the programs it traces may be built with.
func cmdVersion(args []string, stdout, stderr io.Writer) error {
	o := newFlags("version", stderr, false)
	pos, err := o.parse(args)
	if err != nil {
		return err
	}
	if len(pos) > 0 {
		return fail(exitUsage, "version: takes no argument, not %q", pos[0])
	}
	module, version := "github.com/gosdt/gosdt", "(unknown)"
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Path != "" {
			module = bi.Main.Path
		}
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && version == "(devel)" {
				version += " " + s.Value
			}
		}
	}
	if o.json {
		printJSON(stdout, map[string]any{"module": module, "version": version, "go": runtime.Version(),
			"goos": runtime.GOOS, "goarch": runtime.GOARCH, "supported_go": supportedGo})
		return nil
	}
	fmt.Fprintf(stdout, "sdtctl %s (%s)\nbuilt with %s %s/%s\nsupported Go: %s\n", version, module,
		runtime.Version(), runtime.GOOS, runtime.GOARCH, strings.Join(supportedGo, ", "))
	return nil
}
