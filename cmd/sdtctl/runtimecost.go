package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/gosdt/gosdt/internal/ctlproto"
	"github.com/gosdt/gosdt/internal/funcsig"
	"github.com/gosdt/gosdt/sled"
)

// manyFuncs is how many functions a spec may place run-time probes on before sdtctl
// asks for --many: each is written in the running program's text in one
// stop-the-world, and each call of them then pays for a probe.
const manyFuncs = 16

// manyFlag adds --many to a command that places probes.
func (o *opts) manyFlag() *bool {
	return o.fs.Bool("many", false, fmt.Sprintf("place run-time function probes on more than %d functions at once", manyFuncs))
}

// checkRuntimeCost says what a spec's run-time function probes would cost in cl's
// process before any is placed, and refuses more than manyFuncs functions without
// --many. It reads the signatures of those functions from the process's executable,
// for cl's requests to carry.
func checkRuntimeCost(cl *client, specText string, many bool) error {
	if !strings.HasPrefix(specText, "fbt:") {
		return nil
	}
	r, err := cl.call(&ctlproto.Request{Op: ctlproto.OpList, Spec: specText})
	if err != nil {
		return nil // the request itself will say what is wrong
	}
	names, points := runtimeFuncs(r.Probes)
	if len(names) <= manyFuncs || many {
		cl.addSigs(readSigs(cl.pid, names))
		return nil
	}
	return fail(exitUsage, "pid %d: %q places run-time probes on %d functions (%d points of their code, written in one stop-the-world of the process; every call of them then pays for its probe): pass --many to go on, or name fewer (sdtctl list -p %d %q shows them)",
		cl.pid, specText, len(names), points, cl.pid, specText)
}

// runtimeFuncs is the functions (as the runtime names them) whose run-time probes ps
// lists that may take one, and how many points of their code are not patched yet.
func runtimeFuncs(ps []ctlproto.Probe) (names []string, points int) {
	seen := map[string]bool{}
	for _, p := range ps {
		if p.Kind != "runtime" {
			continue
		}
		for _, s := range p.Sites {
			if s.State == "refused" {
				continue
			}
			parts := strings.SplitN(p.Name, ":", 4)
			if len(parts) == 4 && !seen[parts[1]+":"+parts[2]] {
				seen[parts[1]+":"+parts[2]] = true
				names = append(names, sled.JoinFunc(parts[1], parts[2]))
			}
			if s.State == "unpatched" {
				points++
			}
		}
	}
	return names, points
}

// nameRuntimeArgs reads the signatures of the run-time probes ps lists (as many as one
// request carries) for cl's next requests, and reports whether it found any.
func nameRuntimeArgs(cl *client, ps []ctlproto.Probe) bool {
	names, _ := runtimeFuncs(ps)
	if len(names) == 0 || len(names) > ctlproto.MaxSigs {
		return false // a list of every function stays words: reading thousands would cost more than the list
	}
	cl.addSigs(readSigs(cl.pid, names))
	return len(cl.sigs) > 0
}

// readSigs reads the signatures of the functions names from pid's executable's DWARF;
// none where it has none (the probes then carry their words, arg0...).
func readSigs(pid int, names []string) []ctlproto.FuncSig {
	if len(names) == 0 {
		return nil
	}
	f, err := funcsig.Open(fmt.Sprintf("/proc/%d/exe", pid))
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []ctlproto.FuncSig
	for _, name := range names {
		fn, err := f.Func(name)
		if err != nil || len(out) == ctlproto.MaxSigs {
			continue
		}
		s := ctlproto.FuncSig{Func: name}
		for _, sp := range fn.Spills() {
			s.Spills = append(s.Spills, ctlproto.Spill{Reg: sp.Reg, Size: sp.Size, Off: sp.Off})
		}
		s.Params = sigValues(fn.Params)
		s.Results = sigValues(fn.Results)
		out = append(out, s)
	}
	return out
}

func sigValues(vs []funcsig.Value) []ctlproto.SigValue {
	var out []ctlproto.SigValue
	for _, v := range vs {
		if strings.HasPrefix(v.Name, ".") || len(out) == ctlproto.MaxValues {
			continue // a generic's dictionary: the code's, not the caller's
		}
		sv := ctlproto.SigValue{Name: v.Name, Type: funcsig.ShortType(v.Type), Kind: string(v.Kind)}
		for _, w := range v.Words {
			sv.Words = append(sv.Words, ctlproto.SigWord{Float: w.Float, Reg: uint8(w.Reg), Size: w.Size})
		}
		out = append(out, sv)
	}
	return out
}

// addSigs adds sigs to what cl's requests carry, each function once and no more than a
// request takes (the process reads the others' arguments as words).
func (cl *client) addSigs(sigs []ctlproto.FuncSig) {
	for _, s := range sigs {
		if len(cl.sigs) == ctlproto.MaxSigs {
			return
		}
		if !slices.ContainsFunc(cl.sigs, func(x ctlproto.FuncSig) bool { return x.Func == s.Func }) {
			cl.sigs = append(cl.sigs, s)
		}
	}
}
