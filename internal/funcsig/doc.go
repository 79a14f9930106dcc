// Package funcsig reads a Go function's signature from its executable's DWARF: each
// parameter's and result's name, type and kind, and the registers Go's ABI passes it in.
package funcsig
