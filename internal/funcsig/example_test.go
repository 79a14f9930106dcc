package funcsig_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"

	"github.com/gosdt/gosdt/internal/funcsig"
)

// Read the signature of a method of a program built for linux/amd64: the registers its
// receiver, parameter and results come in, and the spill block its code must have.
func Example() {
	dir, err := os.MkdirTemp("", "funcsig")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	exe := filepath.Join(dir, "app")
	build := exec.Command(filepath.Join(runtime.GOROOT(), "bin", "go"), "build", "-o", exe, ".")
	build.Dir = "testdata/app"
	build.Env = append(os.Environ(), "GOOS=linux", "GOARCH=amd64", "CGO_ENABLED=0", "GOFLAGS=", "GOWORK=off", "GOTOOLCHAIN=local")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Println(err, string(out))
		return
	}

	f, err := funcsig.Open(exe)
	if err != nil {
		fmt.Println(err) // funcsig.ErrNoDWARF: fall back to words arg0..
		return
	}
	defer f.Close()
	sig, err := f.Func("example.com/app/store.(*DB).Get")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(sig)
	for _, v := range sig.Results {
		fmt.Println(v.Name, v.Kind, len(v.Words), "words")
	}
	fmt.Println(sig.Spills())
	// Output:
	// example.com/app/store.(*DB).Get(d *example.com/app/store.DB [AX], key string [BX CX]) (r0 []uint8 [AX BX CX], r1 error [DI SI])
	// r0 slice 3 words
	// r1 error 2 words
	// [{0 8 0} {1 8 8} {2 8 16}]
}
