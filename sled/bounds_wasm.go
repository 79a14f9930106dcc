package sled

// On wasm the linker symbols are not addressable from assembly: no text to scan and no
// data to search, so probes there only ever work through their branch check.
func moduleBounds() (text, etext, data, edata, bss, ebss uintptr) { return }
