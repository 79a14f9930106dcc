package sdt

import (
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/gosdt/gosdt/internal/spec"
	"github.com/gosdt/gosdt/sdt/internal/registry"
)

// Arg is what a probe argument can be: integers, bools, floats and strings.
type Arg interface {
	~int | ~int8 | ~int16 | ~int32 | ~int64 | ~uint | ~uint8 | ~uint16 |
		~uint32 | ~uint64 | ~uintptr | ~bool | ~float32 | ~float64 | ~string
}

// head starts every probe type: the registry's head, whose flag byte sites compare
// at offset 0 of a package-level variable, so the check is one instruction on a
// static address. A named field, so that none of the registry's is promoted into
// the probe types.
type head struct {
	h registry.Head
}

// define creates the descriptor behind a probe definition; Define0..Define6 call it.
// The definition belongs to the package that called Define.
func define(provider, name string, args []string, types []registry.ArgT) head {
	var module string
	if pc, _, _, ok := runtime.Caller(2); ok {
		if f := runtime.FuncForPC(pc); f != nil {
			module, _ = spec.SplitFunc(f.Name())
		}
	}
	return head{h: registry.DefineIn(provider, name, args, types, module, nil, "")}
}

// firing is a fire as consumers see it, built only when one is attached.
type firing = registry.Firing

// handlers is a copy-on-write list of typed handlers: fire reads it without a lock.
type handlers[F any] struct {
	mu   sync.Mutex
	list atomicList[F]
}

type atomicList[F any] struct{ p atomic.Pointer[[]*F] }

func (h *handlers[F]) add(f F) (detach func()) {
	e := &f
	h.mu.Lock()
	defer h.mu.Unlock()
	old := h.list.load()
	next := append(append(make([]*F, 0, len(old)+1), old...), e)
	h.list.p.Store(&next)
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		old := h.list.load()
		next := make([]*F, 0, len(old))
		for _, x := range old {
			if x != e {
				next = append(next, x)
			}
		}
		h.list.p.Store(&next)
	}
}

func (l *atomicList[F]) load() []*F {
	if p := l.p.Load(); p != nil {
		return *p
	}
	return nil
}

// argType is a probe argument's Go type, as List names it, its slot kind and size.
func argType[T any]() registry.ArgT {
	t := reflect.TypeFor[T]()
	return registry.ArgT{Name: t.String(), Kind: registry.KindOf(t), Size: uint8(t.Size())}
}
