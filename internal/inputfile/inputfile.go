package inputfile

import (
	"fmt"
	"io/fs"
	"os"
)

// Check returns an error when name is neither a regular file nor a
// directory (following symbolic links), or cannot be examined.
func Check(name string) error {
	info, err := os.Stat(name)
	if err != nil {
		return err
	}
	return checkMode(name, info.Mode())
}

// CheckEntry is Check for an entry of a directory listing: it examines the
// entry itself only when the listing's type is not already a regular file
// or a directory (a symbolic link, a FIFO).
func CheckEntry(name string, d fs.DirEntry) error {
	if d.Type().IsRegular() || d.IsDir() {
		return nil
	}
	return Check(name)
}

// ReadFile reads a file after Check.
func ReadFile(name string) ([]byte, error) {
	if err := Check(name); err != nil {
		return nil, err
	}
	return os.ReadFile(name)
}

// NotRegularError is the error of a file that is not regular.
type NotRegularError struct {
	Name string
	Mode fs.FileMode
}

func (e *NotRegularError) Error() string {
	return fmt.Sprintf("%s is a %s, not a regular file: a file found in a directory or named by a test file must be a regular file (reading this one could block forever)", e.Name, describe(e.Mode))
}

func checkMode(name string, m fs.FileMode) error {
	if m.IsRegular() || m.IsDir() {
		return nil
	}
	return &NotRegularError{Name: name, Mode: m}
}

// describe names the type of a file that is not regular.
func describe(m fs.FileMode) string {
	switch {
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0:
		return "character device"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return "special file"
}
