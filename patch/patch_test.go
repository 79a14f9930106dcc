package patch

import (
	"errors"
	"strings"
	"testing"
)

func TestProtocolString(t *testing.T) {
	for _, p := range []Protocol{Auto, Atomic, Rendezvous} {
		q, err := ParseProtocol(p.String())
		if err != nil || q != p {
			t.Errorf("ParseProtocol(%q) = %v, %v; want %v", p.String(), q, err, p)
		}
	}
	if _, err := ParseProtocol("fast"); err == nil {
		t.Error("ParseProtocol(fast): no error")
	}
}

func TestValidate(t *testing.T) {
	b := func(n int) []byte { return make([]byte, n) }
	bad := map[string][]Write{
		"empty":    {{Addr: 0x1000}},
		"lengths":  {{Addr: 0x1000, Old: b(2), New: b(3)}},
		"overlap":  {{Addr: 0x1000, Old: b(4), New: b(4)}, {Addr: 0x1003, Old: b(2), New: b(2)}},
		"same":     {{Addr: 0x1000, Old: b(1), New: b(1)}, {Addr: 0x1000, Old: b(1), New: b(1)}},
		"wraps":    {{Addr: ^uintptr(0), Old: b(2), New: b(2)}},
		"unsorted": {{Addr: 0x2000, Old: b(2), New: b(2)}, {Addr: 0x1fff, Old: b(2), New: b(2)}},
	}
	for name, ws := range bad {
		if err := validate(ws); !errors.Is(err, ErrOverlap) {
			t.Errorf("%s: validate = %v, want ErrOverlap", name, err)
		}
	}
	ok := []Write{{Addr: 0x1002, Old: b(2), New: b(2)}, {Addr: 0x1000, Old: b(2), New: b(2)}}
	if err := validate(ok); err != nil {
		t.Errorf("adjacent writes: %v", err)
	}
}

func TestSiteMismatchErrorHex(t *testing.T) {
	e := &SiteMismatchError{Addr: 0x401000, Want: []byte{0xeb, 0x0a}, Got: []byte{0x66, 0x90}}
	for _, s := range []string{"0x401000", "eb 0a", "66 90"} {
		if !strings.Contains(e.Error(), s) {
			t.Errorf("%q does not mention %q", e.Error(), s)
		}
	}
}

func TestUnsupported(t *testing.T) {
	if Supported() {
		t.Skip("patching is supported here")
	}
	if _, err := Apply([]Write{{Addr: 1, Old: []byte{0}, New: []byte{1}}}, Options{}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Apply = %v, want ErrNotSupported", err)
	}
}
