package usdt

import (
	"encoding/binary"
	"fmt"
	"strings"
)

// Note is one SDT probe point.
type Note struct {
	Provider, Name string
	PC             uint64 // link-time address of the probe point
	Base           uint64 // link-time address of .stapsdt.base
	Semaphore      uint64 // link-time address of the probe's 16-bit semaphore, or 0
	Args           []Arg
}

// Arg is one argument spec: Size bytes (negative: signed) in a register or memory
// operand written in the tracer's syntax, e.g. "%rcx" on amd64, "x2" on arm64.
type Arg struct {
	Size    int
	Operand string
}

func (a Arg) String() string { return fmt.Sprintf("%d@%s", a.Size, a.Operand) }

// NoteType is the SDT note type: version 3, with a semaphore address.
const NoteType = 3

const owner = "stapsdt\x00"

// EncodeNotes returns the contents of a .note.stapsdt section for 64-bit targets.
func EncodeNotes(notes []Note, bo binary.ByteOrder) ([]byte, error) {
	var out []byte
	for _, n := range notes {
		if n.Provider == "" || n.Name == "" || strings.ContainsRune(n.Provider+n.Name, 0) {
			return nil, fmt.Errorf("usdt: bad probe name %q:%q", n.Provider, n.Name)
		}
		var args []string
		for _, a := range n.Args {
			switch a.Size {
			case 1, 2, 4, 8, -1, -2, -4, -8:
			default:
				return nil, fmt.Errorf("usdt: %s:%s: argument size %d", n.Provider, n.Name, a.Size)
			}
			args = append(args, a.String())
		}
		desc := make([]byte, 24, 24+len(n.Provider)+len(n.Name)+64)
		bo.PutUint64(desc[0:], n.PC)
		bo.PutUint64(desc[8:], n.Base)
		bo.PutUint64(desc[16:], n.Semaphore)
		desc = append(desc, n.Provider...)
		desc = append(desc, 0)
		desc = append(desc, n.Name...)
		desc = append(desc, 0)
		desc = append(desc, strings.Join(args, " ")...)
		desc = append(desc, 0)

		var hdr [12]byte
		bo.PutUint32(hdr[0:], uint32(len(owner)))
		bo.PutUint32(hdr[4:], uint32(len(desc)))
		bo.PutUint32(hdr[8:], NoteType)
		out = append(out, hdr[:]...)
		out = append(out, owner...)
		out = pad4(append(out, desc...))
	}
	return out, nil
}

func pad4(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// DecodeNotes parses a .note.stapsdt section back; notes of other owners or types are
// skipped. It is what tests (and sdtctl) use to read a sealed binary.
func DecodeNotes(b []byte, bo binary.ByteOrder) ([]Note, error) {
	var notes []Note
	for len(b) > 0 {
		if len(b) < 12 {
			return nil, fmt.Errorf("usdt: truncated note header")
		}
		namesz, descsz, typ := int(bo.Uint32(b)), int(bo.Uint32(b[4:])), bo.Uint32(b[8:])
		nameEnd := 12 + (namesz+3)&^3
		descEnd := nameEnd + (descsz+3)&^3
		if namesz < 0 || descsz < 0 || descEnd > len(b) || nameEnd > len(b) {
			return nil, fmt.Errorf("usdt: truncated note")
		}
		name, desc := string(b[12:12+namesz]), b[nameEnd:nameEnd+descsz]
		b = b[descEnd:]
		if name != owner || typ != NoteType {
			continue
		}
		if len(desc) < 24 {
			return nil, fmt.Errorf("usdt: short stapsdt note")
		}
		n := Note{PC: bo.Uint64(desc), Base: bo.Uint64(desc[8:]), Semaphore: bo.Uint64(desc[16:])}
		strs := strings.SplitN(string(desc[24:]), "\x00", 4)
		if len(strs) < 3 {
			return nil, fmt.Errorf("usdt: stapsdt note strings not terminated")
		}
		n.Provider, n.Name = strs[0], strs[1]
		for _, f := range strings.Fields(strs[2]) {
			var a Arg
			size, op, ok := strings.Cut(f, "@")
			if !ok {
				return nil, fmt.Errorf("usdt: argument spec %q", f)
			}
			if _, err := fmt.Sscan(size, &a.Size); err != nil {
				return nil, fmt.Errorf("usdt: argument spec %q: %v", f, err)
			}
			a.Operand = op
			n.Args = append(n.Args, a)
		}
		notes = append(notes, n)
	}
	return notes, nil
}
