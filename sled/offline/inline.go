package offline

import (
	"debug/dwarf"
	"debug/elf"
	"github.com/gosdt/gosdt/sled"
	"sort"
)

// inlineCalls maps code inlined from the probe package to the statement that called
// it, read from a binary's DWARF: offline, what the live path gets from the runtime's
// inline tree (runtime.CallersFrames). The function table (.gopclntab) names only the
// innermost function at a pc, which at a site is the inlined body of sdt's Probe1.
type inlineCalls struct {
	spans []inlineSpan // by lo; disjoint
}

// inlineSpan is a range of code inlined from the probe package, and the frame that
// holds the call: the innermost enclosing function outside the probe package, with the
// file and line of the call in it.
type inlineSpan struct {
	lo, hi uint64
	fn     string
	file   string
	line   int
}

// at returns the span that holds pc.
func (c *inlineCalls) at(pc uint64) (inlineSpan, bool) {
	if c == nil {
		return inlineSpan{}, false
	}
	i := sort.Search(len(c.spans), func(i int) bool { return c.spans[i].lo > pc }) - 1
	if i >= 0 && pc < c.spans[i].hi {
		return c.spans[i], true
	}
	return inlineSpan{}, false
}

// readInlineCalls reads the calls of probePkg's functions inlined elsewhere from the
// DWARF of path; nil if the binary has none (stripped with -s or -w).
func readInlineCalls(path, probePkg string) *inlineCalls {
	f, err := elf.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	d, err := f.DWARF()
	if err != nil {
		return nil
	}
	// Pass 1: the names of all functions, by offset; abstract ones (those that were
	// inlined) are children of their compilation unit, and inlined calls refer to them.
	names := map[dwarf.Offset]string{}
	r := d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == dwarf.TagSubprogram {
			if n, ok := e.Val(dwarf.AttrName).(string); ok {
				names[e.Offset] = n
			}
		}
		if e.Tag != dwarf.TagCompileUnit && e.Children {
			r.SkipChildren()
		}
	}
	name := func(e *dwarf.Entry) string {
		if n, ok := e.Val(dwarf.AttrName).(string); ok {
			return n
		}
		if o, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
			return names[o]
		}
		return ""
	}
	inProbe := func(n string) bool {
		mod, _ := sled.SplitFunc(n)
		return mod == probePkg
	}

	// Pass 2: every inlined call of a probe-package function made from outside it.
	type frame struct {
		e    *dwarf.Entry
		name string
	}
	c := &inlineCalls{}
	var stack []frame
	var cu *dwarf.Entry
	var files []*dwarf.LineFile
	filesOf := func() []*dwarf.LineFile {
		if files == nil && cu != nil {
			if lr, err := d.LineReader(cu); err == nil && lr != nil {
				files = lr.Files()
			}
		}
		return files
	}
	r = d.Reader()
	for {
		e, err := r.Next()
		if err != nil || e == nil {
			break
		}
		if e.Tag == 0 { // the end of a list of children
			if len(stack) > 0 {
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if e.Tag == dwarf.TagCompileUnit {
			cu, files, stack = e, nil, stack[:0]
		}
		fr := frame{e: e}
		if e.Tag == dwarf.TagSubprogram || e.Tag == dwarf.TagInlinedSubroutine {
			fr.name = name(e)
		}
		if e.Tag == dwarf.TagInlinedSubroutine && inProbe(fr.name) && len(stack) > 0 {
			// The enclosing frame: the innermost function or inlined call around it.
			var parent *frame
			for i := len(stack) - 1; i >= 0; i-- {
				if t := stack[i].e.Tag; t == dwarf.TagSubprogram || t == dwarf.TagInlinedSubroutine {
					parent = &stack[i]
					break
				}
			}
			// Only the outermost probe-package call of a chain: the code of calls
			// inlined within it is within its ranges and has the same caller.
			if parent != nil && !inProbe(parent.name) {
				file, line := "", 0
				if i, ok := e.Val(dwarf.AttrCallFile).(int64); ok {
					if fs := filesOf(); i >= 0 && int(i) < len(fs) && fs[i] != nil {
						file = fs[i].Name
					}
				}
				if l, ok := e.Val(dwarf.AttrCallLine).(int64); ok {
					line = int(l)
				}
				if ranges, err := d.Ranges(e); err == nil && file != "" {
					for _, rg := range ranges {
						c.spans = append(c.spans, inlineSpan{lo: rg[0], hi: rg[1], fn: parent.name, file: file, line: line})
					}
				}
			}
		}
		if e.Children {
			stack = append(stack, fr)
		}
	}
	sort.Slice(c.spans, func(i, j int) bool { return c.spans[i].lo < c.spans[j].lo })
	return c
}
