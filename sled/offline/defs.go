package offline

import (
	"debug/elf"
	"strings"

	"github.com/gosdt/gosdt/arch"
	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/sled"
)

// Definition is a probe definition read from a binary's package initialisation: the
// arguments of its Define call, which name the probe, and the variable it lives in.
type Definition struct {
	Flag     uint64   // the variable's address: the flag byte sites compare
	Provider string   // Define's first argument
	Name     string   // its second
	Args     []string // argument names, as far as they were passed in registers

	// An fbt probe's (fbtrt.DefineFunc, whose second argument, Name, is the probe's
	// USDT name): the instrumented function, as its sites are named, and "entry" or
	// "return".
	Module, Function, Boundary string
}

// Definitions reads the probe definitions of an amd64 or arm64 Go ELF binary without
// running it, on any host: `var p = sdt.Define1[int]("proc", "exit", "reason")`
// compiles, in the package's init, to the string arguments put in the argument
// registers (a generic instantiation's dictionary first), the call, and a store of the
// result's flag byte into the variable (Offline.Calls finds both). Definitions made
// otherwise (not in an init function, arguments that are not constants) are not found;
// package sdt keeps every Define from being inlined so that the call is there to read.
// Argument names passed on the stack are left out: a generic Define passes four
// strings in registers on amd64, seven on arm64.
func Definitions(path string) ([]Definition, error) {
	b, err := open(path, "definitions")
	if err != nil {
		return nil, err
	}
	defer b.f.Close()
	f, tab, mem := b.f, b.tab, b.mem()
	syms := fileSyms{tab}
	define := sled.ProbePackage() + ".Define"
	defineFunc := sled.ProbePackage() + "/internal/fbtrt.DefineFunc" // generated fbt code's
	isDefine := func(target uint64) bool {
		name := syms.Name(target)
		return strings.HasPrefix(name, define) || name == defineFunc
	}
	var defs []Definition
	for i := range tab.Len() {
		if !isInit(string(tab.Name(i))) {
			continue
		}
		for _, c := range b.arch.Calls(mem, tab.Entry(i), tab.End(i), isDefine, syms.Name) {
			first := 0
			if strings.Contains(syms.Name(c.Target), "[") {
				first = 1 // a generic Define's dictionary
			}
			strs := stringArgs(f, c, first)
			if len(strs) >= 2 && c.Stored != 0 {
				d := Definition{Flag: c.Stored, Provider: strs[0], Name: strs[1], Args: strs[2:]}
				if syms.Name(c.Target) == defineFunc {
					// DefineFunc(provider, usdt, module, function, which, args, types):
					// which may be on the stack (amd64), and the USDT name ends with it.
					d.Args = nil
					if i := strings.LastIndex(d.Name, "__"); len(strs) >= 4 && i >= 0 {
						d.Module, d.Function, d.Boundary = strs[2], strs[3], d.Name[i+2:]
					}
				}
				defs = append(defs, d)
			}
		}
	}
	return defs, nil
}

// isInit reports the functions that initialise package variables.
func isInit(name string) bool {
	_, fn := spec.SplitFunc(name)
	i := strings.IndexByte(fn, '.')
	return i >= 0 && (fn[i+1:] == "init" || strings.HasPrefix(fn[i+1:], "init."))
}

// stringArgs reads the strings passed in consecutive (pointer, length) pairs of
// argument registers from first on, up to the first pair whose value is not known or
// not in the file.
func stringArgs(f *elf.File, c arch.Call, first int) []string {
	var strs []string
	for i := first; ; i += 2 {
		p, ok1 := c.Arg(i)
		n, ok2 := c.Arg(i + 1)
		if !ok1 || !ok2 {
			return strs
		}
		s, ok := readString(f, p, n)
		if !ok {
			return strs
		}
		strs = append(strs, s)
	}
}

// readString reads n bytes at addr from the file's loaded sections.
func readString(f *elf.File, addr, n uint64) (string, bool) {
	if n > 1<<16 {
		return "", false
	}
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC != 0 && s.Type == elf.SHT_PROGBITS && addr >= s.Addr && addr+n <= s.Addr+s.Size {
			b := make([]byte, n)
			if _, err := s.ReadAt(b, int64(addr-s.Addr)); err != nil {
				return "", false
			}
			return string(b), true
		}
	}
	return "", false
}
