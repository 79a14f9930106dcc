package registry

import (
	"fmt"
	"os"
	"time"

	"github.com/gosdt/gosdt/internal/hooks"
	"github.com/gosdt/gosdt/patch"
	"github.com/gosdt/gosdt/sled"
)

// prepareDelay is how long after init the kernel is asked to get ready for run-time
// switches (patch.Prepare).
const prepareDelay = 100 * time.Millisecond

// init finds every site and seals it. Package initialisation runs sdt before any
// package that imports it, so no site has run yet: this is the one moment at which a
// site may be rewritten beyond its first instruction (the compiler's CMP+Jcc becomes
// the canonical sled). From then on only the first instruction is ever toggled.
func init() {
	reg.mode = modeFromEnv()
	hooks.SetPatchOptions(optionsFromEnv())
	reg.layout = sled.Self()
	reg.table = sled.Discover()
	if reg.table.Warning != "" {
		warnf("%s", reg.table.Warning)
	}
	for i := range reg.table.Sites {
		s := &site{Site: &reg.table.Sites[i], state: stateSled}
		if !s.Sealable() {
			s.state = stateRefused
		}
		reg.sites = append(reg.sites, s)
		reg.unbound = append(reg.unbound, s)
	}
	reg.seal(os.Getenv("SDT_PATCH"))
	if o := startOwner(); o != nil {
		for _, s := range reg.sites {
			s.on.Store(true)
			s.everOn = true
			s.owners = []*owner{o} // as if the program (or sdtctl, follow.go) had enabled it
		}
	}
	for n, s := range reg.sites {
		s.index = n
	}
	reg.hitShards, reg.hitStride = newHitShards(len(reg.sites))
	reg.byReturn = newReturnTable(reg.sites)
	if reg.mode == modeSignal {
		startSignalToggle()
	}
	startUSDTWatch(reg.table.Probes)

	if os.Getenv("SDT_PATCH") != "off" && patch.Supported() {
		// Every switch after this init asks the kernel to serialize every core, which
		// first costs an RCU grace period to register for. Get it ready in the
		// background once the program has run a while: a short command never pays it
		// (a thread in that system call holds up the process's exit), a server has it
		// done before an operator switches anything, and an Enable that comes sooner
		// waits for it. Sealing at this init needs none of it (patch.Quiescent). The
		// delay counts from the end of this init, however long discovery took (an
		// emulator, a loaded machine), not from its start.
		time.AfterFunc(prepareDelay, patch.Prepare)
	}
}

// seal rewrites every patchable site into its canonical sled, in one batch; sites
// that cannot be sealed keep their branch check and say why. Sites of a sealed binary
// already hold their sled: with SDT_MODE=on they are switched on here, the same way.
func (r *registry) seal(patchEnv string) {
	// leave leaves every site that was to be sealed at start with its branch check.
	leave := func(st siteState) {
		for _, s := range r.sites {
			if s.state == stateSled && !s.Presealed {
				s.state = st
			}
		}
	}
	switch {
	case patchEnv == "off":
		leave(statePatchOff)
		var presealed int
		for _, s := range r.sites {
			if s.Presealed && s.Patchable() {
				presealed++
			}
		}
		if presealed > 0 {
			// Their compiler's check is gone from the file: only patching switches them.
			warnf("SDT_PATCH=off: %d sites were sealed in the binary file (sdtctl seal) and are still switched by patching", presealed)
		}
	case patchEnv != "" && patchEnv != "on":
		warnf("SDT_PATCH=%q: want on or off; patching stays on", patchEnv)
	}
	if !patch.Supported() {
		leave(stateUnsupported)
		return
	}
	var writes []patch.Write
	for _, s := range r.sites {
		if !s.Patchable() {
			continue
		}
		switch {
		case s.Presealed && startOwner() != nil:
			// The toggle alone: a tracer that attached to the binary before it started
			// may hold a uprobe in the sled's probe NOP (sled.FromTable).
			off, on := s.Switch()
			writes = append(writes, patch.Write{Addr: s.Addr + uintptr(s.ToggleAt), Old: off, New: on})
		case s.Presealed:
		default:
			sled := s.Off
			if startOwner() != nil {
				sled = s.On
			}
			writes = append(writes, patch.Write{Addr: s.Addr, Old: s.Orig, New: sled})
			// The site's other rewrites (arm64's flag load, turned into NOPs) are made
			// once, now, in the same batch: they are never toggled.
			for _, a := range s.Also {
				writes = append(writes, patch.Write{Addr: a.Addr, Old: a.Orig, New: a.New})
			}
		}
	}
	if len(writes) == 0 {
		return
	}
	// No thread can be running a site: every package that holds one imports sdt and
	// is initialised after it, and code that was initialised before cannot reach such
	// a package's functions. So the sites are written as they are, without stopping
	// the world (which would only cost two stop-the-worlds at every start), and every
	// core is serialized after.
	rep, err := patch.Apply(writes, patch.Options{Protocol: patch.Quiescent, NoProcMem: hooks.PatchOptions().NoProcMem})
	if err == nil && rep.ProcMem {
		for _, s := range r.sites {
			if s.Patchable() {
				s.procMem = true
			}
		}
	}
	if err != nil {
		// Nothing was written. Where a W^X policy refused (patch.ErrTextNotWritable),
		// the error names it; the sites keep their branch check and switch by flag.
		for _, s := range r.sites {
			if s.Patchable() {
				s.state, s.cause = stateSealFailed, err
			}
		}
	}
}

// procMemNote is the note of sites written through /proc/self/mem.
const procMemNote = "text written through /proc/self/mem: mprotect refused to make it writable (W^X policy); toggles go through the rendezvous"

// Not inlined: every caller would carry its own copy of the call to fmt, and no
// caller is on a hot path.
//
//go:noinline
func warnf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "sdt: "+format+"\n", args...)
}
