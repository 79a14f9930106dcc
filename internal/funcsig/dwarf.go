package funcsig

import (
	"debug/dwarf"
	"debug/elf"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/gosdt/gosdt/internal/functab/elffile"
	"github.com/gosdt/gosdt/internal/goversion"
)

// Go's own DWARF attributes (cmd/internal/dwarf).
const attrGoKind dwarf.Attr = 0x2900 // the type's reflect.Kind

// File is an executable's DWARF with its functions indexed by name: reading it takes
// one pass over the subprograms; each signature is read when asked for.
type File struct {
	arch     string
	data     *dwarf.Data
	elf      *elf.File // closed by Close when Open opened it
	funcs    map[string]dwarf.Offset
	abstract map[string]bool // functions with an inlined form only

	mu    sync.Mutex // the type cache and the reader
	types map[dwarf.Offset]*gtype
	r     *dwarf.Reader
}

// gtype is what the ABI needs of a Go type, read from its DWARF entry.
type gtype struct {
	name        string
	kind        int // reflect.Kind
	size, align int64
	fields      []field // a struct's
	elem        *gtype  // an array's
	count       int64   // an array's length
}

type field struct {
	off int64
	t   *gtype
}

// Open reads the DWARF of the executable at path; ErrNoDWARF when it has none.
func Open(path string) (*File, error) {
	ef, err := elf.Open(path)
	if err != nil {
		return nil, fmt.Errorf("funcsig: %w", err)
	}
	f, err := NewFile(ef)
	if err != nil {
		ef.Close()
		return nil, err
	}
	f.elf = ef
	return f, nil
}

// NewFile reads the DWARF of an open executable (sections compressed or not);
// ErrNoDWARF when it has none.
func NewFile(ef *elf.File) (*File, error) {
	f := &File{funcs: map[string]dwarf.Offset{}, abstract: map[string]bool{}, types: map[dwarf.Offset]*gtype{}}
	switch ef.Machine {
	case elf.EM_X86_64:
		f.arch = "amd64"
	case elf.EM_AARCH64:
		f.arch = "arm64"
	default:
		return nil, fmt.Errorf("funcsig: an executable for %v: only amd64 and arm64 are known", ef.Machine)
	}
	if ef.Section(".debug_info") == nil && ef.Section(".zdebug_info") == nil {
		return nil, ErrNoDWARF
	}
	if err := goversion.Check(elffile.GoVersion(ef), goversion.DWARF); err != nil {
		return nil, fmt.Errorf("funcsig: %w", err)
	}
	d, err := sections(ef)
	if err != nil {
		return nil, fmt.Errorf("funcsig: reading the DWARF: %w", err)
	}
	f.data, f.r = d, d.Reader()
	if err := f.index(); err != nil {
		return nil, err
	}
	return f, nil
}

// sections reads only the DWARF sections signatures need: the entries, their
// abbreviations, strings and addresses. The line table, location and range lists and
// frames, most of the (compressed) DWARF, are left unread: decompressing them would
// double Open's time.
func sections(ef *elf.File) (*dwarf.Data, error) {
	if ef.Section(".zdebug_info") != nil {
		return ef.DWARF() // the old compression, which only debug/elf undoes
	}
	data := func(name string) ([]byte, error) {
		s := ef.Section(name)
		if s == nil {
			return nil, nil
		}
		return s.Data() // undoes SHF_COMPRESSED
	}
	abbrev, err := data(".debug_abbrev")
	if err != nil {
		return nil, err
	}
	info, err := data(".debug_info")
	if err != nil {
		return nil, err
	}
	str, err := data(".debug_str")
	if err != nil {
		return nil, err
	}
	d, err := dwarf.New(abbrev, nil, nil, info, nil, nil, nil, str)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{".debug_addr", ".debug_str_offsets", ".debug_line_str"} {
		b, err := data(name)
		if err != nil {
			return nil, err
		}
		if b != nil {
			if err := d.AddSection(name, b); err != nil {
				return nil, err
			}
		}
	}
	return d, nil
}

// Close closes the executable if Open opened it.
func (f *File) Close() error {
	if f.elf != nil {
		return f.elf.Close()
	}
	return nil
}

// Arch is the executable's GOARCH.
func (f *File) Arch() string { return f.arch }

// index maps each function with code to its subprogram entry: Go puts every
// subprogram at the top of its compile unit, so the pass skips everything's children.
// A function inlined somewhere and also compiled on its own has an abstract entry
// (its name and parameters) and a concrete one that points at it.
func (f *File) index() error {
	abstract := map[dwarf.Offset]string{}
	type concrete struct{ off, origin dwarf.Offset }
	var unnamed []concrete
	r := f.data.Reader()
	for {
		e, err := r.Next()
		if err != nil {
			return fmt.Errorf("funcsig: reading the DWARF: %w", err)
		}
		if e == nil {
			break
		}
		if e.Tag == dwarf.TagCompileUnit {
			continue
		}
		if e.Tag == dwarf.TagSubprogram {
			name, _ := e.Val(dwarf.AttrName).(string)
			_, code := e.Val(dwarf.AttrLowpc).(uint64)
			switch {
			case code && name != "":
				f.funcs[name] = e.Offset
			case code:
				if o, ok := e.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
					unnamed = append(unnamed, concrete{e.Offset, o})
				}
			case name != "":
				abstract[e.Offset] = name
			}
		}
		if e.Children {
			r.SkipChildren()
		}
	}
	for _, c := range unnamed {
		if name := abstract[c.origin]; name != "" {
			f.funcs[name] = c.off
		}
	}
	for _, name := range abstract {
		if _, ok := f.funcs[name]; !ok {
			f.abstract[name] = true
		}
	}
	return nil
}

// Len returns how many functions with code the DWARF describes.
func (f *File) Len() int { return len(f.funcs) }

// Func returns the signature of the function the runtime names name
// ("example.com/app/store.(*DB).Get"), with its registers. The DWARF of a few
// functions the compiler makes (range-over-func loop bodies, a closure called where
// it is written inside a generic function) leaves parameters out: Spills then differs
// from the code's block, which is how a process refuses such a signature.
func (f *File) Func(name string) (*Func, error) {
	off, ok := f.funcs[name]
	if !ok {
		if f.abstract[name] {
			return nil, fmt.Errorf("funcsig: %s is inlined into every caller: it has no code of its own", name)
		}
		return nil, fmt.Errorf("funcsig: no function %s in the DWARF", name)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	fn := &Func{Name: name, Arch: f.arch}
	var ps, rs []*gtype
	params, err := f.children(off)
	if err != nil {
		return nil, fmt.Errorf("funcsig: %s: %w", name, err)
	}
	for _, p := range params {
		t, err := f.typeAt(p.typ)
		if err != nil {
			return nil, fmt.Errorf("funcsig: %s: %s: %w", name, p.name, err)
		}
		v := Value{Name: strings.TrimPrefix(p.name, "~"), Type: t.name, Kind: kindOf(t), Size: t.size}
		if v.Name == dictName && v.Kind == KindPointer {
			// go1.27's DWARF has the dictionary, as *[N]uintptr (N its entries): named
			// as before, where the reader adds it.
			v.Type, t = dictType.name, dictType
		}
		if p.result {
			fn.Results, rs = append(fn.Results, v), append(rs, t)
		} else {
			fn.Params, ps = append(fn.Params, v), append(ps, t)
		}
	}
	if i := dictIndex(name); i >= 0 && i <= len(ps) && !hasParam(fn.Params, dictName) {
		fn.Params = append(fn.Params[:i], append([]Value{{Name: dictName, Type: dictType.name, Kind: KindPointer, Size: ptrSize}}, fn.Params[i:]...)...)
		ps = append(ps[:i], append([]*gtype{dictType}, ps[i:]...)...)
	}
	assignSignature(abis[f.arch], fn, ps, rs)
	return fn, nil
}

func hasParam(vs []Value, name string) bool {
	for _, v := range vs {
		if v.Name == name {
			return true
		}
	}
	return false
}

type param struct {
	name   string
	typ    dwarf.Offset
	result bool
}

// children reads the formal parameters of the subprogram at off, in their order (the
// compiler emits the receiver, the parameters and the results in declaration order),
// each completed by its abstract origin.
func (f *File) children(off dwarf.Offset) ([]param, error) {
	f.r.Seek(off)
	e, err := f.r.Next()
	if err != nil {
		return nil, err
	}
	if e == nil || e.Tag != dwarf.TagSubprogram {
		return nil, errors.New("not a subprogram entry")
	}
	var entries []*dwarf.Entry
	for e.Children {
		c, err := f.r.Next()
		if err != nil {
			return nil, err
		}
		if c == nil || c.Tag == 0 {
			break
		}
		if c.Tag == dwarf.TagFormalParameter {
			entries = append(entries, c)
		}
		if c.Children {
			f.r.SkipChildren()
		}
	}
	var ps []param
	seen := map[string]bool{}
	for _, c := range entries {
		p := param{}
		if o, ok := c.Val(dwarf.AttrAbstractOrigin).(dwarf.Offset); ok {
			f.r.Seek(o)
			a, err := f.r.Next()
			if err != nil || a == nil {
				return nil, fmt.Errorf("the abstract origin of a parameter at %#x: %v", c.Offset, err)
			}
			p = paramOf(a, p)
		}
		p = paramOf(c, p)
		if p.typ == 0 {
			return nil, fmt.Errorf("a parameter without a type at %#x", c.Offset)
		}
		if seen[p.name] {
			// A result the compiler keeps in a register is described a second time
			// (cmd/compile/internal/dwarfgen: RegOutputParams); names are unique.
			continue
		}
		seen[p.name] = true
		ps = append(ps, p)
	}
	return ps, nil
}

// paramOf completes p with what entry e says.
func paramOf(e *dwarf.Entry, p param) param {
	if n, ok := e.Val(dwarf.AttrName).(string); ok {
		p.name = n
	}
	if t, ok := e.Val(dwarf.AttrType).(dwarf.Offset); ok {
		p.typ = t
	}
	if v, ok := e.Val(dwarf.AttrVarParam).(bool); ok {
		p.result = v
	}
	return p
}

// typeAt reads the type at off: its name, kind, size, alignment and the parts the
// ABI splits it into.
func (f *File) typeAt(off dwarf.Offset) (*gtype, error) {
	if t := f.types[off]; t != nil {
		return t, nil
	}
	f.r.Seek(off)
	e, err := f.r.Next()
	if err != nil {
		return nil, err
	}
	if e == nil {
		return nil, fmt.Errorf("no type entry at %#x", off)
	}
	t := &gtype{}
	t.name, _ = e.Val(dwarf.AttrName).(string)
	t.size, _ = e.Val(dwarf.AttrByteSize).(int64)
	if k, ok := e.Val(attrGoKind).(int64); ok {
		t.kind = int(k)
	}
	elem, _ := e.Val(dwarf.AttrType).(dwarf.Offset)
	var members []field
	var memberTypes []dwarf.Offset
	for e.Children {
		c, err := f.r.Next()
		if err != nil {
			return nil, err
		}
		if c == nil || c.Tag == 0 {
			break
		}
		switch c.Tag {
		case dwarf.TagMember:
			o, _ := c.Val(dwarf.AttrDataMemberLoc).(int64)
			mt, _ := c.Val(dwarf.AttrType).(dwarf.Offset)
			members, memberTypes = append(members, field{off: o}), append(memberTypes, mt)
		case dwarf.TagSubrangeType:
			t.count, _ = c.Val(dwarf.AttrCount).(int64)
		}
		if c.Children {
			f.r.SkipChildren()
		}
	}
	switch e.Tag {
	case dwarf.TagTypedef:
		// A named type: the layout of what it names.
		u, err := f.typeAt(elem)
		if err != nil {
			return nil, err
		}
		n := *u
		if !strings.HasPrefix(t.name, ".") {
			// A generic function's ".param1" stands for its shape: print the shape.
			n.name = t.name
		}
		if t.kind != 0 {
			n.kind = t.kind
		}
		t = &n
	case dwarf.TagBaseType:
		if t.kind == 0 {
			enc, _ := e.Val(dwarf.AttrEncoding).(int64)
			t.kind = baseKind(enc, t.size)
		}
	case dwarf.TagPointerType:
		t.kind, t.size = kPointer, ptrSize
	case dwarf.TagSubroutineType:
		t.kind, t.size = kFunc, ptrSize
	case dwarf.TagStructType:
		if t.kind == 0 {
			t.kind = kStruct
		}
		for i := range members {
			mt, err := f.typeAt(memberTypes[i])
			if err != nil {
				return nil, err
			}
			members[i].t = mt
		}
		t.fields = members
	case dwarf.TagArrayType:
		t.kind = kArray
		if t.elem, err = f.typeAt(elem); err != nil {
			return nil, err
		}
		t.size = t.count * t.elem.size
	default:
		return nil, fmt.Errorf("a type of DWARF tag %v at %#x", e.Tag, off)
	}
	t.align = alignOf(t)
	f.types[off] = t
	return t, nil
}

// baseKind is the kind of a base type without DW_AT_go_kind, by its DWARF encoding.
func baseKind(enc, size int64) int {
	switch enc {
	case 0x02: // DW_ATE_boolean
		return kBool
	case 0x03: // DW_ATE_complex_float
		return kComplex64 + int(size/16)
	case 0x04: // DW_ATE_float
		return kFloat32 + int(size/8)
	case 0x05, 0x0d: // DW_ATE_signed
		return kInt8 + bitsIndex(size)
	case 0x07, 0x08: // DW_ATE_unsigned
		return kUint8 + bitsIndex(size)
	}
	return 0
}

func bitsIndex(size int64) int {
	switch size {
	case 1:
		return 0
	case 2:
		return 1
	case 4:
		return 2
	}
	return 3
}

// alignOf is a type's alignment (abi-internal.md, "Memory layout").
func alignOf(t *gtype) int64 {
	switch t.kind {
	case kComplex64, kComplex128:
		return t.size / 2
	case kStruct:
		a := int64(1)
		for _, f := range t.fields {
			a = max(a, f.t.align)
		}
		return a
	case kArray:
		return t.elem.align
	case kString, kSlice, kInterface, kPointer, kUnsafePointer, kMap, kChan, kFunc:
		return ptrSize
	}
	return max(t.size, 1)
}

// kindOf is how a value of type t is printed.
func kindOf(t *gtype) Kind {
	switch t.kind {
	case kBool:
		return KindBool
	case kInt, kInt8, kInt16, kInt32, kInt64:
		return KindInt
	case kUint, kUint8, kUint16, kUint32, kUint64, kUintptr:
		return KindUint
	case kFloat32, kFloat64:
		return KindFloat
	case kString:
		return KindString
	case kPointer, kUnsafePointer, kMap, kChan, kFunc:
		return KindPointer
	case kSlice:
		return KindSlice
	case kInterface:
		if t.name == "error" {
			return KindError
		}
		return KindInterface
	}
	return KindOther
}
