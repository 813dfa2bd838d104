// Package pty opens Linux pseudo-terminals for tests and benchmarks that run
// a program the way a user's terminal does (the CLI's interactive mode,
// Neovim's TUI). It knows nothing of what runs in them.
package pty

import (
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// Open returns a new pseudo-terminal pair of rows x cols: the master end
// the caller reads and writes, and the slave end to give the program as its
// stdin, stdout and stderr. The caller closes both.
func Open(rows, cols uint16) (master, slave *os.File, err error) {
	master, err = os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, nil, err
	}
	ioctl := func(f *os.File, req uintptr, arg unsafe.Pointer) error {
		if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, f.Fd(), req, uintptr(arg)); e != 0 {
			return e
		}
		return nil
	}
	var unlock int32
	var n uint32
	if err := ioctl(master, syscall.TIOCSPTLCK, unsafe.Pointer(&unlock)); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("unlock pty: %w", err)
	}
	if err := ioctl(master, syscall.TIOCGPTN, unsafe.Pointer(&n)); err != nil {
		master.Close()
		return nil, nil, fmt.Errorf("pty number: %w", err)
	}
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		master.Close()
		return nil, nil, err
	}
	ws := struct{ rows, cols, x, y uint16 }{rows, cols, 0, 0}
	if err := ioctl(slave, syscall.TIOCSWINSZ, unsafe.Pointer(&ws)); err != nil {
		master.Close()
		slave.Close()
		return nil, nil, fmt.Errorf("window size: %w", err)
	}
	return master, slave, nil
}
