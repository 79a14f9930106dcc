//go:build !unix

package outfile

import "io/fs"

// owner is not known outside unix: no owner is kept, and no setuid or setgid bit
// depends on it.
func owner(fs.FileInfo) (uid, gid int, ok bool) { return 0, 0, false }

func links(fs.FileInfo) int { return 1 }
