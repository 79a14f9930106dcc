package ctlproto

import (
	"encoding/binary"
	"io"
)

// A raw trace (sdtctl trace --raw) is what a live trace read, as the process's
// buffers held it, for sdtctl decode to print later: no record is decoded while
// tracing. It is RawMagic, then chunks, each
//
//	u32  kind     RawFrame or RawRecords
//	u32  pid      the traced process
//	u64  n        bytes that follow, then zeros to a multiple of 8
//
// A RawFrame chunk holds one frame (AppendFrame's): a Response of kind started (the
// clock), events (descriptions, a later clock) or end (what was delivered and
// dropped). A RawRecords chunk holds records laid out as in a ring: records,
// fillers (PadRecord) and drop counts (LostRecord). A record is described by the
// last description of its probe and site before it; all little-endian but frames'.
const (
	RawMagic   = "gosdtrw1"
	RawFrame   = 1
	RawRecords = 2
	rawHead    = 16
	// RawMaxChunk bounds one chunk.
	RawMaxChunk = 64 << 20
)

// AppendRawHead appends the head of a chunk of n bytes.
func AppendRawHead(b []byte, kind, pid uint32, n int) []byte {
	b = binary.LittleEndian.AppendUint32(b, kind)
	b = binary.LittleEndian.AppendUint32(b, pid)
	return binary.LittleEndian.AppendUint64(b, uint64(n))
}

// RawPad is the zeros that follow a chunk of n bytes.
func RawPad(n int) []byte { return make([]byte, -n&7) }

// ReadRawChunk reads one chunk into buf (grown as needed); io.EOF at the end.
func ReadRawChunk(r io.Reader, buf []byte) (kind, pid uint32, payload []byte, err error) {
	var h [rawHead]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			err = Errorf(CodeBadRequest, "raw trace: truncated chunk head")
		}
		return 0, 0, nil, err
	}
	le := binary.LittleEndian
	kind, pid, n := le.Uint32(h[:]), le.Uint32(h[4:]), le.Uint64(h[8:])
	if kind != RawFrame && kind != RawRecords || n > RawMaxChunk {
		return 0, 0, nil, Errorf(CodeBadRequest, "raw trace: bad chunk (kind %d, %d bytes)", kind, n)
	}
	size := int(n+7) &^ 7
	if cap(buf) < size {
		buf = make([]byte, size)
	}
	buf = buf[:size]
	if _, err := io.ReadFull(r, buf); err != nil {
		return 0, 0, nil, Errorf(CodeBadRequest, "raw trace: truncated chunk of %d bytes", n)
	}
	return kind, pid, buf[:n], nil
}

// RawRecordsEach calls f with each record of a RawRecords chunk, until f returns
// false; marked is the drops its drop counts say.
func RawRecordsEach(b []byte, f func(rec Record) bool) (marked uint64, err error) {
	le := binary.LittleEndian
	for len(b) > 0 {
		if len(b) < 8 {
			return marked, Errorf(CodeBadRequest, "raw trace: %d bytes left in a chunk", len(b))
		}
		w := le.Uint64(b)
		n := w & 0xffff
		if n < 8 || n&7 != 0 || n > uint64(len(b)) {
			return marked, Errorf(CodeBadRequest, "raw trace: bad record of %d bytes", n)
		}
		switch w >> 16 & 0xff {
		case PadRecord:
		case LostRecord:
			if n != 16 {
				return marked, Errorf(CodeBadRequest, "raw trace: bad drop count")
			}
			marked += le.Uint64(b[8:])
		default:
			rec, _, err := Split(b[:n])
			if err != nil {
				return marked, err
			}
			if !f(rec) {
				return marked, nil
			}
		}
		b = b[n:]
	}
	return marked, nil
}

// Bytes is the ring's bytes from from to to (byte counts, to - from at most its
// size): one slice, or two where they wrap.
func (r *Ring) Bytes(from, to uint64) (a, b []byte) {
	if to <= from || to-from > r.size {
		return nil, nil
	}
	s, e := from&(r.size-1), to&(r.size-1)
	if e == 0 {
		e = r.size
	}
	if s < e {
		return r.ring[s:e], nil
	}
	return r.ring[s:], r.ring[:e]
}
