package seal

import (
	"fmt"
	"io/fs"
	"os"
)

// Where a sealed binary goes is package outfile's: only a regular file is ever
// replaced (through a temporary file beside it, renamed over it), symbolic links are
// followed, a character device or an open descriptor is a stream, anything else is
// refused before sealing. What seal adds: the sealed file has the source binary's
// mode, and its owner only when it replaces the source (a copy elsewhere belongs to
// whoever seals, as a cp does).

// inputFile checks that in names a regular file (symbolic links followed) and returns
// its information.
func inputFile(in string) (fs.FileInfo, error) {
	fi, err := os.Stat(in)
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is not a regular file (%v): seal reads a binary file", in, fi.Mode().Type())
	}
	return fi, nil
}
