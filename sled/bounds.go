//go:build !wasm

package sled

// moduleBounds returns the linker's section boundaries of this executable: text, data
// (pointer-bearing initialised data) and bss (pointer-bearing zeroed data). They are
// read from the linker symbols runtime·text, runtime·etext, ... in assembly, which
// works for PIE, static and external linking alike and needs neither /proc nor the ELF
// file. Probe definitions contain a pointer, so they always live in data or bss.
func moduleBounds() (text, etext, data, edata, bss, ebss uintptr)
