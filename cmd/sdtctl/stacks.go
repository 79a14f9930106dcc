package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/outfile"
)

// stat --by stack: the process folds fires by probe and Go call stack (sdt/control's
// aggstack.go); a row's key is the probe's name, then a line per frame, innermost
// first: "function\tfile:line". sdtctl prints them as DTrace prints @[ustack()], and
// writes them as a pprof profile (--pprof) and as folded stacks (--folded), which
// flamegraph.pl, inferno and speedscope read.

// frame is one line of a stack key.
type frame struct {
	fn, file string
	line     int
}

// parseStack splits a stack row's key: the probe, and the frames innermost first.
func parseStack(key string) (probe string, frames []frame) {
	lines := strings.Split(key, "\n")
	for _, l := range lines[1:] {
		fn, where, _ := strings.Cut(l, "\t")
		fr := frame{fn: fn, file: where}
		if i := strings.LastIndexByte(where, ':'); i >= 0 {
			if n, err := strconv.Atoi(where[i+1:]); err == nil {
				fr.file, fr.line = where[:i], n
			}
		}
		frames = append(frames, fr)
	}
	return lines[0], frames
}

// printStackStat prints a stat by stack: per row its probe, its frames, and its count
// (and value), most fires first.
func printStackStat(w io.Writer, pid int, s *ctlproto.Stat) {
	printStatHeader(w, pid, "stack", s)
	for _, r := range s.Rows {
		probe, frames := parseStack(r.Key)
		fmt.Fprintf(w, "\n  %s\n", probe)
		for _, f := range frames {
			fmt.Fprintf(w, "      %s\n          %s:%d\n", f.fn, f.file, f.line)
		}
		if s.Value != "" {
			fmt.Fprintf(w, "  %d fires, sum(%s) %d, min %d, max %d, avg %.1f\n", r.Count, s.Value, r.Sum, r.Min, r.Max, r.Avg)
		} else {
			fmt.Fprintf(w, "  %d\n", r.Count)
		}
		if len(r.Hist) > 0 {
			printRowHist(w, s, r.Hist)
		}
	}
	printStatFooter(w, s)
}

// folded is the stacks as flamegraph.pl's input: per row, its frames root first
// joined by ';', the probe as the leaf, a space and the count (or the value's sum with
// --value). Rows of the same text are added.
func folded(s *ctlproto.Stat) []byte {
	var b bytes.Buffer
	for _, r := range s.Rows {
		probe, frames := parseStack(r.Key)
		for i := len(frames) - 1; i >= 0; i-- {
			b.WriteString(strings.ReplaceAll(frames[i].fn, ";", ":"))
			b.WriteByte(';')
		}
		b.WriteString(strings.ReplaceAll(probe, ";", ":"))
		n := r.Count
		if s.Value != "" {
			n = r.Sum
		}
		fmt.Fprintf(&b, " %d\n", n)
	}
	return b.Bytes()
}

// pprofProfile encodes the stacks as a pprof profile (profile.proto, gzipped): one
// sample per row, its locations the frames innermost first, valued by its fires (and
// the value's sum with --value), labelled with its probe. Locations and functions are
// by name, file and line: a profile of text, no addresses or mappings.
func pprofProfile(s *ctlproto.Stat, start time.Time) ([]byte, error) {
	var p pb
	strs := map[string]int64{"": 0}
	table := []string{""}
	str := func(x string) int64 {
		if i, ok := strs[x]; ok {
			return i
		}
		strs[x] = int64(len(table))
		table = append(table, x)
		return strs[x]
	}
	valueType := func(typ, unit string) []byte {
		var v pb
		v.int(1, str(typ))
		v.int(2, str(unit))
		return v.b
	}
	p.msg(1, valueType("fires", "count"))
	if s.Value != "" {
		p.msg(1, valueType(s.Value, "sum"))
	}
	funcs := map[[2]string]uint64{}
	locs := map[frame]uint64{}
	var funcMsgs, locMsgs [][]byte
	for _, r := range s.Rows {
		probe, frames := parseStack(r.Key)
		var ids []uint64
		for _, f := range frames {
			id, ok := locs[f]
			if !ok {
				fk := [2]string{f.fn, f.file}
				fid, ok := funcs[fk]
				if !ok {
					fid = uint64(len(funcs) + 1)
					funcs[fk] = fid
					var fm pb
					fm.uint(1, fid)
					fm.int(2, str(f.fn))
					fm.int(3, str(f.fn))
					fm.int(4, str(f.file))
					funcMsgs = append(funcMsgs, fm.b)
				}
				id = uint64(len(locs) + 1)
				locs[f] = id
				var line pb
				line.uint(1, fid)
				line.int(2, int64(f.line))
				var lm pb
				lm.uint(1, id)
				lm.msg(4, line.b)
				locMsgs = append(locMsgs, lm.b)
			}
			ids = append(ids, id)
		}
		var sm pb
		sm.packed(1, ids)
		vals := []uint64{uint64(r.Count)}
		if s.Value != "" {
			vals = append(vals, uint64(r.Sum))
		}
		sm.packed(2, vals)
		var label pb
		label.int(1, str("probe"))
		label.int(2, str(probe))
		sm.msg(3, label.b)
		p.msg(2, sm.b)
	}
	for _, m := range locMsgs {
		p.msg(4, m)
	}
	for _, m := range funcMsgs {
		p.msg(5, m)
	}
	for _, x := range table {
		p.bytes(6, []byte(x))
	}
	end := time.Unix(0, s.Time)
	p.int(9, start.UnixNano())
	p.int(10, int64(end.Sub(start)))
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	if _, err := w.Write(p.b); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return gz.Bytes(), nil
}

// pb appends protobuf fields.
type pb struct{ b []byte }

func (p *pb) varint(x uint64) {
	for x >= 0x80 {
		p.b = append(p.b, byte(x)|0x80)
		x >>= 7
	}
	p.b = append(p.b, byte(x))
}

func (p *pb) uint(field int, x uint64) {
	if x == 0 {
		return
	}
	p.varint(uint64(field) << 3)
	p.varint(x)
}

func (p *pb) int(field int, x int64) { p.uint(field, uint64(x)) }

func (p *pb) bytes(field int, b []byte) {
	p.varint(uint64(field)<<3 | 2)
	p.varint(uint64(len(b)))
	p.b = append(p.b, b...)
}

func (p *pb) msg(field int, b []byte) { p.bytes(field, b) }

func (p *pb) packed(field int, xs []uint64) {
	var q pb
	for _, x := range xs {
		q.varint(x)
	}
	p.bytes(field, q.b)
}

// resolveOutputs checks the files the flags name (flag name to file, "" for none)
// before cmd does any work: outfile.Resolve refuses a directory, a FIFO, a socket or
// a block device. Every option of sdtctl that writes a file goes through it (the test
// TestNoFileWriteBypassesOutfile sees that no other write is made).
func resolveOutputs(cmd string, files map[string]string) (map[string]*outfile.Target, error) {
	outs := map[string]*outfile.Target{}
	for _, flag := range slices.Sorted(maps.Keys(files)) {
		name := files[flag]
		if name == "" {
			continue
		}
		t, err := outfile.Resolve(name)
		if err != nil {
			return nil, fail(exitUsage, "%s: --%s: %v", cmd, flag, err)
		}
		outs[flag] = t
	}
	return outs, nil
}

// writeStacks writes the last snapshot of a stat by stack to the files asked for.
func writeStacks(last *ctlproto.Stat, start time.Time, pprofOut, foldedOut *outfile.Target, stdout, stderr io.Writer) error {
	if last == nil {
		return nil
	}
	write := func(flag string, t *outfile.Target, b []byte) error {
		warnings, err := t.Write(b, stdout)
		for _, w := range warnings {
			fmt.Fprintf(stderr, "sdtctl: stat: --%s: %s\n", flag, w)
		}
		if err != nil {
			return fail(exitError, "stat: --%s %s: %v", flag, t.Name, err)
		}
		return nil
	}
	if pprofOut != nil {
		b, err := pprofProfile(last, start)
		if err != nil {
			return fail(exitError, "stat: --pprof %s: %v", pprofOut.Name, err)
		}
		if err := write("pprof", pprofOut, b); err != nil {
			return err
		}
	}
	if foldedOut != nil {
		return write("folded", foldedOut, folded(last))
	}
	return nil
}
